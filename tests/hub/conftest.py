"""Fixtures for the fleet hub's tests: the hub simulator with the Site CRD and a namespace, the admin's client, a
running controller (kopf in a thread, against the hub over HTTPS), and helpers to make Sites and wait on them."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from snoreloc_fleet import credentials, install, site
from snoreloc_fleet.controller import operator, reconcile

from hubsim.test_hub_kubectl import kubectl  # noqa: F401 (the fixture: Debian's kubectl with a private HOME)
from snoreloc.adapters import clock, kube
from snoreloc_sim.hub.simulator import HubSimulator

NS = "fleet"
PULL_SECRET = {"auths": {"registry.example.net:5000": {"auth": base64.b64encode(b"fleet-user:s3cr3t-pw").decode()}}}
SITES = reconcile.SITES


def site_config(name: str, **extra: Any) -> dict[str, Any]:
    """A valid site-config spec whose pull secret comes from a Secret (spec.files)."""
    return {"domain": f"sno.{name}.example.com", "pullSecret": {"file": "pull-secret.json", "mode": "merge"}, **extra}


def site_object(name: str, config: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    files = {"pull-secret.json": {"secretKeyRef": {"name": "pull-secret", "key": ".dockerconfigjson"}}}
    return {
        "apiVersion": site.API_VERSION,
        "kind": site.KIND,
        "metadata": {"name": name, "namespace": NS},
        "spec": {"siteConfig": config if config is not None else site_config(name), "files": files, **spec},
    }


def wait_for(what: str, check: Callable[[], Any], timeout: float = 30.0, interval: float = 0.1) -> Any:
    """Poll `check` until it returns something true, at most `timeout` seconds; fail naming `what`."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last seen: {last!r}")


@pytest.fixture
def sim_options() -> dict[str, Any]:
    """The OpenShift simulator at 120x rather than 600x: here it shares the process with the hub, kopf and the
    controller, and its whole-run deadline (an hour of simulated time) must not be 6 seconds of a loaded machine."""
    return {"speed": 120.0}


@pytest.fixture
def hub(hub_sim: HubSimulator) -> HubSimulator:
    """The hub with the Site CRD (from deploy/crd.yaml, as `fleet install` applies it), namespace `fleet` and the
    pull secret every test Site names."""
    client = kube.Client.from_kubeconfig(str(hub_sim.kubeconfig_path), clock=clock.SystemClock())
    try:
        crd = next(obj for obj in install.manifests() if obj["kind"] == "CustomResourceDefinition")
        client.create(install.KINDS[(crd["apiVersion"], crd["kind"])], crd)
        client.create(install.KINDS[("v1", "Namespace")], {"metadata": {"name": NS}})
        secret = {
            "metadata": {"name": "pull-secret", "namespace": NS},
            "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": base64.b64encode(json.dumps(PULL_SECRET).encode()).decode()},
        }
        client.create(kube.SECRETS, secret)
    finally:
        client.close()
    return hub_sim


@pytest.fixture
def admin(hub: HubSimulator) -> Iterator[kube.Client]:
    client = kube.Client.from_kubeconfig(str(hub.kubeconfig_path), clock=clock.SystemClock())
    yield client
    client.close()


def options_for(hub: HubSimulator, **extra: Any) -> operator.Options:
    config = reconcile.Config(credentials.Hub(hub.api_url, hub.ca_pem), stale_after=extra.pop("stale_after", 900.0))
    kubeconfig = extra.pop("kubeconfig", str(hub.kubeconfig_path))
    return operator.Options(config=config, kubeconfig=kubeconfig, sweep=extra.pop("sweep", 1.0), **extra)


class Running:
    """A controller running in a thread until `stop()`."""

    def __init__(self, options: operator.Options) -> None:
        self.controller = operator.Controller(options)
        self._stop, self._ready = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self.controller.run, args=(self._stop, self._ready), daemon=True)
        self._thread.start()
        assert self._ready.wait(30), "the controller did not start"

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), "the controller did not stop"


@pytest.fixture
def start_controller(hub: HubSimulator) -> Iterator[Callable[..., Running]]:
    """Start controllers against the hub (each stopped at the end of the test)."""
    started: list[Running] = []

    def start(**extra: Any) -> Running:
        running = Running(options_for(hub, **extra))
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()


@pytest.fixture
def controller(start_controller: Callable[..., Running]) -> operator.Controller:
    return start_controller().controller


def get_site(client: kube.Client, name: str) -> dict[str, Any]:
    return client.get(kube.Ref(SITES, name, NS))


def phase_of(client: kube.Client, name: str) -> str:
    return str((get_site(client, name).get("status") or {}).get("phase", ""))


def wait_phase(client: kube.Client, name: str, phase: site.Phase, timeout: float = 30.0) -> dict[str, Any]:
    wait_for(f"site {name} phase {phase.value}", lambda: phase_of(client, name) == phase.value, timeout)
    return get_site(client, name)


def ready_site(client: kube.Client, name: str, **spec: Any) -> dict[str, Any]:
    """Create a valid Site and wait until the controller has made it Ready; the Site as it is then."""
    client.create(SITES, site_object(name, **spec))
    return wait_phase(client, name, site.Phase.READY)


def report_kubeconfig(client: kube.Client, name: str) -> bytes:
    secret = client.get(kube.Ref(kube.SECRETS, credentials.report_secret_name(name), NS))
    return base64.b64decode(secret["data"][credentials.KUBECONFIG_KEY])


def site_client(hub: HubSimulator, kubeconfig: bytes, path: str) -> kube.Client:
    """A client with the site's own reporting kubeconfig, written to `path` (0600)."""
    file = hub.workdir / path
    file.write_bytes(kubeconfig)
    file.chmod(0o600)
    policy = kube.Policy(attempts=1, total=5.0)
    return kube.Client.from_kubeconfig(str(file), clock=clock.SystemClock(), policy=policy)

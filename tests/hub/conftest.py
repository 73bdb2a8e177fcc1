"""Fixtures for the fleet hub's tests: the hub simulator with the Site CRD and a namespace, the admin's client, a
running controller (kopf in a thread, against the hub over HTTPS), helpers to make Sites and wait on them, and the
demo node relocating for one of them (the pieces the fleet demo shares are in `snoreloc_sim.demo.hubsite`)."""

from __future__ import annotations

import base64
import contextlib
import json
import pathlib
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
import yaml
from snoreloc_fleet.controller import operator, reconcile, startup
from snoreloc_fleet.hub import credentials
from snoreloc_fleet.resource import keyorder, site
from snoreloc_fleet.verbs import install
from snoreloc_fleet.verbs import make_media as makemedia

from hubsim.test_hub_kubectl import kubectl  # noqa: F401 (the fixture: Debian's kubectl with a private HOME)
from snoreloc.adapters import clock, fs, kube
from snoreloc.cli import main
from snoreloc.engine import node
from snoreloc.siteconfig import medium
from snoreloc_sim import pytest_plugin
from snoreloc_sim.demo import flow as demo
from snoreloc_sim.demo import hubsite
from snoreloc_sim.hub.simulator import HubSimulator
from snoreloc_sim.openshift import simulator

NS = "fleet"
PULL_SECRET = {"auths": {"registry.example.net:5000": {"auth": base64.b64encode(b"fleet-user:s3cr3t-pw").decode()}}}
SITES = reconcile.SITES


def site_config(name: str, **extra: Any) -> dict[str, Any]:
    """A valid site-config spec whose pull secret comes from a Secret (spec.files)."""
    return {"domain": f"sno.{name}.example.com", "pullSecret": {"file": "pull-secret.json", "mode": "merge"}, **extra}


def site_object(name: str, config: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """A Site as `fleet render` writes it: its site-config's key order in the annotation (`keyorder`)."""
    files = {"pull-secret.json": {"secretKeyRef": {"name": "pull-secret", "key": ".dockerconfigjson"}}}
    site_config_spec = config if config is not None else site_config(name)
    return {
        "apiVersion": site.API_VERSION,
        "kind": site.KIND,
        "metadata": {
            "name": name,
            "namespace": NS,
            "annotations": {keyorder.ANNOTATION: keyorder.annotation(site_config_spec)},
        },
        "spec": {"siteConfig": site_config_spec, "files": files, **spec},
    }


SECRET_FILES = frozenset({"pull-secret.json"})  # of the demo's files, the ones kept in a Secret


def _key(file: str) -> str:
    return file.replace("/", "_")  # a Secret's or ConfigMap's key holds no slash


def keep_files(admin: kube.Client, namespace: str, holder: str, files: Mapping[str, bytes]) -> dict[str, Any]:
    """Store a Site's files in Secret `<holder>-secrets` and ConfigMap `<holder>-files`; the Site's `spec.files`."""
    secret = {_key(k): base64.b64encode(v).decode() for k, v in files.items() if k in SECRET_FILES}
    plain = {_key(k): v.decode() for k, v in files.items() if k not in SECRET_FILES}
    admin.create(kube.SECRETS, {"metadata": {"name": f"{holder}-secrets", "namespace": namespace}, "data": secret})
    admin.create(kube.CONFIGMAPS, {"metadata": {"name": f"{holder}-files", "namespace": namespace}, "data": plain})
    refs = {}
    for file in files:
        kind, suffix = ("secretKeyRef", "secrets") if file in SECRET_FILES else ("configMapKeyRef", "files")
        refs[file] = {kind: {"name": f"{holder}-{suffix}", "key": _key(file)}}
    return refs


def apply_site(
    admin: kube.Client, namespace: str, name: str, *, config: Mapping[str, Any], refs: Mapping[str, Any]
) -> None:
    """Create Site `name` with site-config spec `config` and file references `refs` (from `keep_files`), its key
    order recorded as `fleet render` records it."""
    meta = {"name": name, "namespace": namespace, "annotations": {keyorder.ANNOTATION: keyorder.annotation(config)}}
    obj = {
        "apiVersion": site.API_VERSION, "kind": site.KIND, "metadata": meta,
        "spec": {"siteConfig": dict(config), "files": dict(refs)},
    }  # fmt: skip
    admin.create(SITES, obj)


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


def prepare(hub: HubSimulator | pytest_plugin.RealHub) -> None:
    """Install the Site CRD (from deploy/crd.yaml, as `fleet install` applies it) unless a real hub has it already,
    namespace `fleet` and the pull secret every test Site names."""
    client = kube.Client.from_kubeconfig(str(hub.kubeconfig_path), clock=clock.SystemClock())
    try:
        if isinstance(hub, HubSimulator):
            hubsite.prepare_hub(client, NS)
        else:
            _prepare_real(client)
        secret = {
            "metadata": {"name": "pull-secret", "namespace": NS},
            "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": base64.b64encode(json.dumps(PULL_SECRET).encode()).decode()},
        }
        client.create(kube.SECRETS, secret)
    finally:
        client.close()


NAMESPACES = kube.Resource("", "v1", "namespaces", "Namespace", False)
REAL_HUB_WAIT = 180.0  # seconds: a real namespace controller emptying `fleet` after a test


def _prepare_real(client: kube.Client) -> None:
    """On a real hub: the CRDs (Site and Wave, kept between tests) served, and namespace `fleet` fresh (one left by
    an aborted run is deleted first)."""
    for crd in (obj for obj in install.manifests() if obj["kind"] == "CustomResourceDefinition"):
        crds = install.KINDS[(crd["apiVersion"], crd["kind"])]
        if client.find(kube.Ref(crds, crd["metadata"]["name"])) is None:
            client.create(crds, crd)
    wait_for("the Site CRD served", lambda: startup.served(client) is None, REAL_HUB_WAIT, 0.5)
    _delete_namespace(client)
    client.create(NAMESPACES, {"metadata": {"name": NS}})


def _delete_namespace(client: kube.Client) -> None:
    ref = kube.Ref(NAMESPACES, NS)
    if client.find(ref) is not None:
        _let_go_of_sites(client)
        with contextlib.suppress(kube.NotFound):
            client.delete(ref)
        wait_for(f"namespace {NS} gone", lambda: client.find(ref) is None, REAL_HUB_WAIT, 0.5)


def _let_go_of_sites(client: kube.Client) -> None:
    """What an owner does for Sites whose controller is gone (docs/fleet.md, "The finalizer"): a test's BMC Site
    still holds the BMC cycle's finalizer once its controller stopped, and would hold namespace `fleet` Terminating
    on a real hub; its BMC (the test's emulator) is gone too."""
    for obj in client.list(SITES, NS):
        if obj["metadata"].get("finalizers"):
            body = {"metadata": {"finalizers": None, "resourceVersion": obj["metadata"]["resourceVersion"]}}
            with contextlib.suppress(kube.NotFound, kube.Conflict):
                client.patch(kube.Ref(SITES, obj["metadata"]["name"], NS), body)


CRDS = kube.Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)


def remove_namespace(hub: HubSimulator | pytest_plugin.RealHub, client: kube.Client) -> None:
    """On a real hub, delete namespace `fleet` and wait until it is gone (the next test makes it afresh)."""
    if not isinstance(hub, HubSimulator):
        _delete_namespace(client)


@pytest.fixture
def hub(hub_target: HubSimulator | pytest_plugin.RealHub) -> Iterator[HubSimulator]:
    """The hub (`hub_target`: the simulator, or a real hub) with the Site CRD, namespace `fleet` and the pull secret
    every test Site names (`prepare`); on a real hub the namespace is deleted afterwards."""
    prepare(hub_target)
    yield hub_target  # type: ignore[misc]  # a RealHub has the part of the simulator's face these tests use
    client = kube.Client.from_kubeconfig(str(hub_target.kubeconfig_path), clock=clock.SystemClock())
    try:
        remove_namespace(hub_target, client)
    finally:
        client.close()


@pytest.fixture
def admin(hub: HubSimulator) -> Iterator[kube.Client]:
    client = kube.Client.from_kubeconfig(str(hub.kubeconfig_path), clock=clock.SystemClock())
    yield client
    client.close()


def options_for(hub: HubSimulator, **extra: Any) -> operator.Options:
    config = reconcile.Config(credentials.Hub(hub.api_url, hub.ca_pem), stale_after=extra.pop("stale_after", 900.0))
    kubeconfig = extra.pop("kubeconfig", str(hub.kubeconfig_path))
    return operator.Options(config=config, kubeconfig=kubeconfig, sweep=extra.pop("sweep", 1.0), **extra)


Running = operator.Background  # a controller in a thread until `stop()`


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


def stick_site(client: kube.Client, name: str, **spec: Any) -> dict[str, Any]:
    """A Ready Site whose stick was asked for as `fleet make-media` asks (its media-requested annotation), once the
    controller has issued its reporting credential; the Site as it is then."""
    ready_site(client, name, **spec)
    return makemedia.with_credential(client, NS, name, timeout=30.0)


def request_credential(client: kube.Client, name: str) -> dict[str, Any]:
    """Site `name` (already Ready) once its reporting credential is issued, asked for as `fleet make-media` asks."""
    return makemedia.with_credential(client, NS, name, timeout=30.0)


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


REVOCATION_BOUND = credentials.TOKEN_CACHE_SECONDS + 5.0  # the API server's token cache, and a loaded machine
RBAC_GRACE = 1.0  # seconds for a real API server's RBAC informers to see the RoleBinding go


def refused_after_revocation(client: kube.Client, method: str, path: str, **options: Any) -> float:
    """Send `method path` with a revoked token until it is refused as unauthenticated (401), at most
    `REVOCATION_BOUND` seconds: a real kube-apiserver keeps authenticating it until its token cache lets go (10 s),
    though without its RoleBinding it is refused as forbidden (403) meanwhile, from at most `RBAC_GRACE` after the
    revocation. The seconds it took."""
    began = time.monotonic()
    while True:
        try:
            client.request(method, path, retry=False, **options)
        except kube.Forbidden as refused:
            if f"{path}: 401 " in str(refused):
                return time.monotonic() - began
            assert f"{path}: 403 " in str(refused), refused
        else:
            assert time.monotonic() - began < RBAC_GRACE, "a revoked token was still granted its request"
        assert time.monotonic() - began < REVOCATION_BOUND, f"still authenticated after {REVOCATION_BOUND}s"
        time.sleep(0.2)


def demo_site(scratch: pathlib.Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The demo's site-config spec and its files, as the demo writes them for a node."""
    path = demo.write_site(fs.HostFS(scratch))
    config = yaml.safe_load(path.read_text())
    tree = medium.contents(path)
    tree.pop(medium.SITE_CONFIG_NAME)
    return config["spec"], tree


def make_stick(hub: HubSimulator, name: str, out: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["fleet", "make-media", name, "-n", NS, "--kubeconfig", str(hub.kubeconfig_path), "--out-dir", str(out)]
    assert main.main(argv) == 0
    assert medium.HUB_FILE in capsys.readouterr().err


def two_sites_and_a_stick(
    hub: HubSimulator, admin: kube.Client, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> fs.HostFS:
    """The demo's site as Site store-042 and a copy with another domain as store-043, both Ready with their
    reporting credentials; store-042's stick made from the hub into the node's /etc/snoreloc. The node's host root."""
    spec, files = demo_site(tmp_path / "demo")
    for name, domain in (("store-042", spec["domain"]), ("store-043", "store043.edge.example.net")):
        refs = keep_files(admin, NS, name, files)
        apply_site(admin, NS, name, config={**spec, "domain": domain}, refs=refs)
    for name in ("store-042", "store-043"):
        wait_phase(admin, name, site.Phase.READY)
    request_credential(admin, "store-043")  # store-042's comes with its stick
    root = fs.HostFS(tmp_path / "root")
    make_stick(hub, "store-042", root.path("/etc/snoreloc"), capsys)
    return root


def relocate_node(root: fs.HostFS, sim: simulator.Simulator) -> node.NodeRequest:
    request, result = demo.relocate(root, sim)
    assert result.state.value in ("done", "done-with-warnings")
    return request


def status_json(root: fs.HostFS, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    main.main(["status", "--output", "json", "--root", str(root.path("/"))])
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document

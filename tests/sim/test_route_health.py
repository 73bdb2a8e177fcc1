"""The authentication and console operators' route checks in the simulator (controllers/route_health): a route
host the cluster cannot resolve makes the operator Available=False at once and Degraded=True two minutes later,
with the condition reasons and messages of the real operators; records added to the site's DNS bring them back.
The node's own dnsmasq answers from the overrides file the SNO MachineConfig's script reads."""

from __future__ import annotations

import datetime
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from snoreloc_sim.openshift import dns, simulator

CONFIG = ("config.openshift.io", "v1")
SPEED = 600.0
NEW = "store7.edge.example.org"


@pytest.fixture
def sim_options() -> dict[str, Any]:
    return {"speed": SPEED, "site_dns": dns.SiteDns({})}


def _conditions(custom: client.CustomObjectsApi, name: str) -> dict[str, dict[str, Any]]:
    co = custom.get_cluster_custom_object(*CONFIG, "clusteroperators", name)
    return {c["type"]: c for c in co["status"]["conditions"]}


def _until(probe: Any, what: str, timeout: float = 20.0) -> Any:
    """Poll until `probe` gives something truthy; an API outage (the oauth host's kube-apiserver revision) is
    "not yet"."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = probe()
        except Exception:  # the outage's connection errors
            value = None
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def _when(condition: dict[str, Any]) -> datetime.datetime:
    return datetime.datetime.fromisoformat(condition["lastTransitionTime"].replace("Z", "+00:00"))


def _move_routes(custom: client.CustomObjectsApi) -> None:
    entries = [
        {"namespace": "openshift-authentication", "name": "oauth-openshift", "hostname": f"oauth.apps.{NEW}"},
        {"namespace": "openshift-console", "name": "console", "hostname": f"console.apps.{NEW}"},
    ]
    custom.patch_cluster_custom_object(*CONFIG, "ingresses", "cluster", {"spec": {"componentRoutes": entries}})


@pytest.mark.simonly
def test_unresolvable_routes_make_the_operators_unavailable_then_degraded(sim: simulator.Simulator) -> None:
    custom = client.CustomObjectsApi(client.ApiClient(_configuration(sim)))
    _move_routes(custom)

    for name, prefix in (
        ("authentication", "OAuthServerRouteEndpointAccessibleController"),
        ("console", "RouteHealth"),
    ):
        degraded = _until(lambda n=name: _conditions(custom, n)["Degraded"]["status"] == "True"
                          and _conditions(custom, n), f"{name} Degraded")  # fmt: skip
        available, degraded = degraded["Available"], degraded["Degraded"]
        assert available["status"] == "False"
        reason = "EndpointUnavailable" if name == "authentication" else "FailedGet"
        assert available["reason"] == f"{prefix}_{reason}"
        assert available["message"].startswith(f"{prefix}Available: ")
        assert degraded["reason"] == f"{prefix}_{'SyncError' if name == 'authentication' else 'FailedGet'}"
        host = f"oauth.apps.{NEW}" if name == "authentication" else f"console.apps.{NEW}"
        assert f"dial tcp: lookup {host} on 172.30.0.10:53: no such host" in degraded["message"]
        inertia = (_when(degraded) - _when(available)).total_seconds()
        assert inertia >= 0.9 * 120 / SPEED, "Degraded follows only after the status controller's 2 min inertia"

    sim.dns.site.add(f"*.apps.{NEW}", "10.7.0.10")  # type: ignore[union-attr]

    for name in ("authentication", "console"):
        _until(lambda n=name: _conditions(custom, n)["Available"]["status"] == "True", f"{name} Available")
        assert _until(lambda n=name: _conditions(custom, n)["Degraded"]["status"] == "False", f"{name} healthy")


def test_node_dnsmasq_answers_what_its_script_writes_from_the_overrides(tmp_path: Path) -> None:
    install = dns.Install("sno1", "factory.example.com", "192.168.127.10")
    node = dns.NodeDns(install, tmp_path)
    assert node.lookup("oauth-openshift.apps.sno1.factory.example.com") == ["192.168.127.10"]
    assert node.lookup("api.store7.edge.example.org") is None, "forwarded to the site"
    overrides = tmp_path / dns.OVERRIDES.lstrip("/")
    overrides.parent.mkdir(parents=True)
    overrides.write_text("SNO_CLUSTER_NAME_OVERRIDE=store7\nSNO_BASE_DOMAIN_OVERRIDE='edge.example.org'\n")

    assert node.lookup("api.store7.edge.example.org") is None, "dnsmasq reads it only when it restarts"
    node.restart()

    assert node.lookup("api.store7.edge.example.org") == ["192.168.127.10"], "an unset IP keeps the install's"
    assert node.lookup("x.apps.store7.edge.example.org") == ["192.168.127.10"]
    assert node.lookup("api-int.sno1.factory.example.com") is None, "the script now writes the new names only"
    written = (tmp_path / dns.CONF.lstrip("/")).read_text()
    assert written == (
        "address=/apps.store7.edge.example.org/192.168.127.10\n"
        "address=/api-int.store7.edge.example.org/192.168.127.10\n"
        "address=/api.store7.edge.example.org/192.168.127.10\n"
    )
    (tmp_path / "etc/dnsmasq.d/kept.conf").write_text("address=/api-int.sno1.factory.example.com/192.168.127.10\n")
    node.restart()
    assert node.lookup("api-int.sno1.factory.example.com") == ["192.168.127.10"], "conf-dir files count too"


def _configuration(sim: simulator.Simulator) -> client.Configuration:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(sim.kubeconfig_path), client_configuration=configuration)
    return configuration

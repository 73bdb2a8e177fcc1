"""The site network transaction on a real NetworkManager through a real nmstate: commit, rollback, crash, re-run.

Each test gets a fresh sandbox (realhost_sandbox.py): eth0 leaves the factory on 198.51.100.10/24 with a default
route via 198.51.100.1; the site's gateway is 192.0.2.1 and its resolver 192.0.2.53. The agent side is
snoreloc's own `network.converge` with the real probes, run inside the sandbox by agent.py.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from realhost_sandbox import Sandbox, desired_file, require, require_libnmstate

FACTORY_ADDRESSES = ["198.51.100.10/24"]
SITE_ADDRESSES = ["192.0.2.10/24"]
BACKENDS = ["lib", "cli"]


def site_network(*, dns: str = "192.0.2.53", drop_factory_route: bool = True) -> dict[str, Any]:
    """The site-config's `network`: eth0 on the site subnet, default route via the site gateway, its resolver.

    nmstate 0.3 refuses a second default gateway on one profile (NetworkManager's single `ipv4.gateway`), so the
    factory one is removed explicitly; nmstate 2.x accepts the same document.
    """
    routes: list[dict[str, Any]] = [{"destination": "0.0.0.0/0", "state": "absent"}] if drop_factory_route else []
    routes.append({"destination": "0.0.0.0/0", "next-hop-address": "192.0.2.1", "next-hop-interface": "eth0"})
    return {
        "interfaces": [
            {
                "name": "eth0",
                "type": "ethernet",
                "state": "up",
                "ipv4": {"enabled": True, "dhcp": False, "address": [{"ip": "192.0.2.10", "prefix-length": 24}]},
            }
        ],
        "routes": {"config": routes},
        "dns-resolver": {"config": {"server": [dns]}},
    }


def converge(box: Sandbox, backend: str, desired: dict[str, Any], window: float = 3) -> dict[str, Any]:
    if backend == "cli":
        require("nmstatectl")
        box.install_nmstatectl()
    return box.agent("converge", backend, str(desired_file(box, desired)), str(window))


@pytest.mark.parametrize("backend", BACKENDS)
def test_apply_probe_commit_keeps_the_site_network(node: Sandbox, backend: str) -> None:
    verdict = converge(node, backend, site_network())

    assert verdict.get("change") == "applied", verdict
    assert all(ok for _, ok, _ in verdict["checks"]), verdict
    assert node.addresses() == SITE_ADDRESSES
    assert "0.0.0.0/0 via 192.0.2.1 dev eth0 100" in node.routes() or "default via 192.0.2.1 dev eth0 100" in (
        node.routes()
    )
    assert node.checkpoints() == [], "committed: no checkpoint may be left for NetworkManager to roll back"


@pytest.mark.parametrize("backend", BACKENDS)
def test_failing_probe_rolls_back_addresses_and_routes_exactly(node: Sandbox, backend: str) -> None:
    before = (node.addresses(), node.routes())

    verdict = converge(node, backend, site_network(dns="192.0.2.99"))

    assert verdict.get("exit") == 75, verdict
    assert "192.0.2.99" in verdict["message"] and "rolled back" in verdict["message"]
    assert (node.addresses(), node.routes()) == before
    assert node.addresses() == FACTORY_ADDRESSES
    assert node.checkpoints() == []


def test_crash_before_commit_is_undone_by_networkmanager_itself(node: Sandbox) -> None:
    before = (node.addresses(), node.routes())

    died = node.agent("crash", str(desired_file(node, site_network())), "4")

    assert died["checkpoint"], died
    assert node.addresses() == SITE_ADDRESSES, "the apply took effect before the agent died"
    deadline = time.monotonic() + 30
    while (node.addresses(), node.routes()) != before and time.monotonic() < deadline:
        time.sleep(0.25)
    assert (node.addresses(), node.routes()) == before
    assert node.checkpoints() == []


def test_rerun_changes_nothing(sandbox: Sandbox) -> None:
    node = factory_without_gateway(sandbox)
    first = converge(node, "lib", site_network(drop_factory_route=False))
    profile = node.run(["nmcli", "-g", "connection.timestamp,connection.uuid", "connection", "show", "eth0"]).stdout

    again = converge(node, "lib", site_network(drop_factory_route=False))

    assert first.get("change") == "applied", first
    assert again == {"change": "unchanged", "attempts": 0, "checks": []}
    assert node.run(["nmcli", "-g", "connection.timestamp,connection.uuid", "connection", "show", "eth0"]).stdout == (
        profile
    )


def test_rerun_of_a_network_that_removes_a_route_changes_nothing(node: Sandbox) -> None:
    first = converge(node, "lib", site_network())

    again = converge(node, "lib", site_network())

    assert first.get("change") == "applied", first
    assert again.get("change") == "unchanged", again


INVALID = {
    "bad-address": ("ip", "192.0.2.300"),
    "prefix-33": ("prefix-length", 33),
}


@pytest.mark.parametrize("case", ["bad-address", "prefix-33"])
def test_invalid_desired_state_is_a_site_config_error_libnmstate(node: Sandbox, case: str) -> None:
    before = node.addresses()

    verdict = converge(node, "lib", invalid_network(*INVALID[case]))

    assert verdict.get("exit") == 65, verdict
    assert verdict["error"] == "ConfigError"
    assert node.addresses() == before


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_desired_state_is_a_site_config_error_nmstatectl(node: Sandbox, case: str) -> None:
    before = node.addresses()

    verdict = converge(node, "cli", invalid_network(*INVALID[case]))

    assert verdict.get("exit") == 65, verdict
    assert node.addresses() == before


def invalid_network(key: str, value: object) -> dict[str, Any]:
    desired = site_network()
    desired["interfaces"][0]["ipv4"]["address"][0][key] = value
    return desired


def factory_without_gateway(box: Sandbox) -> Sandbox:
    """A factory network with no default route, so the site network needs no `state: absent` entry."""
    require_libnmstate()
    box.factory_network(gateway=False)
    return box


def test_whole_node_flow_applies_the_network_for_real(sandbox: Sandbox) -> None:
    """`snoreloc run` on the node, as the demo runs it, but NetworkManager, nmstate and the probes are real.

    The factory network has no default route so the site network needs no `state: absent` entry (the re-run test
    above covers that one).
    """
    node = factory_without_gateway(sandbox)
    workdir = node.workdir / "flow"
    workdir.mkdir()
    desired = desired_file(node, site_network(drop_factory_route=False))

    verdict = node.agent("node-flow", str(desired), str(workdir), timeout=300)

    assert "report" in verdict, verdict
    states = {step["step"]: step["state"] for step in verdict["report"]["steps"]}
    assert verdict["report"]["error"] is None, verdict["report"]
    assert states.get("network") == "done", states
    assert all(state == "done" for state in states.values()), states
    assert node.addresses() == SITE_ADDRESSES
    assert node.checkpoints() == []
    assert ["systemctl", "start", "--no-block", "kubelet.service"] in verdict["kubelet"], verdict["kubelet"]

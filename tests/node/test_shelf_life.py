"""Shelf life at the site (issue 37): the node flow on simulated nodes that waited 10, 45, 200, 330 and 400 days
between the seal and their first boot at the site (`snoreloc_sim.openshift.operators.shelf`).

Each node is sealed as `seal` seals it (its horizon read from the simulator's Secrets as they were at the seal and
from the kubelet's files, recorded in the marker), then relocated: within the horizon it runs as ever; past the
kubelet's and the control plane's certificates it recovers (the platform's regenerations waited for by the `shelf`
step, the kubelet's CSRs approved by the `csr` step); past the kubelet CA it stops before any change with one verdict.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sealed import FACTORY_DOMAIN, sealed_root
from snoreloc import errors
from snoreloc.adapters import clock, command, console, fs
from snoreloc.engine import node, paths, runner
from snoreloc.factory import seal
from snoreloc.host import kubelet
from snoreloc.pki import shelf
from snoreloc.steps import context
from snoreloc.steps.host import shelf_life
from snoreloc_sim.demo import flow as demo
from snoreloc_sim.openshift import simulator

EXPIRED_BY_45 = {"aggregator-client-signer", "csr-signer"}  # 30-day signers; the 60-day ones still hold
EXPIRED_BY_200 = EXPIRED_BY_45 | {"csr-signer-signer", "kube-control-plane-signer"}
KUBELET = ["kubelet-client-current", "kubelet-server-current"]
SPEED = 150.0  # the run's whole deadline is in cluster time: at 600x it is 6 s, too few on a loaded machine


def sealed_days_ago(root: fs.HostFS, sim: simulator.Simulator, days: int) -> dict[str, Any]:
    """The marker `seal` wrote `days` ago: the horizon from the Secrets as they were then and the kubelet's files."""
    demo.factory_node(root, sim)
    as_sealed = {
        s["metadata"]["name"]: shelf.secret_not_after(s)
        for s in sim.seed_facts.sealed_secrets
        if s["metadata"]["name"] in shelf.BY_NAME
    }
    at_seal = clock.FakeClock(start=datetime.now(shelf.dt.UTC) - timedelta(days=days))
    horizon, unread = seal.read_horizon(seal.Node(root, command.FakeRunner(), at_seal), as_sealed)
    assert unread == []
    marker = {"domain": FACTORY_DOMAIN, "time": shelf.stamp(horizon.sealed_at), "shelf": horizon.record()}
    root.write_text(kubelet.SEAL_MARKER, json.dumps(marker), mode=0o644)
    return marker


def _relocate(root: fs.HostFS, sim: simulator.Simulator) -> tuple[node.Services, Any]:
    demo.write_site(root, sim)
    svc = demo.services(root, sim, clock.ScaledClock(sim.cluster.timeline.speed))
    request = node.NodeRequest(
        paths=paths.Paths.under(root.path("/")),
        options=runner.Options(),
        settings=context.Settings(ingress_endpoint=sim.router_address, poll_interval=5.0),
        page_host="127.0.0.1",
        page_port=0,
    )
    try:
        return svc, node.relocate(request, svc)
    finally:
        for served in svc.pages:
            served.stop()


def _journal(root: fs.HostFS) -> dict[str, Any]:
    status: dict[str, Any] = json.loads(root.read_text("/var/lib/snoreloc/status.json"))
    return status


@pytest.fixture
def root(tmp_path: Path) -> fs.HostFS:
    return sealed_root(tmp_path)


@pytest.mark.simonly  # a real node cannot be shelved on demand
@pytest.mark.parametrize("sim", [{"shelved_days": 10, "speed": SPEED}], indirect=True)
def test_10_days_on_the_shelf_relocate_as_ever(root: fs.HostFS, sim: simulator.Simulator) -> None:
    marker = sealed_days_ago(root, sim, 10)
    assert marker["shelf"]["setBy"] == "kube-apiserver-to-kubelet-signer"
    _, result = _relocate(root, sim)
    assert result.state.value in ("done", "done-with-warnings")
    details = _journal(root)["steps"]["shelf"]["details"]
    assert details["summary"] == "within the horizon: no certificate expired on the shelf"
    assert (details["shelfDays"], details["regenerated"], details["csr"]) == (10, [], [])
    assert details["mustBootBy"] == marker["shelf"]["mustBootBy"]
    assert _journal(root)["steps"]["csr"]["details"].get("approved", []) == []


@pytest.mark.simonly  # a real node cannot be shelved on demand
@pytest.mark.parametrize(
    ("sim", "regenerated"),
    [
        ({"shelved_days": 45, "speed": SPEED}, EXPIRED_BY_45),
        ({"shelved_days": 200, "speed": SPEED}, EXPIRED_BY_200),
        ({"shelved_days": 330, "speed": SPEED}, EXPIRED_BY_200),
    ],
    indirect=["sim"],
)
def test_past_recoverable_expiries_the_node_recovers_unattended(
    root: fs.HostFS, sim: simulator.Simulator, regenerated: set[str]
) -> None:
    days = sim.shelved_days
    sealed_days_ago(root, sim, days)
    _, result = _relocate(root, sim)
    assert result.state.value in ("done", "done-with-warnings")
    steps = _journal(root)["steps"]
    details = steps["shelf"]["details"]
    assert {entry["name"] for entry in details["regenerated"]} == regenerated  # each waited for, named
    assert all(shelf.parse_stamp(entry["notAfter"]) > datetime.now(shelf.dt.UTC) for entry in details["regenerated"])
    assert details["csr"] == KUBELET and details["shelfDays"] == days
    assert len(steps["csr"]["details"]["approved"]) == 2  # the kubelet's client and serving CSRs
    assert not root.exists(kubelet.SEAL_MARKER)


@pytest.mark.simonly  # a real node cannot be shelved on demand
@pytest.mark.parametrize("sim", [{"shelved_days": 400}], indirect=True)
def test_past_the_kubelet_ca_the_node_stops_before_any_change(root: fs.HostFS, sim: simulator.Simulator) -> None:
    marker = sealed_days_ago(root, sim, 400)
    writes = sim.cluster.recorder.writes
    with pytest.raises(shelf_life.ShelfExpired) as caught:
        _relocate(root, sim)
    assert caught.value.exit_code == errors.ExitCode.UNAVAILABLE == 69
    sealed_on = marker["time"][:10]
    assert caught.value.message.startswith(f"this node was sealed on {sealed_on} and waited 400 days; its ")
    assert "kube-apiserver-to-kubelet-signer expired on" in caught.value.message
    assert "Nothing on this node was changed" in caught.value.message
    assert "return it to the depot" in caught.value.hint
    assert sim.cluster.recorder.writes == writes  # no change in the cluster
    assert root.exists(kubelet.SEAL_MARKER)
    banner = root.read_text(console.ISSUE_FILE)
    assert "kube-apiserver-to-kubelet-signer" in banner and "return it to the depot" in banner

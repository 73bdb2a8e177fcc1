"""Field clusters (issue 12): a node back from the shelf, an unrelated degraded operator, a CSR someone else decides.

The shelved node is NotReady until its CSRs are approved, and then the static-pod operators report
NodeControllerDegraded and no rollout can start: the relocation must approve first and then proceed, unattended.
An operator the relocation neither needs nor touches (`insights` at a site without internet) must not hold it:
it ends done with a warning (exit 2) instead.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest

from snoreloc import waits
from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.engine import journal, pipeline, runner
from snoreloc.siteconfig import model
from snoreloc.steps import base
from snoreloc.steps.openshift import apiserver_revision, node_csrs
from snoreloc_sim.openshift.operators import component_routes, kubelet

from .conftest import Relocation, contains, footprint, site_config

STATIC_POD = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd")


def _rolled_back_exactly(r: Relocation, before: dict[str, Any]) -> None:
    pipeline.rollback(r.paths, r.client, r.clock)
    after = footprint(r.client)
    assert after.keys() == before.keys()
    for name, original in before.items():
        assert contains(after[name], original), name


def _degraded(r: Relocation, name: str) -> dict[str, Any]:
    return base.conditions(r.get(kube.Ref(kube.CLUSTEROPERATORS, name))).get("Degraded", {})


def _done_but_for_own_certificates(result: runner.Result) -> None:
    """Done; the only warnings are the seeded routes whose own certificates miss their new hosts (issue 12 item 4)."""
    assert result.state in (journal.RunState.DONE, journal.RunState.DONE_WITH_WARNINGS)
    assert all("has its own certificate" in w for w in result.warnings), result.warnings


def _node_ready(r: Relocation) -> str:
    node = r.get(kube.Ref(kube.NODES, r.facts.node_name))
    return str(base.conditions(node).get("Ready", {}).get("status"))


@pytest.mark.simonly  # a real node cannot be shelved on demand
@pytest.mark.parametrize("sim", [{"expired_kubelet_cert": True}], indirect=True)
def test_the_shelved_node_relocates_to_done_without_a_manual_step(relocation: Relocation) -> None:
    assert _node_ready(relocation) != "True"
    before = footprint(relocation.client)
    for name in STATIC_POD:  # as OpenShift reports a NotReady master
        degraded = _degraded(relocation, name)
        assert degraded["status"] == "True" and degraded["message"].startswith("NodeControllerDegraded:"), name
    result = relocation.run()
    _done_but_for_own_certificates(result)
    assert [s["step"] for s in relocation.report()["steps"]][:2] == ["csr", "preflight"]
    approved = relocation.status()["steps"]["csr"]["details"]["approved"]
    assert len(approved) == 2  # client and serving; the decoy stays pending
    assert _node_ready(relocation) == "True"
    assert all(_degraded(relocation, name)["status"] == "False" for name in STATIC_POD)
    _rolled_back_exactly(relocation, before)


def _degrade_insights(r: Relocation) -> None:
    ref = kube.Ref(kube.CLUSTEROPERATORS, "insights")
    co = r.get(ref)
    for cond in co["status"]["conditions"]:
        if cond["type"] == "Degraded":
            cond.update(status="True", reason="UploadFailed", message="Unable to report: gateway unreachable")
    r.client.request("PUT", ref.path("status"), body=co)


@pytest.mark.simonly  # degrading a real operator's status is overwritten by the operator at once
def test_an_unrelated_degraded_operator_ends_done_with_a_warning(relocation: Relocation) -> None:
    _degrade_insights(relocation)
    before = footprint(relocation.client)
    result = relocation.run()
    assert result.state is journal.RunState.DONE_WITH_WARNINGS
    warnings = relocation.report()["warnings"]
    insights = [w for w in warnings if w.startswith("ClusterOperator insights:")]
    assert insights and "Degraded=True: Unable to report: gateway unreachable" in insights[0]
    _rolled_back_exactly(relocation, before)


@pytest.mark.simonly  # degrading a real operator's status is overwritten by the operator at once
def test_an_ignored_operator_is_not_even_a_warning(relocation: Relocation) -> None:
    _degrade_insights(relocation)
    site = dataclasses.replace(site_config(), operators=model.Operators(ignore=("insights",)))
    result = relocation.run(site)
    _done_but_for_own_certificates(result)


@pytest.mark.simonly  # the kubelet's own CSR is planted in the simulator's store, as its kubelet does
@pytest.mark.parametrize("sim", [{"speed": 200.0}], indirect=True)
def test_a_csr_denied_meanwhile_is_reported_not_approved(relocation: Relocation) -> None:
    node = relocation.facts.node_name
    store, csrs = relocation.sim.cluster.store, relocation.sim.cluster.types[kubelet.base.CSRS]
    planted = store.create(csrs, kubelet.node_requests(node, [])[0])
    name = planted["metadata"]["name"]
    ours = relocation.client.get(kube.Ref(kube.CSRS, name))
    denial = {"type": "Denied", "status": "True", "reason": "ByAdmin", "message": "denied by an administrator"}
    relocation.client.request(
        "PUT", kube.Ref(kube.CSRS, name).path("approval"), body={**ours, "status": {"conditions": [denial]}}
    )
    identity = node_csrs.Node(node, frozenset({node}), frozenset())
    assert node_csrs.approve(relocation.client, ours, identity) is False
    after = relocation.client.get(kube.Ref(kube.CSRS, name))
    assert [c["type"] for c in after["status"]["conditions"]] == ["Denied"]


@pytest.mark.simonly  # the simulator counts the revisions it makes and the rollouts (restarts) it performs
def test_one_relocation_is_one_kube_apiserver_rollout(relocation: Relocation) -> None:
    recorder = relocation.sim.cluster.recorder
    result = relocation.run()
    _done_but_for_own_certificates(result)
    deadline = time.monotonic() + 30
    while not relocation.sim.cluster.timeline.idle():  # a second rollout would have started by now
        assert time.monotonic() < deadline, "the simulated cluster never went quiet"
        time.sleep(0.05)
    rollouts = [r.trigger for r in recorder.rollouts if r.operator == "kube-apiserver"]
    assert len(rollouts) == 1, rollouts
    assert recorder.revisions["kube-apiserver"] == 2  # the oauth metadata's and ours: the node skips the first


@pytest.mark.simonly  # slows the simulator's authentication operator and counts its kube-apiserver revisions
def test_a_slow_oauth_rollout_still_costs_one_kube_apiserver_rollout(
    relocation: Relocation, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The authentication operator publishes the new metadata only after the installer of our APIServer revision
    would have finished: written back to back, the metadata would make a second restart."""
    monkeypatch.setattr(component_routes, "APPLY_SECONDS", 100.0)  # beyond the installer's 90 s
    result = relocation.run()
    _done_but_for_own_certificates(result)
    deadline = time.monotonic() + 30
    while not relocation.sim.cluster.timeline.idle():
        assert time.monotonic() < deadline, "the simulated cluster never went quiet"
        time.sleep(0.05)
    rollouts = [r.trigger for r in relocation.sim.cluster.recorder.rollouts if r.operator == "kube-apiserver"]
    assert len(rollouts) == 1, rollouts


class _PaceRecorder(clock_mod.ScaledClock):
    """A ScaledClock noting each sleep under the wait in progress (`snoreloc.waits` publishes it)."""

    def __init__(self, speed: float) -> None:
        super().__init__(speed)
        self.current = ""
        self.sleeps: list[tuple[str, float]] = []

    def on_wait(self, waiting: waits.Waiting | None) -> None:
        self.current = "" if waiting is None else waiting.what

    def sleep(self, seconds: float) -> None:
        self.sleeps.append((self.current, seconds))
        super().sleep(seconds)


@pytest.mark.simonly  # the simulator's authentication operator takes its time to publish the oauth host
def test_the_oauth_wait_looks_often_because_the_revision_waits_for_it(relocation: Relocation) -> None:
    """The APIServer is written when the oauth host is out, and the revision starts then: a look every poll
    interval would start it up to a whole interval late (issue 14)."""
    paced = _PaceRecorder(relocation.target.speed)
    unsubscribe = waits.subscribe(paced.on_wait)
    try:
        result = pipeline.execute(relocation.request(site_config()), relocation.client, paced)
    finally:
        unsubscribe()
    _done_but_for_own_certificates(result)
    oauth = [seconds for what, seconds in paced.sleeps if "to publish" in what]
    assert oauth, "the domain step waited for the oauth host"
    assert max(oauth) <= apiserver_revision.OAUTH_POLL < relocation.request(site_config()).settings.poll_interval

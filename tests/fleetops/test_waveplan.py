"""A wave's plan by table (`controller.waveplan`: pure, no hub): batch sizes, batch opening, the brake by cause, by
failure rate and by timeout, a halt that stays until approved past, started nodes never held, the concurrency
limit, and the label selector a Wave lists its Sites with."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from snoreloc_fleet.controller import waveplan
from snoreloc_fleet.resource import site
from snoreloc_fleet.resource import wave as wave_mod

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def _wave(status: dict[str, Any] | None = None, **spec: Any) -> wave_mod.View:
    obj = {"metadata": {"name": "w", "namespace": "ns", "generation": 1}, "spec": {"selector": {}, **spec}}
    return wave_mod.view({**obj, "status": status or {}})


def _member(name: str, phase: str = "Ready", *, started: bool = False, gate: dict[str, Any] | None = None,
            step: str = "domain", code: int = 69, agent: str = "1.2.3") -> waveplan.Member:  # fmt: skip
    report: dict[str, Any] = {}
    if started or phase in ("Failed", "Relocated", "InProgress"):
        report = {"runState": {"Failed": "failed", "Relocated": "done"}.get(phase, "running"), "agentVersion": agent}
    if phase == "Failed":
        report |= {"exitCode": code, "failure": {"step": step, "message": "x"}}
    obj = {
        "metadata": {"name": name, "annotations": {site.TEMPLATE_DIGEST: "t1"}},
        "status": {"phase": phase, site.STATUS_AGENT: report, **({site.STATUS_GATE: gate} if gate else {})},
    }
    return waveplan.member(obj)


def _names(count: int) -> list[str]:
    return [f"s{index:02d}" for index in range(count)]


@pytest.mark.parametrize(
    ("canary", "batches", "total", "sizes"),
    [
        (1, [], 10, [1, 9]),
        (2, ["25%", "3"], 10, [2, 3, 3, 2]),
        (5, ["10"], 8, [5, 3]),
        (0, [], 4, [0, 4]),
        (3, ["50%"], 0, [0]),
    ],
)
def test_batch_sizes(canary: int, batches: list[str], total: int, sizes: list[int]) -> None:
    assert _wave(canary=canary, batches=batches).sizes(total) == sizes


def test_only_the_canary_opens_and_the_others_say_what_they_wait_for() -> None:
    plan = waveplan.plan(_wave(canary=2, batches=["3"]), [_member(n) for n in _names(8)], NOW)
    states = {n: (g["state"], g["batch"]) for n, g in plan.gates.items()}
    assert states["s00"] == states["s01"] == ("Open", 0)
    assert plan.gates["s02"]["cause"] == "batch 1 waits for batch 0 to finish"
    assert plan.gates["s07"]["cause"] == "batch 2 waits for the batches before it"
    assert [b["state"] for b in plan.status["batches"]] == ["Open", "Pending", "Pending"]
    assert plan.status["phase"] == "Progressing" and not plan.halted


def test_the_same_cause_halts_and_started_nodes_stay_open() -> None:
    open_gate = {"state": "Open", "wave": "w", "batch": 0, "cause": "", "since": "2026-03-01T11:00:00Z"}
    members = [_member(n, "Failed", gate=open_gate) for n in _names(3)]
    members += [_member("s03", "InProgress", gate=open_gate), _member("s04", gate=open_gate)]
    members += [_member(n) for n in ("s05", "s06")]
    plan = waveplan.plan(_wave(canary=5, successThreshold=0, sameCause=3), members, NOW)
    assert plan.halted
    cause = plan.status["halt"]["cause"]
    assert cause == (
        "3 Sites failed with the same cause (step domain, reason Unavailable, agent 1.2.3, template t1): s00, s01, s02"
    )
    assert [n for n, g in plan.gates.items() if g["state"] == "Open"] == ["s00", "s01", "s02", "s03"]
    assert plan.gates["s04"]["cause"] == f"wave w halted: {cause}" and plan.gates["s04"]["since"] == NOW.strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    assert plan.gates["s00"]["since"] == "2026-03-01T11:00:00Z", "a gate keeps its time while its state does not move"


def test_different_causes_do_not_add_up_but_the_failure_rate_does() -> None:
    members = [_member("s00", "Failed", step="domain"), _member("s01", "Failed", step="certificates", code=65)]
    members += [_member(n) for n in _names(6)[2:]]
    assert not waveplan.plan(_wave(canary=4, successThreshold=50, sameCause=2), members, NOW).halted
    plan = waveplan.plan(_wave(canary=4, successThreshold=75, sameCause=2), members, NOW)
    assert plan.status["halt"]["cause"] == (
        "batch 0 has 2 of 4 Sites not relocated, more than the 1 its success threshold of 75% allows"
    )


def test_a_batch_that_times_out_counts_its_unfinished_sites() -> None:
    opened = (NOW - dt.timedelta(seconds=3700)).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {"batches": [{"index": 0, "openedAt": opened}]}
    members = [_member("s00", "Relocated"), _member("s01", started=True, phase="InProgress"), _member("s02")]
    plan = waveplan.plan(_wave(status, canary=3, successThreshold=60, batchTimeoutSeconds=3600), members, NOW)
    assert plan.status["halt"]["cause"].startswith("batch 0 timed out with 2 of 3 Sites not relocated")


def test_a_halt_stays_until_approved_past_and_approval_opens_a_manual_batch() -> None:
    halt = {"batch": 0, "cause": "3 Sites failed", "since": "2026-03-01T11:00:00Z"}
    members = [_member("s00", "Relocated"), _member("s01", "Relocated"), _member("s02")]
    kept = waveplan.plan(_wave({"halt": halt}, canary=2, manualApproval=True), members, NOW)
    assert kept.halted and kept.status["halt"] == halt, "the causes are gone, the halt is not"
    approved = waveplan.plan(_wave({"halt": halt}, canary=2, manualApproval=True, approvedBatches=1), members, NOW)
    assert not approved.halted and approved.gates["s02"]["state"] == "Open"
    waiting = waveplan.plan(_wave(canary=2, manualApproval=True), members, NOW)
    assert waiting.gates["s02"]["cause"] == "batch 1 waits for approval (spec.approvedBatches: 1)"
    assert waiting.status["phase"] == "WaitingApproval"


def test_concurrency_keeps_open_sites_and_fills_free_places() -> None:
    open_gate = {"state": "Open", "wave": "w", "batch": 1, "cause": "", "since": "2026-03-01T11:00:00Z"}
    members = [_member("s05", gate=open_gate), _member("s06", "Relocated", gate=open_gate)]
    members += [_member(n) for n in _names(5)]
    plan = waveplan.plan(_wave(canary=0, maxConcurrency=2), members, NOW)
    assert sorted(n for n, g in plan.gates.items() if g["state"] == "Open") == ["s00", "s05", "s06"]
    assert plan.gates["s01"]["cause"].startswith("waits for a place: 2 Sites")
    assert plan.status["batches"][1]["held"] == 4


def test_the_label_selector_a_wave_lists_with() -> None:
    selector = {
        "matchLabels": {"rollout": "spring", "region": "emea"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["b", "a"]},
            {"key": "pilot", "operator": "Exists"},
            {"key": "frozen", "operator": "DoesNotExist"},
            {"key": "shop", "operator": "NotIn", "values": ["x"]},
        ],
    }
    assert wave_mod.label_selector(selector) == (
        "region=emea,rollout=spring,tier in (a,b),pilot,!frozen,shop notin (x)"
    )

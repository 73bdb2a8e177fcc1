"""Reports are data, not trust, on the hub (issue 30): the Site's status schema bounds every number and string of a
node's report, the controller's metrics export no implausible duration or age, and a report dated in the future
freezes nothing (the Site turns Stale, reason ClockAhead, rather than InProgress for ever).

Over HTTPS against the hub simulator, with the site's own reporting token: each hostile value is refused with 422
naming its field (kube-apiserver validates a custom resource's status write against the CRD's schema, minimum,
maximum, maxLength and pattern included: k8s.io/apiextensions-apiserver pkg/registry/customresource/
status_strategy.go `ValidateUpdate` -> the schema validator of k8s.io/kube-openapi pkg/validation/validate), and the
Site keeps its previous report.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Callable
from typing import Any

import pytest
from snoreloc_fleet.controller.metrics import FleetMetrics, age, plausible
from snoreloc_fleet.resource import site
from snoreloc_fleet.state import fleetstate
from snoreloc_fleet.verbs import why

from snoreloc import sanitize
from snoreloc.adapters import kube
from snoreloc.engine import hubreport
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import NS, SITES, Running, report_kubeconfig, site_client, stick_site, wait_for, wait_phase

SEED = 30
NOW = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)


def _report(digest: str, **changes: Any) -> dict[str, Any]:
    report: dict[str, Any] = {
        "reportedAt": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "agentVersion": "1.0", "source": "node",
        "siteConfigDigest": digest, "runState": "running", "step": "network", "stepsDone": 1, "stepsTotal": 6,
        "steps": [{"name": "network", "state": "done", "seconds": 12.5}],
        "waiting": {"step": "api", "what": "the API", "elapsedSeconds": 3.0, "budgetSeconds": 600.0},
    }  # fmt: skip
    report.update(changes)
    return report


# field -> hostile values, each refused (a number out of range, or a control character)
HOSTILE: dict[str, list[Any]] = {
    "stepsDone": [-1, 10**6],
    "stepsTotal": [-5, 2**40],
    "exitCode": [-1, 256, 10**9],
    "steps[0].seconds": [-1.0, 1e300, float(site.MAX_SECONDS + 1)],
    "waiting.elapsedSeconds": [-0.5, 1e300],
    "waiting.budgetSeconds": [-3.0, 1e308],
    "step": ["net\awork", "a\x1b[31m", "x\x85y", "\x00"],
    "steps[0].name": ["\a"],
    "todo": ["ring \a the bell", "\r\n"],
    "warnings[0]": ["\x07"],
}


def _put(report: dict[str, Any], field: str, value: Any) -> dict[str, Any]:
    changed: dict[str, Any] = {**report, "steps": [dict(report["steps"][0])], "waiting": dict(report["waiting"])}
    changed["warnings"] = ["ok"]
    if field.startswith("steps[0]."):
        changed["steps"][0][field.split(".", 1)[1]] = value
    elif field.startswith("waiting."):
        changed["waiting"][field.split(".", 1)[1]] = value
    elif field == "warnings[0]":
        changed["warnings"] = [value]
    else:
        changed[field] = value
    return changed


def test_a_hostile_number_or_control_character_in_a_report_is_refused_with_its_field(
    hub: HubSimulator, admin: kube.Client, start_controller: Callable[..., Running]
) -> None:
    start_controller()
    digest = stick_site(admin, "store-1")["status"]["media"]["digest"]
    node = site_client(hub, report_kubeconfig(admin, "store-1"), "store-1.kubeconfig")
    path = kube.Ref(SITES, "store-1", NS).path("status")

    def send(report: dict[str, Any]) -> None:
        body = {"status": {site.STATUS_AGENT: report}}
        node.request("PATCH", path, body=body, content_type=kube.MERGE_PATCH, retry=False)

    good = _report(digest)
    send(good)
    wait_phase(admin, "store-1", site.Phase.IN_PROGRESS)
    refused = 0
    for field, values in HOSTILE.items():
        for value in values:
            with pytest.raises(kube.Invalid) as caught:
                send(_put(good, field, value))
            assert f"status.agent.{field}" in str(caught.value), (field, value)
            refused += 1
    assert refused == sum(len(v) for v in HOSTILE.values())
    assert admin.get(kube.Ref(SITES, "store-1", NS))["status"][site.STATUS_AGENT] == good
    send(_put(good, "todo", "tab\tand\nline feed are text"))  # what `sanitize.visible` keeps


def test_a_node_report_is_made_to_fit_the_schema() -> None:
    """What the node sends: control characters shown as escapes (the schema refuses them raw)."""
    for text in ("net\awork", "a\x1b[31mred", "x\x85y", "ok\ttab\nline"):
        shown = hubreport._text(text)
        assert shown == sanitize.visible(text)
        assert not any((0 < ord(c) < 0x20 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F for c in shown)


def test_a_report_dated_in_the_future_turns_the_site_stale_not_frozen(
    hub: HubSimulator, admin: kube.Client, start_controller: Callable[..., Running]
) -> None:
    running = start_controller()
    digest = stick_site(admin, "store-2")["status"]["media"]["digest"]
    ahead = dt.datetime.now(dt.UTC) + dt.timedelta(days=365)
    report = _report(digest, reportedAt=ahead.strftime("%Y-%m-%dT%H:%M:%SZ"))
    path = kube.Ref(SITES, "store-2", NS).path("status")
    admin.request("PATCH", path, body={"status": {site.STATUS_AGENT: report}}, content_type=kube.MERGE_PATCH)
    status = wait_phase(admin, "store-2", site.Phase.STALE)["status"]
    assert status["reason"] == site.Reason.CLOCK_AHEAD
    reporting = {c["type"]: c for c in status["conditions"]}["Reporting"]
    assert (reporting["status"], reporting["reason"]) == ("False", "ClockAhead")
    assert "ahead of the hub's clock" in reporting["message"]
    told = why.explain(admin.get(kube.Ref(SITES, "store-2", NS)), dt.datetime.now(dt.UTC)).splitlines()[-1]
    assert told.startswith("do now: the node's reports are dated ahead") and "spec.ntp" in told, told
    writes, reconciles = running.controller.counters.status_writes, running.controller.counters.reconciles
    wait_for("two sweeps", lambda: running.controller.counters.reconciles >= reconciles + 2)
    assert running.controller.counters.status_writes == writes, "judged once: nothing rewritten on each pass"
    within = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=site.CLOCK_SKEW / 3)  # a slightly fast clock is fine
    report = _report(digest, reportedAt=within.strftime("%Y-%m-%dT%H:%M:%SZ"))
    admin.request("PATCH", path, body={"status": {site.STATUS_AGENT: report}}, content_type=kube.MERGE_PATCH)
    wait_phase(admin, "store-2", site.Phase.IN_PROGRESS)


# --- the metrics: generated reports, every exported value plausible ----------------------------------------------


def _site(index: int, seconds: float, reported: dt.datetime) -> dict[str, Any]:
    agent = {
        "reportedAt": reported.isoformat().replace("+00:00", "Z"), "runState": "done", "siteConfigDigest": "d",
        "steps": [{"name": "network", "state": "done", "seconds": seconds}],
    }  # fmt: skip
    return {
        "metadata": {"namespace": NS, "name": f"s-{index}"},
        "status": {"phase": "Relocated", site.STATUS_AGENT: agent},
    }


def test_the_metrics_export_no_implausible_duration_or_age() -> None:
    rng = random.Random(SEED)
    hostile = [math.nan, math.inf, -math.inf, -1.0, 1e300, -1e300, float(site.MAX_SECONDS) * 2]
    metrics = FleetMetrics(now=lambda: NOW)
    cases = 400
    for index in range(cases):
        seconds = rng.choice(hostile) if index % 2 else rng.uniform(0, 7200)
        skew = rng.choice([-1e6, -3600, -60, 0, 60, 10 * 86400 * 365])
        metrics.observe(_site(index, seconds, NOW + dt.timedelta(seconds=-skew)))
    text = _exposition(metrics)
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith("snoreloc_fleet_"):
            continue
        value = float(line.rsplit(" ", 1)[1])
        assert math.isfinite(value) and value >= 0, line
        if "_sum" in line:
            assert value <= cases * site.MAX_SECONDS * 30, line
    for value in hostile:
        assert plausible(value) is None
    assert plausible(60.0) == 60.0
    future = fleetstate.Row(NS, "f", "Relocated", reported_at=NOW + dt.timedelta(seconds=site.CLOCK_SKEW + 1))
    assert age(future, NOW) is None
    assert age(fleetstate.Row(NS, "g", "Relocated", reported_at=NOW + dt.timedelta(seconds=30)), NOW) == 0.0


def _exposition(metrics: FleetMetrics) -> str:
    from prometheus_client import generate_latest  # noqa: PLC0415

    return generate_latest(metrics.registry).decode()

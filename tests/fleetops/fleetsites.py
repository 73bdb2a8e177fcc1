"""Site objects as the hub holds them, in every phase, for the fleet readers' tests (status, why, report, metrics).

The shapes come from `snoreloc_fleet.resource.site` (phases, reasons, status keys) and the node's report from the
agent's own `snoreloc.engine.hubreport.snapshot` field names; values are made up per site so counts can be checked.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from snoreloc_fleet.resource import site

STEPS = ("preflight", "network", "kubelet-start", "api-wait", "certificates", "domain", "settle", "routes")
NOW = dt.datetime(2026, 11, 24, 22, 0, tzinfo=dt.UTC)


def iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def report(
    state: str,
    *,
    reported: dt.datetime,
    seconds: float = 60.0,
    upto: int = len(STEPS),
    failed_step: str | None = None,
    waiting: str | None = None,
) -> dict[str, Any]:
    """A node report: `upto` steps done (each `seconds` long, settle three times that), then the rest."""
    steps: list[dict[str, Any]] = []
    for index, name in enumerate(STEPS):
        length = seconds * (3 if name == "settle" else 1)
        if index < upto:
            steps.append({"name": name, "state": "done", "seconds": length})
        elif index == upto and failed_step == name:
            steps.append({"name": name, "state": "failed", "seconds": length / 2})
        elif index == upto and state == "running":
            steps.append({"name": name, "state": "running", "seconds": None})
        else:
            steps.append({"name": name, "state": "pending", "seconds": None})
    current = STEPS[min(upto, len(STEPS) - 1)]
    return {
        "reportedAt": iso(reported),
        "agentVersion": "0.1.0",
        "source": "node",
        "siteConfigDigest": "sha256:" + "0" * 64,
        "runState": state,
        "step": current,
        "stepsDone": upto,
        "stepsTotal": len(STEPS),
        "todo": {"failed": "re-insert the stick and run `snoreloc run` again", "running": "wait"}.get(state, ""),
        "steps": steps,
        "warnings": [],
        "waiting": {"step": current, "what": waiting, "elapsedSeconds": 30.0, "budgetSeconds": 600.0}
        if waiting
        else None,
        "failure": {"step": failed_step, "message": f"{failed_step} timed out", "hint": "check the node's network"}
        if failed_step
        else None,
        "exitCode": 70 if failed_step else (0 if state == "done" else None),
    }


def site_obj(
    name: str,
    phase: site.Phase,
    *,
    namespace: str = "fleet-emea",
    reason: str = "",
    agent: dict[str, Any] | None = None,
    errors: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {site.STATUS_PHASE: phase.value, site.STATUS_REASON: reason}
    if agent is not None:
        status[site.STATUS_AGENT] = agent
    if errors is not None:
        status[site.STATUS_VALIDATION] = {"errors": errors, "warnings": [], "more": 0}
    return {
        "apiVersion": site.API_VERSION,
        "kind": site.KIND,
        "metadata": {"name": name, "namespace": namespace, "labels": {site.PHASE_LABEL: phase.value}},
        "spec": {"siteConfig": {"domain": f"sno.{name}.example.com"}},
        "status": status,
    }


def fleet(now: dt.datetime = NOW) -> list[dict[str, Any]]:
    """A fleet of 12: 5 relocated (one over budget), 2 failed at settle, 1 failed at api-wait, 1 running, 1 silent
    (stale), 1 invalid, 1 ready."""

    def ago(minutes: int) -> dt.datetime:
        return now - dt.timedelta(minutes=minutes)

    done, failed, running, silent = site.Reason.DONE, site.Reason.RUN_FAILED, site.Reason.RUNNING, site.Reason.SILENT
    reported: list[tuple[int, site.Phase, site.Reason, dict[str, Any]]] = [
        *(
            (n, site.Phase.RELOCATED, done, report("done", reported=ago(30), seconds=60.0 + 10 * n))
            for n in range(1, 5)
        ),
        (5, site.Phase.RELOCATED, done, report("done", reported=ago(5), seconds=150.0)),  # 25 min: over budget
        *(
            (n, site.Phase.FAILED, failed, report("failed", reported=ago(50), upto=6, failed_step="settle"))
            for n in (6, 7)
        ),
        (8, site.Phase.FAILED, failed, report("failed", reported=ago(90), upto=3, failed_step="api-wait")),
        (
            9,
            site.Phase.IN_PROGRESS,
            running,
            report("running", reported=ago(2), upto=6, waiting="the apiserver rollout"),
        ),
        (10, site.Phase.STALE, silent, report("running", reported=ago(47), upto=3)),
    ]
    sites = [site_obj(f"store-{n:04d}", phase, reason=reason, agent=agent) for n, phase, reason, agent in reported]
    invalid = [{"path": "spec.domain", "line": 3, "message": "has an empty label"}]
    sites.append(site_obj("store-0011", site.Phase.INVALID, reason=site.Reason.INVALID_SITE_CONFIG, errors=invalid))
    sites.append(site_obj("store-0012", site.Phase.READY, reason=site.Reason.CREDENTIAL_ISSUED))
    return sites

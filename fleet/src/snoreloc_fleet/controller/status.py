"""A Site's status from what the controller found: pure functions, no API, so every phase is tested by table.

Inputs: the checked medium (`sitemedium.Checked`), the credential issued (or why none), the node's report as it
stands in `status.agent`, the conditions already there (a condition keeps its `lastTransitionTime` until its status
changes), and the time. Output: the controller's part of the status; `status.agent` is the node's and is never
written here.

The conditions say what the controller judges (valid, issued, reporting or silent, relocated, failed) and never
repeat what only the node's report moves (its `reportedAt`, its step, its steps done): those are in `status.agent`,
which the printer columns and `fleet why` read. So a report that moves the step and changes no judgement leaves the
controller's part unchanged, and the reconcile writes nothing for it (issue 23: one write per report, the node's).

Phases: Invalid (a name, file name, size or depth is refused before anything is read, the agent's rules refuse the
site-config, an input is missing, or a secret is inline), Ready (valid, no report yet, whether or not its stick was
asked for: MediaReady says; also after an edit, until the node runs the new site-config), InProgress (the node reports a
run), Stale (it reported a run in progress, then nothing for `stale_after`, or for its wait's budget plus five minutes
when that is longer; or its report is dated more than `site.CLOCK_SKEW` ahead of the hub's clock, reason ClockAhead: a
time that cannot grow old is not trusted), Relocated (done, with the digest the hub issued), Failed (failed, partial or
rolled back, with the digest the hub issued).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from snoreloc.siblings import errors, redact, sanitize
from snoreloc_fleet.hub.sitemedium import Checked
from snoreloc_fleet.resource import delivery, site
from snoreloc_fleet.resource.site import Condition as Cond
from snoreloc_fleet.resource.site import Phase, Reason

WAIT_GRACE = 300.0


@dataclass(frozen=True)
class Inputs:
    """Everything the status is derived from."""

    generation: int
    checked: Checked | None  # None: suspended
    credential: Mapping[str, str] | None  # the credential's status block; None: none issued
    reporting_enabled: bool
    agent: Mapping[str, Any] | None
    previous: Sequence[Mapping[str, Any]]  # the conditions already in status
    now: dt.datetime
    stale_after: float = 900.0
    requested: bool = True  # a stick was asked for (the media-requested annotation): only then is a credential issued
    admin_access: Mapping[str, Any] | None = None  # `adminaccess.Keys.status()`: public facts; None: not asked for
    held: str = ""  # the Site's wave holds it (its gate's wave, batch and cause): no credential is issued
    shelf: site.Horizon | None = None  # the node's horizon, reported or from the depot's seal record (issue 37)
    delivery: Mapping[str, Any] | None = None  # a BMC-delivered Site's `status.delivery` (None: a stick site)


def iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def when(text: object) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(str(text).replace("Z", "+00:00")) if text else None
    except ValueError:
        return None


def said(text: object, limit: int) -> str:
    """Text the controller writes to a Site's status or an Event: secrets masked (`snoreloc.redact`: a Site's field
    may carry a credential, and validation quotes fields), control characters shown as escapes (the status schema
    refuses them), cut to `limit`."""
    return sanitize.visible(redact.redact(str(text)))[:limit]


def _finding(problem: errors.Problem) -> dict[str, Any]:
    found: dict[str, Any] = {
        "path": said(problem.path, site.MAX_FINDING_PATH),
        "message": said(problem.message, site.MAX_FINDING_MESSAGE),
    }
    if problem.line is not None:
        found["line"] = problem.line
    return found


def validation(checked: Checked) -> dict[str, Any]:
    """The findings, bounded (`more` counts what did not fit)."""
    problems = [*checked.refused, *checked.inline, *checked.missing, *checked.problems]
    kept = problems[: site.MAX_FINDINGS]
    warnings = list(checked.warnings[: site.MAX_FINDING_WARNINGS])
    more = len(problems) - len(kept) + len(checked.warnings) - len(warnings)
    return {"errors": [_finding(p) for p in kept], "warnings": [_finding(p) for p in warnings], "more": more}


def _summary(problems: Sequence[errors.Problem]) -> str:
    first = problems[0].render()
    rest = f" (and {len(problems) - 1} more: see status.validation)" if len(problems) > 1 else ""
    return first + rest


def _validated(checked: Checked) -> tuple[bool, Reason, str]:
    if checked.refused:
        return False, Reason.INVALID_SPEC, _summary(checked.refused)
    if checked.inline:
        return False, Reason.INLINE_SECRET, _summary(checked.inline)
    if checked.missing:
        return False, Reason.MISSING_INPUT, _summary(checked.missing)
    if checked.problems:
        return False, Reason.INVALID_SITE_CONFIG, _summary(checked.problems)
    note = f" ({len(checked.warnings)} warnings)" if checked.warnings else ""
    return True, Reason.VALID, f"the site-config passes every rule of `snoreloc validate`{note}"


def _media_ready(inputs: Inputs, valid: bool) -> tuple[bool, Reason, str]:
    if not valid:
        return False, Reason.NOT_VALID, "fix the findings in status.validation first"
    if inputs.held:
        return False, Reason.HELD, f"held by the fleet: {inputs.held}"
    if not inputs.reporting_enabled:
        return True, Reason.REPORTING_DISABLED, "make the stick: it reports to no hub (spec.report.enabled is false)"
    if inputs.credential is None and not inputs.requested:
        return (
            False,
            Reason.NOT_REQUESTED,
            "no stick asked for yet: `snoreloc fleet make-media SITE` asks for the "
            "site's reporting credential and writes the stick",
        )
    if inputs.credential is None:
        return (
            False,
            Reason.REVOKED,
            "the reporting token was revoked (its binding Secret deleted): `snoreloc fleet "
            "make-media SITE` asks for a new one, on a new stick",
        )
    expires = inputs.credential.get("expiresAt", "")
    return True, Reason.CREDENTIAL_ISSUED, f"make the stick (snoreloc fleet make-media); its token expires {expires}"


def ahead(agent: Mapping[str, Any], now: dt.datetime) -> float:
    """Seconds the report's `reportedAt` is ahead of the hub's clock beyond `site.CLOCK_SKEW` (0: plausible). Such a
    time is not trusted: measured from it, a silent node would never turn Stale (see `_run`)."""
    reported = when(agent.get("reportedAt"))
    if reported is None or reported.tzinfo is None:
        return 0.0
    over = (reported - now).total_seconds()
    return over if over > site.CLOCK_SKEW else 0.0


def _stale(agent: Mapping[str, Any], inputs: Inputs) -> bool:
    reported = when(agent.get("reportedAt"))
    if agent.get("runState") != "running" or reported is None or reported.tzinfo is None:
        return False
    limit = inputs.stale_after
    waiting = agent.get("waiting")
    if waiting:  # a long wait reports at least once a minute, but a node may be cut off while it lasts
        left = float(waiting.get("budgetSeconds") or 0.0) - float(waiting.get("elapsedSeconds") or 0.0)
        limit = max(limit, left + WAIT_GRACE)
    return (inputs.now - reported).total_seconds() > limit


@dataclass(frozen=True)
class _Run:
    """What the node's report says, against the digest the hub issued."""

    reporting: tuple[bool, Reason, str]
    relocated: tuple[bool, Reason, str]
    failed: tuple[bool, Reason, str]
    phase: Phase
    reason: Reason


def _run(inputs: Inputs, digest: str, ready: bool) -> _Run:
    agent = inputs.agent or {}
    idle = Phase.READY if ready else Phase.PENDING
    if not agent:
        quiet = (False, Reason.NO_REPORT, "no report from the node yet")
        return _Run(quiet, quiet, (False, Reason.NOT_FAILED, "no report"), idle, Reason.NO_REPORT)
    state, step = str(agent.get("runState", "")), str(agent.get("step", ""))
    if agent.get("source") == "imported":
        reporting = (True, Reason.IMPORTED, "its last report was carried back by hand: status.agent")
    else:
        reporting = (True, Reason.REPORTED, "the node reports: its last report is status.agent")
    if _stale(agent, inputs):
        reporting = (False, Reason.SILENT, f"no report since {agent.get('reportedAt')} while the run was at {step}")
    if ahead(agent, inputs.now):  # the message names no number of seconds: it would change, and be written, each pass
        message = (
            f"the node's last report is dated {agent.get('reportedAt')}, more than {site.CLOCK_SKEW:.0f}s ahead of "
            "the hub's clock: its time is not trusted (a run in progress counts as silent); set the node's clock (NTP)"
        )
        reporting = (False, Reason.CLOCK_AHEAD, message)
    current = agent.get("siteConfigDigest") == digest
    if not current:
        message = f"the node ran {agent.get('siteConfigDigest')}; this Site now describes {digest}: make a new stick"
        mismatch = (False, Reason.DIGEST_MISMATCH, message)
        if state == "running":
            return _Run(reporting, mismatch, (False, Reason.NOT_FAILED, message), Phase.IN_PROGRESS, Reason.RUNNING)
        return _Run(reporting, mismatch, (False, Reason.NOT_FAILED, message), idle, Reason.DIGEST_MISMATCH)
    failure = agent.get("failure") or {}
    if state in site.RUN_DONE:
        done = (True, Reason.DONE, f"relocated ({state}) with site-config {digest}")
        return _Run(reporting, done, (False, Reason.NOT_FAILED, state), Phase.RELOCATED, Reason.DONE)
    if state in site.RUN_FAILED:
        what = f"{state} at {failure.get('step') or step}: {failure.get('message', '')}"
        return _Run(
            reporting,
            (False, Reason.RUN_FAILED, what),
            (True, Reason.RUN_FAILED, what),
            Phase.FAILED,
            Reason.RUN_FAILED,
        )
    running = (False, Reason.RUNNING, f"the run is {state} (its step: status.agent.step)")
    phase = Phase.STALE if reporting[1] in (Reason.SILENT, Reason.CLOCK_AHEAD) else Phase.IN_PROGRESS
    reason = reporting[1] if phase is Phase.STALE else Reason.RUNNING
    return _Run(reporting, running, (False, Reason.NOT_FAILED, state), phase, reason)


def _condition(
    kind: Cond, verdict: tuple[bool, Reason | str, str], inputs: Inputs, previous: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    status = "True" if verdict[0] else "False"
    before = previous.get(kind.value) or {}
    since = before.get("lastTransitionTime") if before.get("status") == status else None
    return {
        "type": kind.value,
        "status": status,
        "observedGeneration": inputs.generation,
        "lastTransitionTime": since or iso(inputs.now),
        "reason": str(verdict[1]),
        "message": said(verdict[2], site.MAX_CONDITION_MESSAGE),
    }


def _bmc_verdicts(record: Mapping[str, Any], current: str) -> dict[Cond, tuple[bool, Reason | str, str]]:
    """The BMC cycle's conditions from its record (`status.delivery`, `controller.bmccycle`): where the image is."""
    state, digest = str(record.get("state") or ""), str(record.get("digest") or "")
    problem, message = str(record.get("problem") or ""), str(record.get("message") or "")
    inserted: tuple[bool, Reason | str, str] = (False, Reason.NOT_INSERTED, "waits for MediaReady (valid, batch open)")
    read: tuple[bool, Reason | str, str] = (False, Reason.NOT_INSERTED, "nothing inserted yet")
    ejected: tuple[bool, Reason | str, str] = (False, Reason.NOT_INSERTED, "nothing inserted yet")
    if state == delivery.State.NO_IMAGE_SERVER:
        inserted = (False, Reason.NO_IMAGE_SERVER, message)
    elif state == delivery.State.FAILED:
        inserted = (False, problem or Reason.NOT_INSERTED, f"{message} (next attempt {record.get('retryAt')})")
    elif state == delivery.State.INSERTED:
        inserted = (True, Reason.INSERTED, f"{digest} inserted at {record.get('insertedAt')}")
        read = (False, Reason.WAITING_FOR_NODE, f"waiting for the node's first report naming {digest}, until "
                f"{record.get('deadline')}; status.delivery.downloads counts the BMC's downloads")  # fmt: skip
        ejected = (False, Reason.INSERTED, "inserted: ejected once the node has read it")
        if problem:
            ejected = (False, problem, f"{message} (next attempt {record.get('retryAt')})")
    elif state in (delivery.State.EJECTED, delivery.State.TIMED_OUT):
        inserted = (False, Reason.EJECTED, f"{digest} ejected at {record.get('ejectedAt')}")
        ejected = (True, Reason.EJECTED, f"ejected at {record.get('ejectedAt')}; its URL answers 410")
        if current and current != digest:
            ejected = (True, Reason.EJECTED, f"{ejected[2]}; the Site now describes {current}: set the annotation "
                       "fleet.snoreloc.io/redeliver to a new value to insert it")  # fmt: skip
        read = (True, Reason.REPORTED, f"the node reported {digest} at {record.get('readAt')}")
        if state == delivery.State.TIMED_OUT:
            read = (False, Reason.READ_TIMEOUT, f"the node did not report {digest} by {record.get('deadline')}: "
                    "the image was ejected; check the server's console, then set the annotation "
                    "fleet.snoreloc.io/redeliver to a new value to insert it again")  # fmt: skip
    return {Cond.MEDIA_INSERTED: inserted, Cond.NODE_READ_MEDIUM: read, Cond.MEDIA_EJECTED: ejected}


def derive(inputs: Inputs) -> dict[str, Any]:
    """The controller's part of the Site's status."""
    previous = {str(c.get("type")): c for c in inputs.previous}
    base: dict[str, Any] = {site.STATUS_OBSERVED: inputs.generation}
    if inputs.checked is None:
        return {**base, site.STATUS_PHASE: Phase.PENDING.value, site.STATUS_REASON: Reason.SUSPENDED.value}
    base[site.STATUS_SHELF] = inputs.shelf.status() if inputs.shelf else {}
    checked = inputs.checked
    validated = _validated(checked)
    media = _media_ready(inputs, validated[0])
    run = _run(inputs, checked.digest, validated[0])
    verdicts: dict[Cond, tuple[bool, Reason | str, str]] = {
        Cond.VALIDATED: validated,
        Cond.MEDIA_READY: media,
        Cond.REPORTING: run.reporting,
        Cond.RELOCATED: run.relocated,
        Cond.FAILED: run.failed,
    }
    if inputs.delivery is not None:
        verdicts.update(_bmc_verdicts(inputs.delivery, checked.digest if validated[0] else ""))
    phase, reason = (run.phase, run.reason) if validated[0] else (Phase.INVALID, validated[1])
    status = {
        **base,
        site.STATUS_PHASE: phase.value,
        site.STATUS_REASON: reason.value,
        site.STATUS_CONDITIONS: [_condition(kind, v, inputs, previous) for kind, v in verdicts.items()],
        site.STATUS_VALIDATION: validation(checked),
        site.STATUS_MEDIA: {"digest": checked.digest, "files": list(checked.files)} if validated[0] else {},
        site.STATUS_CREDENTIAL: dict(inputs.credential or {}),
        site.STATUS_ADMIN_ACCESS: dict(inputs.admin_access or {}),
    }
    return status

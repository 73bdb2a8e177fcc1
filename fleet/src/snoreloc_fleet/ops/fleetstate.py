"""The fleet's state from its `Site` objects: one row per site, counts by phase and failure reason, what to act on.

Pure functions over the Sites as the hub serves them (`snoreloc_fleet.site` names every field), so `fleet status`,
`fleet why`, `fleet report` and the metrics read a Site one way and are tested without a hub. Nothing here keeps
a Site: a row holds the few fields the readers show, so 10,000 Sites are a few megabytes while they are counted.

- A site's *failure reason* is the controller's reason for a phase that needs someone (Invalid, Failed, Stale),
  with the step it happened in (`RunFailed at settle`), or the first invalid field (`InvalidSiteConfig at
  spec.domain`): specific enough to rank, general enough that one cause across many sites counts once.
- Its *relocation duration* is the sum of its steps' seconds in the node's report (the report carries each step's
  seconds, not when it started; the agent runs its steps one after another).
- It is *silent* when its run is in progress (InProgress or Stale) and its last report is older than the limit.
- The *re-run list* is every Failed or Stale site with the technician's line from its report.
"""

from __future__ import annotations

import collections
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from snoreloc_fleet import site

NEEDS_SOMEONE = frozenset((site.Phase.INVALID, site.Phase.FAILED, site.Phase.STALE))
RUNNING = frozenset((site.Phase.IN_PROGRESS, site.Phase.STALE))
RERUN = frozenset((site.Phase.FAILED, site.Phase.STALE))
BUDGET_SECONDS = 20 * 60  # a relocation's budget at a site (issue 23's alert "over the 20-minute budget")


@dataclass(frozen=True)
class Step:
    name: str
    state: str
    seconds: float | None


@dataclass(frozen=True)
class Row:
    """What the fleet readers show of one Site."""

    namespace: str
    name: str
    phase: str
    reason: str = ""
    step: str = ""
    run_state: str = ""
    reported_at: dt.datetime | None = None
    todo: str = ""
    failure: str = ""  # the failure reason (see the module's docstring); "" when the phase needs nobody
    steps: tuple[Step, ...] = field(default=(), repr=False)
    waiting: Mapping[str, Any] | None = field(default=None, repr=False)

    @property
    def duration(self) -> float | None:
        """Seconds the relocation took (done runs only)."""
        if self.run_state not in site.RUN_DONE or not self.steps:
            return None
        return sum(s.seconds or 0.0 for s in self.steps)

    def silent_for(self, now: dt.datetime) -> float | None:
        """Seconds since the last report, for a run in progress; None otherwise."""
        if self.phase not in RUNNING or self.reported_at is None:
            return None
        return max(0.0, (now - self.reported_at).total_seconds())

    def since_report(self, now: dt.datetime) -> float | None:
        return None if self.reported_at is None else max(0.0, (now - self.reported_at).total_seconds())


def when(text: object) -> dt.datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


# Decoded JSON holds plain dicts; testing for one first skips the slower abstract `Mapping` check, which was a
# fifth of `fleet status`'s time per Site (eight steps each).


def _is_mapping(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if _is_mapping(value) else {}


def _steps(agent: Mapping[str, Any]) -> tuple[Step, ...]:
    return tuple(
        Step(str(entry.get("name", "")), str(entry.get("state", "")), _number(entry.get("seconds")))
        for entry in agent.get("steps") or ()
        if _is_mapping(entry)
    )


def _number(value: Any) -> float | None:
    if type(value) is float:
        return value
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def failure_reason(phase: str, reason: str, status: Mapping[str, Any]) -> str:
    """`RunFailed at settle`, `InvalidSiteConfig at spec.domain`, `Silent at api-wait`; "" when nothing is wrong."""
    if phase not in NEEDS_SOMEONE:
        return ""
    agent = _mapping(status.get(site.STATUS_AGENT))
    if phase == site.Phase.INVALID:
        errors = _mapping(status.get(site.STATUS_VALIDATION)).get("errors") or []
        first = _mapping(errors[0]) if errors else {}
        where = str(first.get("path") or "")
        return f"{reason or 'Invalid'}" + (f" at {where}" if where else "")
    step = str(_mapping(agent.get("failure")).get("step") or agent.get("step") or "")
    return f"{reason or phase}" + (f" at {step}" if step else "")


def row(obj: Mapping[str, Any], *, steps: bool = True) -> Row:
    """One Site as the fleet readers see it; without its steps (and so its duration) when `steps` is false, for
    readers that show neither (`fleet status`: the steps are most of the work per Site)."""
    meta = _mapping(obj.get("metadata"))
    status = _mapping(obj.get("status"))
    agent = _mapping(status.get(site.STATUS_AGENT))
    phase = str(status.get(site.STATUS_PHASE) or site.Phase.PENDING)
    reason = str(status.get(site.STATUS_REASON) or "")
    waiting = agent.get("waiting")
    return Row(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        phase=phase,
        reason=reason,
        step=str(agent.get("step") or ""),
        run_state=str(agent.get("runState") or ""),
        reported_at=when(agent.get("reportedAt")),
        todo=str(agent.get("todo") or ""),
        failure=failure_reason(phase, reason, status),
        steps=_steps(agent) if steps else (),
        waiting=waiting if isinstance(waiting, Mapping) else None,
    )


@dataclass(frozen=True)
class Summary:
    """The fleet in numbers: sites by phase, failure reasons ranked, the silent ones, the ones to re-run."""

    total: int
    by_phase: Mapping[str, int]
    reasons: Sequence[tuple[str, int]]  # most frequent first
    silent: Sequence[Row]  # longest silent first
    rerun: Sequence[Row]
    silent_after: float


def summarize(rows: Iterable[Row], now: dt.datetime, *, silent_after: float) -> Summary:
    phases: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()
    silent: list[tuple[float, Row]] = []
    rerun: list[Row] = []
    total = 0
    for item in rows:
        total += 1
        phases[item.phase] += 1
        if item.failure:
            reasons[item.failure] += 1
        quiet = item.silent_for(now)
        if quiet is not None and quiet > silent_after:
            silent.append((quiet, item))
        if item.phase in RERUN:
            rerun.append(item)
    ordered = {p.value: phases.get(p.value, 0) for p in site.Phase}
    ordered.update({p: n for p, n in phases.items() if p not in ordered})
    return Summary(
        total=total,
        by_phase=ordered,
        reasons=sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])),
        silent=[r for _, r in sorted(silent, key=lambda pair: (-pair[0], pair[1].name))],
        rerun=sorted(rerun, key=lambda r: (r.namespace, r.name)),
        silent_after=silent_after,
    )


def ago(seconds: float | None) -> str:
    """`42s`, `17m`, `3h05m`, `2d4h`: how long ago, for a table."""
    if seconds is None:
        return "never"
    value = int(seconds)
    if value < 60:
        return f"{value}s"
    if value < 3600:
        return f"{value // 60}m"
    if value < 86400:
        return f"{value // 3600}h{value % 3600 // 60:02d}m"
    return f"{value // 86400}d{value % 86400 // 3600}h"


def duration_text(text: str) -> float:
    """`900`, `90s`, `15m`, `2h`, `1d` -> seconds (ValueError otherwise)."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    text = text.strip()
    if text and text[-1] in units:
        return float(text[:-1]) * units[text[-1]]
    return float(text)

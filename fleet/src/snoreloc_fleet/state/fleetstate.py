"""The fleet's state from its `Site` objects: one row per site, counts by phase and failure reason, what to act on.

Pure functions over the Sites as the hub serves them (`snoreloc_fleet.resource.site` names every field), so
`fleet status`, `fleet why`, `fleet report` and the metrics read a Site one way and are tested without a hub.
Nothing here keeps a Site: a row holds the few fields the readers show, so 10,000 Sites are a few megabytes while
they are counted.

- A site's *failure reason* is the controller's reason for a phase that needs someone (Invalid, Failed, Stale),
  with the step it happened in (`RunFailed at settle`), or the first invalid field (`InvalidSiteConfig at
  spec.domain`): specific enough to rank, general enough that one cause across many sites counts once.
- Its *relocation duration* is the sum of its steps' seconds in the node's report (the report carries each step's
  seconds, not when it started; the agent runs its steps one after another).
- It is *silent* when its run is in progress (InProgress or Stale) and its last report is older than the limit.
- The *re-run list* is every Failed or Stale site with the technician's line from its report.

A node's report (`status.agent`) is data, not trust: it reaches the readers from the node, from a file carried
back by hand (`fleet import-report`) or from an older hub whose schema bounded nothing. `report` is the one place
that reads it, into plausible values: a number of seconds between 0 and `MAX_SECONDS` (a week), a count between 0
and `MAX_COUNT`, an exit code between 0 and 255, a report time no later than the reader's clock plus `SKEW`, text
no longer than the agent's own bounds (`snoreloc.engine.hubreport`), lists and mappings where they belong. A value
outside those is *implausible*: read as unknown (None, or empty) and its field named in `Report.implausible`, so
no reader crashes on it or puts it in a figure, and each can say which Sites reported nonsense.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from snoreloc.siblings import hubreport, sanitize
from snoreloc_fleet.resource import site

NEEDS_SOMEONE = frozenset((site.Phase.INVALID, site.Phase.FAILED, site.Phase.STALE))
RUNNING = frozenset((site.Phase.IN_PROGRESS, site.Phase.STALE))
RERUN = frozenset((site.Phase.FAILED, site.Phase.STALE))
BUDGET_SECONDS = 20 * 60  # a relocation's budget at a site (issue 23's alert "over the 20-minute budget")
MAX_SECONDS = 7 * 86400.0  # a plausible step, wait or budget: no relocation step runs for a week
MAX_COUNT = 1000  # a plausible count of steps (the agent has about a dozen)
SKEW = 300.0  # seconds a report may be dated ahead of the reader's clock (clocks differ a little)
MAX_PHASE = 64  # the longest phase or reason shown (the schema's reason is 64 characters)


@dataclass(frozen=True)
class Step:
    name: str
    state: str
    seconds: float | None


@dataclass(frozen=True)
class Interval:
    """A rollout or a wait the node reported, in seconds after its run started (`end` None: still going)."""

    name: str
    start: float
    end: float | None
    what: str = ""


@dataclass(frozen=True)
class Waiting:
    """The wait in progress the node reported; a number it gave implausibly is None."""

    step: str
    what: str
    elapsed: float | None
    budget: float | None


@dataclass(frozen=True)
class Failure:
    step: str
    message: str
    hint: str


@dataclass(frozen=True)
class Finding:
    """One validation error of an Invalid Site: the field, its line in the site-config, the message, and the
    inventory cell that filled the field ("" when the inventory did not, or the Site was not rendered)."""

    path: str
    message: str
    line: int | None = None
    cell: str = ""


@dataclass(frozen=True)
class Report:
    """A node's report (`status.agent`) as plausible values; `implausible` names each field read as unknown."""

    reported_at: dt.datetime | None = None
    agent_version: str = ""
    source: str = ""
    run_state: str = ""
    step: str = ""
    steps_done: int | None = None
    steps_total: int | None = None
    todo: str = ""
    steps: tuple[Step, ...] = ()
    rollouts: tuple[Interval, ...] = ()
    waits: tuple[Interval, ...] = ()
    warnings: tuple[str, ...] = ()
    waiting: Waiting | None = None
    failure: Failure | None = None
    exit_code: int | None = None
    implausible: tuple[str, ...] = ()


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
    waiting: Waiting | None = field(default=None, repr=False)
    rollouts: tuple[Interval, ...] = field(default=(), repr=False)  # what the report's timeline draws
    waits: tuple[Interval, ...] = field(default=(), repr=False)
    implausible: tuple[str, ...] = ()  # the report's fields read as unknown (see the module's docstring)
    # what `fleet report` puts before the owner (`owner_facts`): empty where a reader asked for no steps
    warnings: tuple[str, ...] = field(default=(), repr=False)
    detail: Failure | None = field(default=None, repr=False)  # the node's failure: step, message, hint
    findings: tuple[Finding, ...] = field(default=(), repr=False)  # an Invalid Site's errors
    stick: str = ""  # when `fleet make-media` asked for the site's stick ("" when never)
    token_expires: dt.datetime | None = None  # when the site's reporting token expires (None: no token issued)
    horizon: site.Horizon | None = None  # the date its node must boot by, reported or from the depot (issue 37)
    wave: str = ""  # the Wave its gate names ("" when in none)

    @property
    def to_relocate(self) -> bool:
        """Whether its node is still to be relocated (any phase but Relocated)."""
        return self.phase != site.Phase.RELOCATED

    @property
    def shelved(self) -> bool:
        """Whether its node is still to be relocated with a horizon known: what `fleet status --shelf` lists."""
        return self.horizon is not None and self.to_relocate

    @property
    def duration(self) -> float | None:
        """Seconds the relocation took (done runs only; unknown when any of its steps was implausible)."""
        if self.run_state not in site.RUN_DONE or not self.steps:
            return None
        if any(".steps" in name for name in self.implausible):
            return None
        return sum(s.seconds or 0.0 for s in self.steps)

    def silent_for(self, now: dt.datetime) -> float | None:
        """Seconds since the last report, for a run in progress; None otherwise."""
        if self.phase not in RUNNING or self.reported_at is None:
            return None
        return max(0.0, (now - self.reported_at).total_seconds())

    def since_report(self, now: dt.datetime) -> float | None:
        return None if self.reported_at is None else max(0.0, (now - self.reported_at).total_seconds())

    def report_age(self, now: dt.datetime) -> str:
        """How long ago the node last reported, for a table: `47m`, `never`, or `?` when its time was implausible."""
        if self.reported_at is None and any(name.endswith(".reportedAt") for name in self.implausible):
            return "?"
        return ago(self.since_report(now))


def when(text: object, now: dt.datetime | None = None) -> dt.datetime | None:
    """A report's time (RFC 3339; UTC when it names no offset); None when it is none, or (given `now`) dated more
    than `SKEW` after `now`: a node whose clock runs ahead would otherwise look fresh for ever, and its report newer
    than every real one after it."""
    moment = site.parse_time(text)
    if moment is None or (now is not None and (moment - now).total_seconds() > SKEW):
        return None
    return moment


# Decoded JSON holds plain dicts; testing for one first skips the slower abstract `Mapping` check, which was a
# fifth of `fleet status`'s time per Site (eight steps each).


def _is_mapping(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)


def mapping_of(value: Any) -> Mapping[str, Any]:
    """`value` if it is a mapping, else an empty one: a status field of the wrong shape reads as absent."""
    return value if _is_mapping(value) else {}


_mapping = mapping_of


def _number(value: Any) -> float | None:
    """A JSON number as a float (an integer too large for one is infinite); None for anything else."""
    if type(value) is float:
        return value
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        return float(value)
    except OverflowError:  # JSON integers have no bound: 10**400 is a valid one
        return math.inf if value > 0 else -math.inf


class _Reader:
    """Reads one report's fields into plausible values, naming each implausible one (`where` + its field)."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.implausible: list[str] = []

    def flag(self, path: str) -> None:
        self.implausible.append(f"{self.where}.{path}")

    def text(self, value: Any, path: str, limit: int = hubreport.MAX_TEXT) -> str:
        """A string (a number is its text); a longer one is cut at `limit`, anything else is ""; both flagged."""
        if type(value) is str:
            if len(value) <= limit:
                return value
            self.flag(path)
            return value[:limit]
        if value is None:
            return ""
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        self.flag(path)
        return ""

    def seconds(self, value: Any, path: str) -> float | None:
        """Seconds between 0 and `MAX_SECONDS`; None when absent, or flagged when not a number or out of range."""
        if value is None:
            return None
        number = _number(value)
        if number is None or not 0.0 <= number <= MAX_SECONDS:  # NaN fails the comparison too
            self.flag(path)
            return None
        return number

    def count(self, value: Any, path: str, top: int = MAX_COUNT) -> int | None:
        """A whole number between 0 and `top`; None when absent, or flagged."""
        if value is None:
            return None
        number = _number(value)
        if number is None or not 0 <= number <= top or not number.is_integer():
            self.flag(path)
            return None
        return int(number)

    def mapping(self, value: Any, path: str) -> Mapping[str, Any] | None:
        if value is None:
            return None
        if _is_mapping(value):
            return value  # type: ignore[no-any-return]
        self.flag(path)
        return None

    def items(self, value: Any, path: str, limit: int) -> list[Any]:
        """A list of at most `limit` items (the rest dropped, flagged); anything else is empty, flagged."""
        if value is None:
            return []
        if type(value) is not list:
            self.flag(path)
            return []
        if len(value) > limit:
            self.flag(path)
        return value[:limit]


def _steps(read: _Reader, value: Any) -> tuple[Step, ...]:
    steps = []
    for index, entry in enumerate(read.items(value, "steps", hubreport.MAX_STEPS)):
        where = f"steps[{index}]"
        mapping = read.mapping(entry, where)
        if mapping is None:
            continue
        name = read.text(mapping.get("name"), f"{where}.name", hubreport.MAX_NAME)
        state = read.text(mapping.get("state"), f"{where}.state", hubreport.MAX_NAME)
        steps.append(Step(name, state, read.seconds(mapping.get("seconds"), f"{where}.seconds")))
    return tuple(steps)


def _intervals(read: _Reader, value: Any, path: str) -> tuple[Interval, ...]:
    """The report's rollouts or waits; an entry with an implausible start, or ending before it starts, is dropped
    (flagged)."""
    found = []
    for index, entry in enumerate(read.items(value, path, hubreport.MAX_INTERVALS)):
        where = f"{path}[{index}]"
        mapping = read.mapping(entry, where)
        if mapping is None:
            continue
        start = read.seconds(mapping.get("startSeconds"), f"{where}.startSeconds")
        end = read.seconds(mapping.get("endSeconds"), f"{where}.endSeconds")
        if start is None or (end is not None and end < start):
            read.flag(where)
            continue
        name = read.text(mapping.get("name"), f"{where}.name", hubreport.MAX_NAME)
        found.append(Interval(name, start, end, read.text(mapping.get("what"), f"{where}.what")))
    return tuple(found)


def _waiting(read: _Reader, value: Any) -> Waiting | None:
    mapping = read.mapping(value, "waiting")
    if mapping is None:
        return None
    return Waiting(
        step=read.text(mapping.get("step"), "waiting.step", hubreport.MAX_NAME),
        what=read.text(mapping.get("what"), "waiting.what"),
        elapsed=read.seconds(mapping.get("elapsedSeconds"), "waiting.elapsedSeconds"),
        budget=read.seconds(mapping.get("budgetSeconds"), "waiting.budgetSeconds"),
    )


def _failure(read: _Reader, value: Any) -> Failure | None:
    mapping = read.mapping(value, "failure")
    if mapping is None:
        return None
    return Failure(
        step=read.text(mapping.get("step"), "failure.step", hubreport.MAX_NAME),
        message=read.text(mapping.get("message"), "failure.message"),
        hint=read.text(mapping.get("hint"), "failure.hint"),
    )


def report(agent: Any, now: dt.datetime, *, steps: bool = True, where: str = "status.agent") -> Report | None:
    """A node's report as plausible values (see the module's docstring); None when there is none (absent, null or
    empty). Without its steps, counts, warnings and exit code when `steps` is false (`fleet status` shows none)."""
    if not agent:
        return None
    read = _Reader(where)
    if not _is_mapping(agent):
        return Report(implausible=(where,))
    raw_time = agent.get("reportedAt")
    reported_at = when(raw_time, now)
    if raw_time is not None and reported_at is None:
        read.flag("reportedAt")
    text, name = read.text, hubreport.MAX_NAME
    full: dict[str, Any] = {}
    if steps:
        full = {
            "agent_version": text(agent.get("agentVersion"), "agentVersion", name),
            "source": text(agent.get("source"), "source", name),
            "steps_done": read.count(agent.get("stepsDone"), "stepsDone"),
            "steps_total": read.count(agent.get("stepsTotal"), "stepsTotal"),
            "steps": _steps(read, agent.get("steps")),
            "rollouts": _intervals(read, agent.get("rollouts"), "rollouts"),
            "waits": _intervals(read, agent.get("waits"), "waits"),
            "warnings": tuple(
                text(w, f"warnings[{i}]")
                for i, w in enumerate(read.items(agent.get("warnings"), "warnings", hubreport.MAX_WARNINGS))
            ),
            "exit_code": read.count(agent.get("exitCode"), "exitCode", 255),
        }
    shelf = agent.get(hubreport.SHELF_FIELD)
    if shelf is not None and site.horizon_of(shelf, site.SHELF_REPORTED) is None:
        read.flag(hubreport.SHELF_FIELD)
    return Report(
        reported_at=reported_at,
        run_state=text(agent.get("runState"), "runState", name),
        step=text(agent.get("step"), "step", name),
        todo=text(agent.get("todo"), "todo"),
        waiting=_waiting(read, agent.get("waiting")),
        failure=_failure(read, agent.get("failure")),
        **full,
        implausible=tuple(read.implausible),
    )


def failure_reason(phase: str, reason: str, status: Mapping[str, Any], agent: Report | None = None) -> str:
    """`RunFailed at settle`, `InvalidSiteConfig at spec.domain`, `Silent at api-wait`; "" when nothing is wrong."""
    if phase not in NEEDS_SOMEONE:
        return ""
    if phase == site.Phase.INVALID:
        errors = _mapping(status.get(site.STATUS_VALIDATION)).get("errors")
        first = _mapping(errors[0]) if type(errors) is list and errors else {}
        where = text_of(first.get("path"), hubreport.MAX_TEXT)
        return f"{reason or 'Invalid'}" + (f" at {where}" if where else "")
    if agent is None:
        agent = report(status.get(site.STATUS_AGENT), dt.datetime.now(dt.UTC), steps=False)
    failed = agent.failure if agent is not None else None
    step = (failed.step if failed else "") or (agent.step if agent else "")
    return f"{reason or phase}" + (f" at {step}" if step else "")


def text_of(value: Any, limit: int = hubreport.MAX_TEXT) -> str:
    """A scalar of a Site's status (phase, reason, a finding's path) as text of at most `limit` characters; "" for
    anything else (a list, a mapping)."""
    if type(value) is str:
        return value[:limit]
    if value is None or _is_mapping(value) or isinstance(value, list):
        return ""
    return str(value)[:limit]


_PHASES = frozenset(p.value for p in site.Phase)


def _phase(value: Any) -> str:
    """The Site's phase: one of `site.Phase`, or (an older or newer controller's) any other text, bounded and on
    one line: the metrics put it in a label."""
    if type(value) is str and value in _PHASES:
        return value
    return sanitize.label(text_of(value, MAX_PHASE)) or site.Phase.PENDING


_NO_REPORT = Report()


def row(obj: Mapping[str, Any], *, steps: bool = True, now: dt.datetime | None = None) -> Row:
    """One Site as the fleet readers see it; without its steps (and so its duration) when `steps` is false, for
    readers that show neither (`fleet status`: the steps are most of the work per Site). Its report's times are
    judged against `now` (the reader's clock when not given)."""
    meta = _mapping(obj.get("metadata"))
    status = _mapping(obj.get("status"))
    phase = _phase(status.get(site.STATUS_PHASE))
    reason = text_of(status.get(site.STATUS_REASON), MAX_PHASE)
    agent = report(status.get(site.STATUS_AGENT), now or dt.datetime.now(dt.UTC), steps=steps) or _NO_REPORT
    return Row(
        namespace=text_of(meta.get("namespace", ""), hubreport.MAX_NAME * 2),
        name=text_of(meta.get("name", ""), hubreport.MAX_NAME * 2),
        phase=phase,
        reason=reason,
        step=agent.step,
        run_state=agent.run_state,
        reported_at=agent.reported_at,
        todo=agent.todo,
        failure=failure_reason(phase, reason, status, agent),
        steps=agent.steps,
        waiting=agent.waiting,
        rollouts=agent.rollouts,
        waits=agent.waits,
        implausible=agent.implausible,
        **(owner_facts(meta, status, agent) if steps else {}),
        horizon=site.horizon(obj),
        wave=text_of(_mapping(status.get(site.STATUS_GATE)).get("wave"), hubreport.MAX_WAVE_NAME),
    )


def owner_facts(meta: Mapping[str, Any], status: Mapping[str, Any], agent: Report) -> dict[str, Any]:
    """The Row fields `fleet report` opens with: the node's warnings and failure, an Invalid Site's findings with
    their inventory cells, whether a stick was made and when the site's reporting token expires."""
    annotations = _mapping(meta.get("annotations"))
    credential = _mapping(status.get(site.STATUS_CREDENTIAL))
    return {
        "warnings": agent.warnings,
        "detail": agent.failure,
        "findings": findings(status, annotations.get(site.INVENTORY_CELLS)),
        "stick": text_of(annotations.get(site.MEDIA_REQUESTED), MAX_PHASE),
        "token_expires": when(credential.get("expiresAt")),
    }


def _cells(annotation: Any) -> Mapping[str, Any]:
    """The `site.INVENTORY_CELLS` annotation as a mapping; an unreadable or oversized one is empty."""
    if type(annotation) is not str or len(annotation) > site.MAX_INVENTORY_CELLS:
        return {}
    try:
        return _mapping(json.loads(annotation))
    except ValueError:
        return {}


def cell_of(path: str, cells: Mapping[str, Any]) -> Any:
    """The inventory cell behind the field `path`: its own, else the nearest enclosing field's (`spec.network` for
    `spec.network.interfaces[0]`), else the first of the fields inside it; None when the inventory filled none.
    The controller names a field of the Site (`spec.siteConfig.domain`), render one of the site-config
    (`spec.domain`)."""
    in_site = "spec.siteConfig."
    path = "spec." + path.removeprefix(in_site) if path.startswith(in_site) else path
    if path in cells:
        return cells[path]
    enclosing = [k for k in cells if path.startswith((f"{k}.", f"{k}["))]
    if enclosing:
        return cells[max(enclosing, key=len)]
    inside = sorted(k for k in cells if k.startswith((f"{path}.", f"{path}[")))
    return cells[inside[0]] if inside else None


def findings(status: Mapping[str, Any], annotation: Any = None) -> tuple[Finding, ...]:
    """The validation errors of a Site's status (at most `site.MAX_FINDINGS`), each with its inventory cell."""
    listed = _mapping(status.get(site.STATUS_VALIDATION)).get("errors")
    cells = _cells(annotation)
    out = []
    for entry in listed[: site.MAX_FINDINGS] if type(listed) is list else ():
        error = _mapping(entry)
        path = text_of(error.get("path"), site.MAX_FINDING_PATH)
        line = error.get("line")
        out.append(
            Finding(
                path=path,
                message=text_of(error.get("message"), site.MAX_FINDING_MESSAGE),
                line=line if type(line) is int and 0 < line <= site.MAX_LINE else None,
                cell=text_of(cell_of(path, cells), hubreport.MAX_TEXT),
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class Summary:
    """The fleet in numbers: sites by phase, failure reasons ranked, the silent ones, the ones to re-run."""

    total: int
    by_phase: Mapping[str, int]
    reasons: Sequence[tuple[str, int]]  # most frequent first
    silent: Sequence[Row]  # longest silent first
    rerun: Sequence[Row]
    silent_after: float
    implausible: Sequence[Row] = ()  # the sites whose report has an implausible value (read as unknown)


def summarize(rows: Iterable[Row], now: dt.datetime, *, silent_after: float) -> Summary:
    phases: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()
    silent: list[tuple[float, Row]] = []
    rerun: list[Row] = []
    implausible: list[Row] = []
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
        if item.implausible:
            implausible.append(item)
    ordered = {p.value: phases.get(p.value, 0) for p in site.Phase}
    ordered.update({p: n for p, n in phases.items() if p not in ordered})
    return Summary(
        total=total,
        by_phase=ordered,
        reasons=sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])),
        silent=[r for _, r in sorted(silent, key=lambda pair: (-pair[0], pair[1].name))],
        rerun=sorted(rerun, key=lambda r: (r.namespace, r.name)),
        silent_after=silent_after,
        implausible=sorted(implausible, key=lambda r: (r.namespace, r.name)),
    )


def shelf_order(rows: Iterable[Row]) -> list[Row]:
    """The Sites whose node is still to be relocated with a known horizon, the soonest must-boot-by date first:
    what must be shipped first (`fleet status --shelf`, the report's section)."""
    found = [r for r in rows if r.shelved]
    return sorted(found, key=lambda r: (r.horizon.must_boot_by if r.horizon else dt.datetime.max, r.namespace, r.name))


def days_left(item: Row, now: dt.datetime) -> int | None:
    """Whole days until the row's node must boot (negative: past it; rounded down); None without a horizon."""
    return None if item.horizon is None else math.floor(item.horizon.days_left(now))


def shelf_words(item: Row, now: dt.datetime) -> str:
    """One line on the row's horizon for people (`fleet why`); "" when unknown or the node is relocated."""
    horizon, left = item.horizon, days_left(item, now)
    if horizon is None or left is None or not item.to_relocate:
        return ""
    whence = "the node's report" if horizon.source == site.SHELF_REPORTED else "the depot's seal record (spec.shelf)"
    facts = [f"set by {horizon.set_by}"] if horizon.set_by else []
    facts += [f"sealed {horizon.sealed_at:%Y-%m-%d}"] if horizon.sealed_at else []
    facts.append(f"from {whence}")
    when = f"{horizon.must_boot_by:%Y-%m-%d %H:%M} UTC"
    if left < 0:
        return (
            f"PAST its must-boot-by date {when} by {-left} days ({'; '.join(facts)}): its node stops at the site "
            "before any change; have it re-sealed at the depot"
        )
    return f"must boot by {when}: {left} days left ({'; '.join(facts)})"


def ago(seconds: float | None) -> str:
    """`42s`, `17m`, `3h05m`, `2d4h`: how long ago, for a table."""
    if seconds is None:
        return "never"
    if not math.isfinite(seconds):
        return "?"
    value = int(seconds)
    if value < 60:
        return f"{value}s"
    if value < 3600:
        return f"{value // 60}m"
    if value < 86400:
        return f"{value // 3600}h{value % 3600 // 60:02d}m"
    return f"{value // 86400}d{value % 86400 // 3600}h"


def duration_text(text: str) -> float:
    """`900`, `90s`, `15m`, `2h`, `1d` -> seconds (ValueError otherwise: also for a negative, infinite or NaN
    number, or one over a year)."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    text = text.strip()
    unit = units.get(text[-1:], 0)
    seconds = float(text[:-1] if unit else text) * (unit or 1)
    if not 0.0 <= seconds <= 366 * 86400.0:
        raise ValueError(f"{text}: not a duration between 0 and a year")
    return seconds

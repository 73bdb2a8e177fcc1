"""What people look at, built from the journal in one place: the progress page's model, the timeline picture's
bars, and the one line that tells the technician what to do now.

The page, `analyze --svg`, `status`, the console banner and the collect-logs bundle all take these plain values,
so a change to the journal's shape touches only the builders here (`progress`, `timeline_of`, `todo`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from snoreloc import errors, redact, safefile, waits
from snoreloc.engine import intervals, journal, report
from snoreloc.engine import timeline as drawing

__all__ = [
    "BUNDLE",
    "CurrentWait",
    "Interval",
    "Progress",
    "RunFacts",
    "StepFacts",
    "StepRow",
    "facts",
    "page_address",
    "pick_run",
    "progress",
    "publish_page",
    "timeline_of",
    "todo",
    "todo_of",
]

PAGE_FILE = "progress-page"  # in the state directory while the page serves: its address
BUNDLE = "/var/lib/snoreloc/snoreloc-logs.tar.gz"  # where the hints ask for the collect-logs bundle
SITE_CONFIG_STEP = "site-config"
FLEET_GATE_STEP = "fleet-gate"  # `engine.fleetgate`: a node its fleet held past the bound; its hint is what to do
_FAILED = ("failed", "interrupted", "partial")


@dataclass(frozen=True)
class StepRow:
    name: str
    state: str
    started: str = ""  # HH:MM:SS (UTC)
    seconds: float | None = None
    note: str = ""
    error: str = ""
    hint: str = ""


@dataclass(frozen=True)
class CurrentWait:
    step: str
    what: str
    elapsed: float
    budget: float
    detail: str = ""


@dataclass(frozen=True)
class Progress:
    """The progress page's content. Every text in it has been through `redact`."""

    site: str
    state: str
    steps: tuple[StepRow, ...]
    todo: str
    current: CurrentWait | None = None
    warnings: tuple[str, ...] = ()
    console_url: str = ""
    error: str = ""
    hint: str = ""
    seconds: str = "wall-clock seconds"  # what the steps' times are (`report.clock_label`)


ROLLBACK_INTERRUPTED = "rollback-interrupted"  # the journal says rolling-back, but no process holds the run lock
_ADVICE = {
    "new": "Nothing has run yet: the relocation starts when the node boots with the stick labelled "
    "relocation-config (or with `snoreloc run`).",
    "rolling-back": "Wait: the rollback is running (it may reboot the node). Keep the node powered on; nothing to do.",
    ROLLBACK_INTERRUPTED: "The rollback was cut off: run `snoreloc rollback` again to finish it.",
    "rolled-back": "Nothing to do: the cluster's objects are back as before the relocation (the host network stays "
    "at the site). To relocate again, run `snoreloc run`.",
}


def todo(state: str, *, step: str = "", exit_code: int | None = None, console_url: str = "", hint: str = "") -> str:
    """One line for the technician: what to do now, given where the run is (every journal state, plus
    "interrupted" and "rollback-interrupted" as `snoreloc status` sees a run no process holds). A failure whose
    hint says how to fix it (a refusal: rename, delete or label an object) gives that fix, not "call support"."""
    if state in _FAILED:
        return _after_failure(step, exit_code, hint)
    if state == "rollback-failed":
        return _after_rollback_failure(exit_code, hint)
    if state == "done":
        return "Nothing to do: the relocation is done." + (f" Web console: {console_url}" if console_url else "")
    if state == "done-with-warnings":
        return f"Done with warnings: send them to support with the bundle (`snoreloc collect-logs --output {BUNDLE}`)."
    return _ADVICE.get(state, "Wait: the relocation is running. Keep the node powered on; nothing to do.")


def _after_rollback_failure(exit_code: int | None, hint: str = "") -> str:
    if exit_code in (None, errors.ExitCode.TEMPORARY):
        return "The rollback did not finish: run `snoreloc rollback` again (it resumes and waits again)."
    if hint and hint not in _GENERIC_HINTS:
        return f"Fix this, then run `snoreloc rollback` again: {hint}"
    return f"The rollback failed: call support with the bundle at {BUNDLE}."


# Hints every error of a kind carries: they say nothing the technician can act on beyond the line below.
_GENERIC_HINTS = frozenset(
    kind.default_hint
    for kind in (errors.SnorelocError, errors.InternalError, errors.PermanentStepError, errors.UnavailableError)
)


def _after_failure(step: str, exit_code: int | None, hint: str = "") -> str:
    if step == SITE_CONFIG_STEP or exit_code == errors.ExitCode.BAD_CONFIG:
        return "Re-insert the stick labelled relocation-config (with a corrected site-config), then reboot the node."
    support = f"call support with the bundle at {BUNDLE} (write it with `snoreloc collect-logs --output {BUNDLE}`)"
    if step == FLEET_GATE_STEP and hint and exit_code == errors.ExitCode.TEMPORARY:
        return hint  # nothing changed on the cluster: the fleet owner (not support) lets it go, then run again
    if exit_code in (None, errors.ExitCode.TEMPORARY):  # cut off (power, kill) or a wait ran out
        return f"Reboot the node or run `snoreloc run` to resume; if it fails again, {support}."
    if hint and hint not in _GENERIC_HINTS:
        return f"Fix this, then run `snoreloc run` again: {hint}"
    return support[0].upper() + support[1:] + "."


def todo_of(run: RunFacts, state: str = "", console_url: str = "") -> str:
    """`todo` for a run (`state`, when given, as `snoreloc status` sees it: a dead run is "interrupted")."""
    if run.state == "rolling-back" and state == "interrupted":
        state = ROLLBACK_INTERRUPTED
    failed = next((step.name for step in run.steps if step.state == "failed"), "")
    return todo(state or run.state, step=failed, exit_code=run.exit_code, console_url=console_url, hint=run.hint)


def publish_page(state_dir: Path, url: str) -> Callable[[], None]:
    """Note where the progress page serves, for `snoreloc status`; returns what removes the note."""
    note = state_dir / PAGE_FILE
    safefile.write(note, url + "\n", make_parents=True)
    return lambda: note.unlink(missing_ok=True)


def page_address(state_dir: Path) -> str:
    """The progress page's address while it serves, else ""."""
    try:
        return safefile.read_text(state_dir / PAGE_FILE, safefile.NOTE).strip()
    except (OSError, safefile.Unfit):
        return ""


# --- the journal, as plain facts: the one place that knows the journal's shape ----------------------------------


@dataclass(frozen=True)
class StepFacts:
    name: str
    state: str
    started: datetime | None = None
    finished: datetime | None = None
    seconds: float | None = None
    skipped: bool = False
    error: str = ""
    hint: str = ""
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Interval:
    """A rollout (`name`: the operator, or mcp/master) or a wait (`name`: its step) during the run."""

    name: str
    started: datetime
    finished: datetime | None
    what: str = ""


@dataclass(frozen=True)
class RunFacts:
    """What the last run did, as the page, the timeline, `status` and the banner need it."""

    site: str
    state: str
    steps: tuple[StepFacts, ...]
    started: datetime | None = None
    finished: datetime | None = None
    rollouts: tuple[Interval, ...] = ()
    waits: tuple[Interval, ...] = ()
    error: str = ""
    hint: str = ""
    exit_code: int | None = None
    speed: float = 1.0  # the run's clock against wall time (`journal.RunInfo.speed`): what its seconds are


def _step_facts(name: str, record: journal.StepRecord) -> StepFacts:
    error = record.error
    return StepFacts(
        name=name,
        state=record.state.value,
        started=record.started,
        finished=record.finished,
        seconds=record.duration,
        skipped=record.skipped is not None,
        error=redact.redact(error.message) if error else "",
        hint=redact.redact(error.hint or "") if error else "",
        warnings=tuple(redact.redact(str(w)) for w in record.warnings),
    )


def _intervals(entries: Iterable[Mapping[str, Any]], key: str) -> tuple[Interval, ...]:
    found = []
    for entry in entries:
        started = intervals.when(entry.get("started"))
        if started is not None:
            what = redact.redact(str(entry.get("what", "")))
            found.append(Interval(str(entry.get(key, "")), started, intervals.when(entry.get("finished")), what))
    return tuple(sorted(found, key=lambda i: i.started))


def facts(doc: journal.Document) -> RunFacts:
    """The journal (`journal.read`, `Journal.doc`) as plain facts: the one place here that reads its records."""
    error = doc.error
    return RunFacts(
        site=redact.redact(doc.site.name if doc.site else ""),
        state=doc.state.value,
        steps=tuple(_step_facts(name, doc.record(name)) for name in doc.step_names()),
        started=doc.run.started if doc.run else None,
        finished=doc.run.finished if doc.run else None,
        rollouts=_intervals(doc.rollout_log, "name"),
        waits=_intervals(doc.wait_log, "step"),
        error=redact.redact(error.message) if error else "",
        hint=redact.redact(error.hint or "") if error else "",
        exit_code=error.exit_code if error else None,
        speed=doc.run.speed if doc.run else 1.0,
    )


def pick_run(doc: journal.Document, number: int | None = None) -> tuple[int, journal.Document]:
    """The run `analyze`, the bundle and the timeline show, with its number (1: the oldest kept): `number` when
    given (negative counts back from the latest), else the last run that ran a step (a re-run that found nothing to
    do would draw an empty axis; a rollback forgets every step, so its table is empty), else the last that did work
    (a rollback that waited), else the latest."""
    runs = doc.runs()
    if number is not None:
        if not (1 <= number <= len(runs) or -len(runs) <= number <= -1):
            raise errors.UsageError(
                f"--run {number}: this journal keeps {len(runs)} run(s), numbered 1 (the oldest kept) to {len(runs)}"
            )
        index = number - 1 if number > 0 else len(runs) + number
        return index + 1, runs[index]
    stepped = [i for i, run in enumerate(runs) if run.ran_a_step()]
    worked = [i for i, run in enumerate(runs) if run.did_work()]
    index = (stepped or worked or [len(runs) - 1])[-1]
    return index + 1, runs[index]


# --- the progress page ------------------------------------------------------------------------------------------


def _row(step: StepFacts) -> StepRow:
    return StepRow(
        name=step.name,
        state=step.state,
        started=step.started.strftime("%H:%M:%S") if step.started else "",
        seconds=step.seconds,
        note="unchanged, skipped this run" if step.skipped else "",
        error=step.error,
        hint=step.hint,
    )


def _current(wait: waits.Waiting | None, now: datetime) -> CurrentWait | None:
    if wait is None:
        return None
    elapsed = max((now - wait.since).total_seconds(), wait.elapsed)
    return CurrentWait(wait.step, redact.redact(wait.what), elapsed, wait.budget, redact.redact(wait.detail))


def progress(
    run: RunFacts,
    *,
    site: str = "",
    console_url: str = "",
    waiting: waits.Waiting | None = None,
    now: datetime | None = None,
) -> Progress:
    """The page's model from the run's facts and the wait in progress."""
    going = run.state in ("new", "running", "rolling-back")
    return Progress(
        site=redact.redact(site) or run.site,
        state=run.state,
        steps=tuple(_row(step) for step in run.steps),
        todo=todo_of(run, console_url=console_url),
        current=_current(waiting, now or datetime.now().astimezone()) if going else None,
        warnings=tuple(dict.fromkeys(w for step in run.steps for w in step.warnings)),
        console_url=console_url if run.state.startswith("done") else "",
        seconds=report.clock_label(run.speed),
        error=run.error,
        hint=run.hint,
    )


# --- the timeline -----------------------------------------------------------------------------------------------


def _step_bars(run: RunFacts, origin: datetime, now: float) -> list[drawing.Bar]:
    bars = []
    for step in run.steps:
        if step.started is None or step.started < origin or step.skipped:
            continue  # not run by this run
        end = (step.finished - origin).total_seconds() if step.finished else now
        bars.append(drawing.Bar(step.name, (step.started - origin).total_seconds(), end, failed=step.state == "failed"))
    return bars


def _seconds(origin: datetime, interval: Interval, now: float) -> tuple[float, float]:
    end = (interval.finished - origin).total_seconds() if interval.finished else now
    return (interval.started - origin).total_seconds(), end


def critical_chain(rollouts: Sequence[drawing.Bar], end: float) -> set[int]:
    """Indexes of the rollouts the run waited for: walking back from the end, the rollout that finished last
    before that point, then the one that finished last before that rollout started, and so on."""
    chain: set[int] = set()
    point = end
    while True:
        before = [i for i, bar in enumerate(rollouts) if bar.end <= point + 1.0 and i not in chain]
        if not before:
            return chain
        last = max(before, key=lambda i: rollouts[i].end)
        chain.add(last)
        point = rollouts[last].start


def _rollout_bars(run: RunFacts, origin: datetime, now: float) -> list[drawing.Bar]:
    bars = [drawing.Bar(f"rollout: {r.name}", *_seconds(origin, r, now), drawing.Kind.ROLLOUT) for r in run.rollouts]
    chain = critical_chain(bars, now)
    return [drawing.Bar(b.label, b.start, b.end, b.kind, critical=i in chain) for i, b in enumerate(bars)]


def timeline_of(run: RunFacts, *, now: datetime | None = None, title: str = "") -> drawing.Timeline:
    """The last run's timeline: seconds after the run started; a run still going ends at `now`."""
    origin = run.started or datetime.now().astimezone()
    end = (run.finished - origin).total_seconds() if run.finished else None
    current = end if end is not None else ((now or datetime.now().astimezone()) - origin).total_seconds()
    marks = tuple(drawing.WaitMark(w.name, w.what, *_seconds(origin, w, current)) for w in run.waits)
    bars = _step_bars(run, origin, current) + _rollout_bars(run, origin, current)
    heading = title or f"snoreloc relocation of {run.site or 'this node'}, started {origin:%Y-%m-%d %H:%M:%S %Z}"
    return drawing.Timeline(heading, tuple(bars), marks, end)

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

from snoreloc import errors, redact, waits
from snoreloc.engine import intervals
from snoreloc.engine import timeline as drawing

__all__ = [
    "BUNDLE",
    "CurrentWait",
    "Progress",
    "StepRow",
    "page_address",
    "progress",
    "publish_page",
    "timeline_of",
    "todo",
    "todo_of",
]

PAGE_FILE = "progress-page"  # in the state directory while the page serves: its address
BUNDLE = "/var/lib/snoreloc/snoreloc-logs.tar.gz"  # where the hints ask for the collect-logs bundle
SITE_CONFIG_STEP = "site-config"
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


def todo(state: str, *, step: str = "", exit_code: int | None = None, console_url: str = "") -> str:
    """One line for the technician: what to do now, given where the run is."""
    if state in _FAILED:
        return _after_failure(step, exit_code)
    if state == "done":
        return "Nothing to do: the relocation is done." + (f" Web console: {console_url}" if console_url else "")
    if state == "done-with-warnings":
        return f"Done with warnings: send them to support with the bundle (`snoreloc collect-logs --output {BUNDLE}`)."
    return "Wait: the relocation is running. Keep the node powered on; nothing to do."


def _after_failure(step: str, exit_code: int | None) -> str:
    if step == SITE_CONFIG_STEP or exit_code == errors.ExitCode.BAD_CONFIG:
        return "Re-insert the stick labelled relocation-config (with a corrected site-config), then reboot the node."
    support = f"call support with the bundle at {BUNDLE} (write it with `snoreloc collect-logs --output {BUNDLE}`)"
    if exit_code == errors.ExitCode.TEMPORARY:
        return f"Reboot the node or run `snoreloc run` to resume; if it fails again, {support}."
    return support[0].upper() + support[1:] + "."


def todo_of(doc: Mapping[str, Any], state: str, console_url: str = "") -> str:
    """`todo` for a journal document (`state` as `snoreloc status` sees it: a dead run is "interrupted")."""
    steps = doc.get("steps", {})
    failed = next((name for name in doc.get("order") or steps if steps.get(name, {}).get("state") == "failed"), "")
    exit_code = (doc.get("error") or {}).get("exit_code")
    return todo(state, step=failed, exit_code=exit_code, console_url=console_url)


def publish_page(state_dir: Path, url: str) -> Callable[[], None]:
    """Note where the progress page serves, for `snoreloc status`; returns what removes the note."""
    note = state_dir / PAGE_FILE
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(url + "\n", encoding="utf-8")
    return lambda: note.unlink(missing_ok=True)


def page_address(state_dir: Path) -> str:
    """The progress page's address while it serves, else ""."""
    try:
        return (state_dir / PAGE_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return ""


# --- the progress page ------------------------------------------------------------------------------------------


def _clock_time(text: Any) -> str:
    moment = intervals.when(text)
    return moment.strftime("%H:%M:%S") if moment else ""


def _row(name: str, record: Mapping[str, Any]) -> StepRow:
    error = record.get("error") or {}
    seconds = record.get("duration")
    return StepRow(
        name=name,
        state=str(record.get("state", "pending")),
        started=_clock_time(record.get("started")),
        seconds=float(seconds) if isinstance(seconds, int | float) else None,
        note="unchanged, skipped this run" if record.get("skipped") else "",
        error=redact.redact(str(error.get("message") or "")),
        hint=redact.redact(str(error.get("hint") or "")),
    )


def _warnings(steps: Mapping[str, Any], order: Iterable[str]) -> tuple[str, ...]:
    found = [str(w) for name in order for w in steps.get(name, {}).get("warnings") or []]
    return tuple(redact.redact(w) for w in dict.fromkeys(found))


def _current(wait: waits.Waiting | None, now: datetime) -> CurrentWait | None:
    if wait is None:
        return None
    elapsed = max((now - wait.since).total_seconds(), wait.elapsed)
    return CurrentWait(wait.step, redact.redact(wait.what), elapsed, wait.budget, redact.redact(wait.detail))


def progress(
    doc: Mapping[str, Any],
    *,
    site: str = "",
    console_url: str = "",
    waiting: waits.Waiting | None = None,
    now: datetime | None = None,
) -> Progress:
    """The page's model from a journal document and the wait in progress."""
    steps = doc.get("steps", {})
    order = list(doc.get("order") or steps)
    state = str(doc.get("state", "new"))
    error = doc.get("error") or {}
    done = state.startswith("done")
    return Progress(
        site=redact.redact(site or str(doc.get("site_config", {}).get("name", ""))),
        state=state,
        steps=tuple(_row(name, steps.get(name, {})) for name in order),
        todo=todo_of(doc, state, console_url),
        current=_current(waiting, now or datetime.now().astimezone()) if state in ("new", "running") else None,
        warnings=_warnings(steps, order),
        console_url=console_url if done else "",
        error=redact.redact(str(error.get("message") or "")),
        hint=redact.redact(str(error.get("hint") or "")),
    )


# --- the timeline -----------------------------------------------------------------------------------------------


def _seconds(origin: datetime, text: Any, default: float) -> float:
    moment = intervals.when(text)
    return (moment - origin).total_seconds() if moment else default


def _step_bars(doc: Mapping[str, Any], origin: datetime, now: float) -> list[drawing.Bar]:
    steps = doc.get("steps", {})
    bars = []
    for name in doc.get("order") or steps:
        record = steps.get(name, {})
        start = _seconds(origin, record.get("started"), -1.0)
        if start < 0 or record.get("skipped"):
            continue  # not run by this run
        end = _seconds(origin, record.get("finished"), now)
        bars.append(drawing.Bar(name, start, end, failed=record.get("state") == "failed"))
    return bars


def _rollout_bars(doc: Mapping[str, Any], origin: datetime, now: float) -> list[drawing.Bar]:
    bars = []
    for entry in sorted(doc.get(intervals.ROLLOUTS) or [], key=lambda e: str(e["started"])):
        start = _seconds(origin, entry["started"], 0.0)
        end = _seconds(origin, entry["finished"], now)
        bars.append(drawing.Bar(f"rollout: {entry['name']}", start, end, drawing.Kind.ROLLOUT))
    return bars


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


def _wait_marks(doc: Mapping[str, Any], origin: datetime) -> tuple[drawing.WaitMark, ...]:
    return tuple(
        drawing.WaitMark(
            str(entry["step"]),
            redact.redact(str(entry["what"])),
            _seconds(origin, entry["started"], 0.0),
            _seconds(origin, entry["finished"], 0.0),
        )
        for entry in doc.get(intervals.WAITS) or []
    )


def timeline_of(doc: Mapping[str, Any], *, now: datetime | None = None, title: str = "") -> drawing.Timeline:
    """The last run's timeline from its journal: seconds after the run started; a running run ends at `now`."""
    origin = intervals.when(doc.get("run", {}).get("started")) or datetime.now().astimezone()
    finished = intervals.when(doc.get("run", {}).get("finished"))
    end = (finished - origin).total_seconds() if finished else None
    current = end if end is not None else ((now or datetime.now().astimezone()) - origin).total_seconds()
    rollouts = _rollout_bars(doc, origin, current)
    chain = critical_chain(rollouts, current)
    rollouts = [drawing.Bar(b.label, b.start, b.end, b.kind, critical=i in chain) for i, b in enumerate(rollouts)]
    name = redact.redact(str(doc.get("site_config", {}).get("name", "")))
    heading = title or f"snoreloc relocation of {name or 'this node'}, started {origin:%Y-%m-%d %H:%M:%S %Z}"
    return drawing.Timeline(heading, tuple(_step_bars(doc, origin, current) + rollouts), _wait_marks(doc, origin), end)

"""The journal, `status.json`: the single source of truth of a relocation's progress.

Every transition (step started, finished, failed; a rollout we set in motion; the wait in progress) rewrites the
whole file atomically: a temporary file in the same directory, fsync, rename over, fsync of the directory. A reader
(or a run after a `kill -9` or a power cut) therefore sees either the previous or the next state, never a torn one.
`status`, `analyze`, the report and the resumed run all read this file through `read`, and nothing else.

A step's table of results (the routes step's, one row per route) is written once, as JSON lines in its own file
next to status.json (`routes.jsonl`), and loaded back by `read`: with thousands of routes, every later save would
otherwise re-encode it.

The records are typed (`Document`, `StepRecord`, ...); `to_storage`/`from_storage` are the only places that know the
JSON keys. Format 1 (snoreloc 0.1.0) also stored `_started_mono`, a monotonic clock reading meaningless in another
process: format 2 keeps it in memory only and adds `waiting`. Both load; a newer format is refused by name.

Every run (and rollback) that starts files the one before it under `history` (its state, its steps' times and
outcomes, its rollouts and waits: what the timeline and `analyze` need, not the steps' details), the last
`MAX_HISTORY` of them. A re-run that finds nothing to do therefore no longer erases the picture of the run that
did the work (`Document.runs`, `did_work`). A journal without `history` (written before) reads as one run.
"""

from __future__ import annotations

import copy
import enum
import json
import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from snoreloc import errors, redact, safefile, waits
from snoreloc.adapters import clock as clock_mod
from snoreloc.engine import intervals

if TYPE_CHECKING:  # the step contract pulls in the kubernetes client; `status` must not
    from snoreloc.steps import base

__all__ = [
    "FORMAT_VERSION",
    "Document",
    "ErrorRecord",
    "Journal",
    "RunInfo",
    "RunState",
    "SiteRef",
    "StepRecord",
    "StepState",
    "TimingRow",
    "WaitRecord",
    "plausible",
    "read",
    "timings",
]

FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
MAX_HISTORY = 20  # past runs kept in status.json (each a few KiB: step times, rollouts, waits)
HISTORY = "history"
MAX_SECONDS = 10 * 365 * 86400.0  # no run, step or wait of a relocation lasts ten years
MAX_SPEED = 1e6  # a plausible clock speed (the simulator runs up to a few thousand times faster)
MAX_PID = 4_194_304  # the kernel's PID_MAX_LIMIT (include/linux/threads.h)
MAX_EXIT_CODE = 255
UNKNOWN_EXIT_CODE = 1  # an error's exit code that is not one: a failure, as when it is absent


class RunState(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    DONE = "done"
    DONE_WITH_WARNINGS = "done-with-warnings"
    FAILED = "failed"
    PARTIAL = "partial"
    ROLLING_BACK = "rolling-back"
    ROLLED_BACK = "rolled-back"
    ROLLBACK_FAILED = "rollback-failed"


class StepState(enum.Enum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat(timespec="milliseconds")


def _when(text: object) -> datetime | None:
    """A timestamp, or None (unknown) when absent or not one; one without a zone is UTC, as snoreloc writes."""
    try:
        moment = datetime.fromisoformat(text) if isinstance(text, str) and text else None
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment is not None and moment.tzinfo is None else moment


def plausible(value: object, high: float = MAX_SECONDS) -> float | None:
    """The one check every number read from status.json passes: a JSON number (not a boolean, not a numeric
    string), finite, from 0 to `high` (seconds by default). Anything else is unknown (None), and is shown as such:
    a hand-edited, truncated-then-repaired or foreign journal must never make a reader fail (issue 30)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return float(value) if 0 <= value <= high else None


def _whole(value: object, high: int, unknown: int) -> int:
    """A whole number through `plausible` (a pid, an exit code); `unknown` when it is not one."""
    found = plausible(value, high)
    return int(found) if found is not None and found.is_integer() else unknown


@dataclass(frozen=True)
class ErrorRecord:
    """Why a step or the run failed, with what to do about it."""

    message: str
    hint: str | None
    exit_code: int

    @classmethod
    def of(cls, exc: errors.SnorelocError) -> ErrorRecord:
        return cls(exc.message, exc.hint, int(exc.exit_code))

    def to_storage(self) -> dict[str, Any]:
        return {"message": self.message, "hint": self.hint, "exit_code": self.exit_code}

    @classmethod
    def from_storage(cls, data: object) -> ErrorRecord | None:
        if not isinstance(data, Mapping) or not data:
            return None
        hint = data.get("hint")
        code = _whole(data.get("exit_code", UNKNOWN_EXIT_CODE), MAX_EXIT_CODE, UNKNOWN_EXIT_CODE)
        return cls(str(data.get("message", "")), None if hint is None else str(hint), code)


@dataclass(frozen=True)
class SiteRef:
    """The site-config a run worked from."""

    name: str
    fingerprint: str
    path: str | None = None  # the file it was loaded from (`collect-logs` includes it, redacted)

    def to_storage(self) -> dict[str, Any]:
        return {"name": self.name, "fingerprint": self.fingerprint, "path": self.path}

    @classmethod
    def from_storage(cls, data: object) -> SiteRef | None:
        if not isinstance(data, Mapping):
            return None
        path = data.get("path")
        return cls(str(data.get("name", "")), str(data.get("fingerprint", "")), None if path is None else str(path))


@dataclass(frozen=True)
class RunInfo:
    """The process that ran last: its pid, when it started and finished, and how it was run."""

    pid: int
    started: datetime | None
    finished: datetime | None
    mode: str
    speed: float = 1.0  # how much faster than wall time the run's clock ran (1: a node; more: a simulated cluster)

    def to_storage(self) -> dict[str, Any]:
        stored = {"pid": self.pid, "started": _iso(self.started), "finished": _iso(self.finished), "mode": self.mode}
        return stored if self.speed == 1.0 else {**stored, "speed": self.speed}

    @classmethod
    def from_storage(cls, data: object) -> RunInfo | None:
        if not isinstance(data, Mapping):
            return None
        pid = _whole(data.get("pid", 0), MAX_PID, 0)
        speed = data.get("speed", 1.0)
        plausible = isinstance(speed, int | float) and not isinstance(speed, bool) and 0 < speed <= MAX_SPEED
        started, finished = _when(data.get("started")), _when(data.get("finished"))
        return cls(pid, started, finished, str(data.get("mode", "")), float(speed) if plausible else 1.0)


@dataclass(frozen=True)
class WaitRecord(waits.Waiting):
    """What the run is waiting for right now (`snoreloc.waits`), as of the wait's last report: the same fields,
    with their storage form."""

    @classmethod
    def of(cls, waiting: waits.Waiting) -> WaitRecord:
        return cls(waiting.step, waiting.what, waiting.budget, waiting.since, waiting.elapsed, waiting.detail)

    def to_storage(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "what": self.what,
            "budget": self.budget,
            "since": _iso(self.since),
            "elapsed": self.elapsed,
            "detail": self.detail,
        }

    @classmethod
    def from_storage(cls, data: object) -> WaitRecord | None:
        """None when there is none, or when its time or seconds are not plausible: the running process rewrites
        the wait at its next report, and a wait of unknown length is no wait to show."""
        since = _when(data.get("since")) if isinstance(data, Mapping) else None
        if not isinstance(data, Mapping) or since is None:
            return None
        budget, elapsed = plausible(data.get("budget", 0.0)), plausible(data.get("elapsed", 0.0))
        if budget is None or elapsed is None:
            return None
        fields = (str(data.get("step", "")), str(data.get("what", "")), budget)
        return cls(*fields, since, elapsed, str(data.get("detail", "")))


@dataclass
class StepRecord:
    """One step's last state. `duration` is in seconds; `skipped` is when a run last found it unchanged."""

    state: StepState = StepState.PENDING
    fingerprint: str | None = None
    started: datetime | None = None
    finished: datetime | None = None
    duration: float | None = None
    skipped: datetime | None = None
    error: ErrorRecord | None = None
    changed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def to_storage(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "fingerprint": self.fingerprint,
            "started": _iso(self.started),
            "finished": _iso(self.finished),
            "duration": self.duration,
            "skipped": _iso(self.skipped),
            "error": None if self.error is None else self.error.to_storage(),
            "changed": list(self.changed),
            "warnings": list(self.warnings),
            "details": _stored_details(self.details),
        }

    @classmethod
    def from_storage(cls, data: Mapping[str, Any]) -> StepRecord:
        return cls(
            state=StepState(data.get("state", StepState.PENDING.value)),
            fingerprint=data.get("fingerprint"),
            started=_when(data.get("started")),
            finished=_when(data.get("finished")),
            duration=plausible(data.get("duration")),
            skipped=_when(data.get("skipped")),
            error=ErrorRecord.from_storage(data.get("error")),
            changed=list(data.get("changed") or []),
            warnings=list(data.get("warnings") or []),
            details=dict(data.get("details") or {}),
        )


TABLE = "routes"  # a step's per-object table (the routes step's: one row per route), in its own file when large
TABLE_FILE = "table_file"  # the name of that file, next to status.json


def _stored_details(details: dict[str, Any]) -> dict[str, Any]:
    """What status.json keeps of a step's details: a table that has its own file stays out of it."""
    if TABLE_FILE not in details:
        return details
    return {key: value for key, value in details.items() if key != TABLE}


def _write_table(path: Path, rows: list[Any]) -> None:
    """One JSON line per row, written once when the step finishes (redacted, like status.json)."""
    safefile.write(path, redact.redact("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows)))


def _read_table(path: Path) -> list[Any]:
    try:
        lines = safefile.read_text(path, safefile.TABLE).splitlines()
    except FileNotFoundError:
        return []
    except (OSError, safefile.Unfit) as exc:
        raise errors.UnavailableError(f"cannot read {path}: {exc}") from exc
    try:
        return [json.loads(line) for line in lines if line.strip()]
    except ValueError as exc:
        raise errors.UnavailableError(f"cannot read {path}: {exc}", hint="Remove the file to start afresh.") from exc


@dataclass
class Document:
    """The whole of status.json. `rollouts` are the rollouts we set in motion and have not yet seen settle."""

    state: RunState = RunState.NEW
    order: list[str] = field(default_factory=list)
    steps: dict[str, StepRecord] = field(default_factory=dict)
    rollouts: dict[str, datetime] = field(default_factory=dict)
    site: SiteRef | None = None
    run: RunInfo | None = None
    error: ErrorRecord | None = None
    waiting: WaitRecord | None = None
    rollout_log: intervals.Log = field(default_factory=list)  # the timeline's rollouts (engine/intervals.py)
    wait_log: intervals.Log = field(default_factory=list)  # and its finished waits
    history: list[dict[str, Any]] = field(default_factory=list)  # earlier runs, oldest first (storage form)

    def runs(self) -> list[Document]:
        """Every run kept, oldest first; the last is this one."""
        past = [Document.from_storage(entry) for entry in self.history if isinstance(entry, Mapping)]
        return [*past, self]

    def ran_a_step(self) -> bool:
        """Whether this run ran a step (rather than finding every step unchanged, or rolling back)."""
        started = self.run.started if self.run else None
        return started is not None and any(
            rec.started is not None and rec.started >= started for rec in self.steps.values()
        )

    def did_work(self) -> bool:
        """Whether this run ran a step (rather than finding every step unchanged), or a rollback waited."""
        if self.run is None or self.run.started is None:
            return False
        return self.ran_a_step() or bool(self.wait_log) or bool(self.rollout_log)

    def archived(self) -> dict[str, Any]:
        """This run as `history` keeps it: what the timeline and the timings need, no step details."""
        steps = {}
        for name, record in self.steps.items():
            kept = record.to_storage()
            steps[name] = {key: kept[key] for key in ("state", "started", "finished", "duration", "skipped", "error")}
        whole = self.to_storage()
        kept_keys = ("version", "state", "order", "site_config", "run", "error", intervals.ROLLOUTS, intervals.WAITS)
        return {**{key: whole[key] for key in kept_keys}, "steps": steps}

    def step_names(self) -> list[str]:
        """The steps in run order (a journal written before `order` was known: in the order recorded)."""
        return list(self.order) or list(self.steps)

    def record(self, name: str) -> StepRecord:
        return self.steps.get(name) or StepRecord()

    def to_storage(self) -> dict[str, Any]:
        return {
            "version": FORMAT_VERSION,
            "state": self.state.value,
            "order": list(self.order),
            "steps": {name: record.to_storage() for name, record in self.steps.items()},
            "rollouts": {name: _iso(when) for name, when in self.rollouts.items()},
            "site_config": None if self.site is None else self.site.to_storage(),
            "run": None if self.run is None else self.run.to_storage(),
            "error": None if self.error is None else self.error.to_storage(),
            "waiting": None if self.waiting is None else self.waiting.to_storage(),
            intervals.ROLLOUTS: list(self.rollout_log),
            intervals.WAITS: list(self.wait_log),
            HISTORY: list(self.history),
        }

    @classmethod
    def from_storage(cls, data: Mapping[str, Any]) -> Document:
        """Formats 1 and 2; a step's `_started_mono` (format 1) is ignored."""
        rollouts = {name: _when(when) for name, when in (data.get("rollouts") or {}).items()}
        return cls(
            state=RunState(data.get("state", RunState.NEW.value)),
            order=[str(name) for name in data.get("order") or []],
            steps={name: StepRecord.from_storage(rec) for name, rec in (data.get("steps") or {}).items()},
            rollouts={name: when for name, when in rollouts.items() if when is not None},
            site=SiteRef.from_storage(data.get("site_config")),
            run=RunInfo.from_storage(data.get("run")),
            error=ErrorRecord.from_storage(data.get("error")),
            waiting=WaitRecord.from_storage(data.get("waiting")),
            rollout_log=_log(data.get(intervals.ROLLOUTS)),
            wait_log=_log(data.get(intervals.WAITS)),
            history=_history(data.get(HISTORY)),
        )


def _log(entries: object) -> intervals.Log:
    """A timeline log as stored, its seconds (a wait's budget) through `plausible` and its times through `_when`
    (unknown: null); what is not an entry is left out."""
    kept = [dict(entry) for entry in entries or [] if isinstance(entry, Mapping)] if isinstance(entries, list) else []
    for entry in kept:
        if "budget" in entry:
            entry["budget"] = plausible(entry["budget"])
        for key in ("started", "finished"):
            if key in entry:
                entry[key] = _iso(_when(entry[key]))
    return kept


def _history(entries: object) -> list[dict[str, Any]]:
    """The earlier runs, each read as a run is (so every number passes the same check) and kept in the form
    `Document.archived` gives; an entry that is not a readable run is left out."""
    kept = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping):
            continue
        try:
            kept.append(Document.from_storage({k: v for k, v in entry.items() if k != HISTORY}).archived())
        except (TypeError, ValueError, AttributeError):
            continue
    return kept


@dataclass(frozen=True)
class TimingRow:
    """One step's timing, as `analyze` and the report show it."""

    step: str
    state: StepState
    started: datetime | None
    finished: datetime | None
    seconds: float | None
    skipped_at: datetime | None

    def as_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "state": self.state.value,
            "started": _iso(self.started),
            "finished": _iso(self.finished),
            "seconds": self.seconds,
            "skipped_at": _iso(self.skipped_at),
        }


def timings(doc: Document) -> list[TimingRow]:
    """The per-step timing rows, in run order: the one source for `analyze` and the report."""
    rows = []
    for name in doc.step_names():
        rec = doc.record(name)
        rows.append(TimingRow(name, rec.state, rec.started, rec.finished, rec.duration, rec.skipped))
    return rows


SHOWN_CHANGES = 3  # a step's changed objects named in a verdict; the rest counted (the routes step has thousands)


def _step_changes(name: str, record: StepRecord) -> str:
    shown = "; ".join(record.changed[:SHOWN_CHANGES])
    more = len(record.changed) - SHOWN_CHANGES
    return f"{name} ({shown}{f'; and {more} more' if more > 0 else ''})"


def changes(doc: Document, *, new_run: bool = False) -> tuple[list[str], list[str]]:
    """What the steps changed, read from the journal, one `step (what)` each: (this run's, earlier runs' still
    recorded). A step that finished without changing anything (preflight, a check, an object already as wanted)
    is in neither; a step this run skipped as unchanged counts as an earlier run's. `new_run`: the journal's run
    is an earlier one (a run refused before it began)."""
    started = doc.run.started if doc.run and not new_run else None
    now: list[str] = []
    before: list[str] = []
    for name in doc.step_names():
        record = doc.record(name)
        if record.state is not StepState.DONE or not record.changed:
            continue
        ours = started is not None and record.started is not None and record.started >= started
        (now if ours else before).append(_step_changes(name, record))
    return now, before


def what_changed(doc: Document, stopped_at: str | None = None, *, new_run: bool = False) -> str:
    """The verdict's account of what was and was not changed, from the journal (issue 35): what this run's steps
    changed, what earlier runs' changed that is still in place, and, for a run that stopped at a step, which steps
    did not run. What the stopped step itself did is its own message's to say (a refusal says it changed nothing).
    Never "nothing was changed" when a step did change something."""
    now, before = changes(doc, new_run=new_run)
    parts = ["this run changed " + ", ".join(now) if now else "this run changed nothing"]
    if before:
        parts.append("earlier runs changed (still in place) " + ", ".join(before))
    order = doc.step_names()
    later = order[order.index(stopped_at) + 1 :] if stopped_at in order else []
    if later:
        parts.append(f"the {len(later)} step{'s' if len(later) != 1 else ''} from {later[0]} on did not run")
    return "What was changed: " + "; ".join(parts) + "."


def read(path: Path) -> Document:
    """The journal's content, or an empty one when there is none yet."""
    try:
        data = json.loads(safefile.read(path, safefile.STATE))
    except FileNotFoundError:
        return Document()
    except (OSError, ValueError, RecursionError) as exc:
        raise errors.UnavailableError(f"cannot read {path}: {exc}", hint="Remove the file to start afresh.") from exc
    if not isinstance(data, Mapping):
        raise errors.UnavailableError(f"cannot read {path}: not a JSON object", hint="Remove the file to start afresh.")
    version = data.get("version", 1)
    if version not in READABLE_VERSIONS:
        raise errors.UnavailableError(
            f"{path} has journal format {version!r}; this snoreloc reads formats "
            f"{', '.join(map(str, READABLE_VERSIONS))}",
            hint="Use the snoreloc version that wrote it (a newer one), or remove the file to start afresh.",
        )
    try:
        doc = Document.from_storage(data)
    except (TypeError, ValueError, AttributeError) as exc:
        raise errors.UnavailableError(f"cannot read {path}: {exc}", hint="Remove the file to start afresh.") from exc
    for record in doc.steps.values():  # journals before issue 14 carry the table inline, and still load so
        if isinstance(record.details.get(TABLE_FILE), str):
            record.details[TABLE] = _read_table(path.with_name(Path(record.details[TABLE_FILE]).name))
    return doc


class Journal:
    """status.json in memory, written through on every change. Thread-safe; implements `context.Rollouts`."""

    def __init__(self, path: Path, clock: clock_mod.Clock) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.RLock()
        self._doc = read(path)
        self._started_mono: dict[str, float] = {}  # per running step; meaningless outside this process

    # --- reading ------------------------------------------------------------------------------------------------

    @property
    def doc(self) -> Document:
        """A copy of the whole journal, safe to read while the run goes on."""
        with self._lock:
            return copy.deepcopy(self._doc)

    def step(self, name: str) -> StepRecord:
        with self._lock:
            return copy.deepcopy(self._doc.record(name))

    def is_done(self, name: str, fingerprint: str) -> bool:
        record = self.step(name)
        return record.state is StepState.DONE and record.fingerprint == fingerprint

    # --- writing ------------------------------------------------------------------------------------------------

    def _save(self) -> None:
        text = redact.redact(json.dumps(self._doc.to_storage(), indent=2, sort_keys=True, default=str))
        safefile.write(self.path, text + "\n")

    def begin_run(
        self, *, site_name: str, site_fingerprint: str, order: list[str], mode: str, site_path: str | None = None
    ) -> None:
        """`site_path` is the file the site-config was loaded from (`collect-logs` includes it, redacted)."""
        with self._lock:
            doc = self._doc
            self._archive()
            doc.state, doc.order, doc.error, doc.waiting = RunState.RUNNING, list(order), None, None
            doc.site = SiteRef(site_name, site_fingerprint, site_path)
            doc.run = RunInfo(os.getpid(), self._clock.now(), None, mode, self._speed())
            for name in order:
                doc.steps.setdefault(name, StepRecord())
            doc.rollout_log, doc.wait_log = [], []  # a new run draws its own timeline
            self._save()

    def _speed(self) -> float:
        """How much faster than wall time this journal's clock runs (a `ScaledClock` against a simulator), recorded
        with the run so every reader can label its seconds (`report.clock_label`)."""
        speed = getattr(self._clock, "speed", 1.0)
        return float(speed) if isinstance(speed, int | float) and 0 < speed <= MAX_SPEED else 1.0

    def _archive(self) -> None:
        """File the run that ended under `history` (bounded) before a new one starts."""
        doc = self._doc
        if doc.run is not None:
            doc.history = [*doc.history, doc.archived()][-MAX_HISTORY:]

    def start_step(self, name: str, fingerprint: str) -> None:
        with self._lock:
            record = self._doc.steps.setdefault(name, StepRecord())
            record.state, record.fingerprint, record.error = StepState.RUNNING, fingerprint, None
            record.started, record.finished = self._clock.now(), None
            self._started_mono[name] = self._clock.monotonic()
            self._save()

    def _close_step(self, name: str, state: StepState) -> StepRecord:
        record = self._doc.steps.setdefault(name, StepRecord())
        record.state, record.finished = state, self._clock.now()
        started = self._started_mono.pop(name, None)
        if started is not None:
            record.duration = round(self._clock.monotonic() - started, 3)
        self._doc.waiting = None
        return record

    def finish_step(self, name: str, outcome: base.StepOutcome) -> None:
        with self._lock:
            record = self._close_step(name, StepState.DONE)
            record.changed, record.warnings = list(outcome.changed), list(outcome.warnings)
            record.details = dict(outcome.details)
            if isinstance(record.details.get(TABLE), list):  # thousands of rows: saved once, not at every save
                record.details[TABLE_FILE] = f"{name}.jsonl"
                _write_table(self.path.with_name(record.details[TABLE_FILE]), record.details[TABLE])
            self._doc.rollouts.update(outcome.rollouts)
            self._save()

    def skip_step(self, name: str) -> None:
        """Inputs unchanged and verified: keep the record, note that this run skipped it."""
        with self._lock:
            self._doc.steps.setdefault(name, StepRecord()).skipped = self._clock.now()
            self._save()

    def fail_step(self, name: str, exc: errors.SnorelocError) -> None:
        with self._lock:
            self._close_step(name, StepState.FAILED).error = ErrorRecord.of(exc)
            self._save()

    def end_run(self, state: RunState, error: errors.SnorelocError | None = None) -> None:
        with self._lock:
            doc = self._doc
            doc.state, doc.waiting = state, None
            run = doc.run or RunInfo(os.getpid(), None, None, "")
            doc.run = RunInfo(run.pid, run.started, self._clock.now(), run.mode, run.speed)
            if error is not None:
                doc.error = ErrorRecord.of(error)
            self._save()

    def reset(self, state: RunState) -> None:
        """Forget every step (after a rollback): the next run starts from the beginning."""
        with self._lock:
            self._doc.state, self._doc.steps, self._doc.rollouts, self._doc.waiting = state, {}, {}, None
            self._doc.order, self._doc.error = [], None
            self._save()

    def begin_rollback(self) -> None:
        """A rollback starts: the steps stay as they were until it has restored everything (`end_rollback`)."""
        with self._lock:
            doc = self._doc
            self._archive()
            doc.state, doc.error, doc.waiting = RunState.ROLLING_BACK, None, None
            doc.run = RunInfo(os.getpid(), self._clock.now(), None, "rollback", self._speed())
            doc.rollout_log, doc.wait_log = [], []
            self._save()

    def set_in_motion(self, rollouts: Mapping[str, datetime]) -> None:
        """Rollouts a write outside the steps (a rollback's restores) set moving, for `settle`'s waits."""
        with self._lock:
            self._doc.rollouts.update(rollouts)
            self._save()

    def end_rollback(self, error: errors.SnorelocError | None) -> None:
        """Rolled back (every step forgotten: the next run starts from the beginning), or failed with `error`."""
        if error is None:
            self.reset(RunState.ROLLED_BACK)
        else:
            self.end_run(RunState.ROLLBACK_FAILED, error)
            return
        with self._lock:
            run = self._doc.run or RunInfo(os.getpid(), None, None, "rollback")
            self._doc.run = RunInfo(run.pid, run.started, self._clock.now(), run.mode, run.speed)
            self._save()

    def on_wait(self, waiting: waits.Waiting | None) -> None:
        """A `snoreloc.waits` subscriber: record the wait in progress (None: it ended)."""
        with self._lock:
            record = None if waiting is None else WaitRecord.of(waiting)
            ended = self._doc.waiting if record is None else None
            if ended is not None:  # the timeline keeps it (engine/intervals.py)
                intervals.close_wait(self._doc.wait_log, ended, self._clock.now())
            if record != self._doc.waiting:
                self._doc.waiting = record
                self._save()

    # --- context.Rollouts ---------------------------------------------------------------------------------------

    def pending(self) -> Mapping[str, datetime]:
        with self._lock:
            return dict(self._doc.rollouts)

    def settled(self, names: list[str]) -> None:
        with self._lock:
            for name in names:
                self._doc.rollouts.pop(name, None)
            self._save()

    # --- the timeline's record (engine/intervals.py) -------------------------------------------------------------

    def observe(self, name: str, busy: bool, since: datetime) -> None:
        """A rollout's condition as seen now (context.Rollouts): kept as an interval for the timeline."""
        with self._lock:
            started = self._doc.run.started if self._doc.run else None
            written = self._doc.rollouts.get(name)
            if intervals.observe(self._doc.rollout_log, name, busy, since, run_started=started, written=written):
                self._save()

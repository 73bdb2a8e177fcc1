"""The journal, `status.json`: the single source of truth of a relocation's progress.

Every transition (step started, finished, failed; a rollout we set in motion) rewrites the whole file atomically:
a temporary file in the same directory, fsync, rename over, fsync of the directory. A reader (or a run after a
`kill -9` or a power cut) therefore sees either the previous or the next state, never a torn one. `status`,
`analyze`, the console banner and the resumed run all read this file, and nothing else.
"""

from __future__ import annotations

import copy
import enum
import json
import os
import tempfile
import threading
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from snoreloc import errors, redact, waits
from snoreloc.adapters import clock as clock_mod
from snoreloc.engine import intervals
from snoreloc.steps import base

FORMAT_VERSION = 1


class RunState(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    DONE = "done"
    DONE_WITH_WARNINGS = "done-with-warnings"
    FAILED = "failed"
    PARTIAL = "partial"
    ROLLED_BACK = "rolled-back"


class StepState(enum.Enum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds")


def write_atomic(path: Path, data: str, mode: int = 0o600) -> None:
    """Replace `path` with `data` so that a crash at any instant leaves the old or the new content."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def read(path: Path) -> dict[str, Any]:
    """The journal's content, or an empty one when there is none yet."""
    try:
        doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"version": FORMAT_VERSION, "state": RunState.NEW.value, "steps": {}, "order": [], "rollouts": {}}
    except (OSError, ValueError) as exc:
        raise errors.UnavailableError(f"cannot read {path}: {exc}", hint="Remove the file to start afresh.") from exc
    return doc


class Journal:
    """status.json in memory, written through on every change. Thread-safe; implements `context.Rollouts`."""

    def __init__(self, path: Path, clock: clock_mod.Clock) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.RLock()
        self.doc = read(path)
        self.doc.setdefault("rollouts", {})
        self.doc.setdefault("steps", {})
        self._waiting: waits.Waiting | None = None

    # --- reading ------------------------------------------------------------------------------------------------

    def step(self, name: str) -> dict[str, Any]:
        with self._lock:
            return copy.deepcopy(self.doc["steps"].get(name, {}))

    def is_done(self, name: str, fingerprint: str) -> bool:
        record = self.step(name)
        return record.get("state") == StepState.DONE.value and record.get("fingerprint") == fingerprint

    # --- writing ------------------------------------------------------------------------------------------------

    def _save(self) -> None:
        text = redact.redact(json.dumps(self.doc, indent=2, sort_keys=True, default=str))
        write_atomic(self.path, text + "\n")

    def begin_run(self, *, site_name: str, site_fingerprint: str, order: list[str], mode: str) -> None:
        with self._lock:
            self.doc.update(
                version=FORMAT_VERSION,
                state=RunState.RUNNING.value,
                site_config={"name": site_name, "fingerprint": site_fingerprint},
                order=order,
                run={"pid": os.getpid(), "started": _iso(self._clock.now()), "finished": None, "mode": mode},
                error=None,
            )
            for name in order:
                self.doc["steps"].setdefault(name, {"state": StepState.PENDING.value})
            self.doc[intervals.ROLLOUTS], self.doc[intervals.WAITS] = [], []  # a new run draws its own timeline
            self._save()

    def start_step(self, name: str, fingerprint: str) -> None:
        with self._lock:
            record = self.doc["steps"].setdefault(name, {})
            record.update(
                state=StepState.RUNNING.value,
                fingerprint=fingerprint,
                started=_iso(self._clock.now()),
                finished=None,
                error=None,
                _started_mono=self._clock.monotonic(),
            )
            self._save()

    def _close_step(self, name: str, state: StepState) -> dict[str, Any]:
        record: dict[str, Any] = self.doc["steps"].setdefault(name, {})
        started = record.pop("_started_mono", None)
        record.update(state=state.value, finished=_iso(self._clock.now()))
        if started is not None:
            record["duration"] = round(self._clock.monotonic() - started, 3)
        return record

    def finish_step(self, name: str, outcome: base.Outcome) -> None:
        with self._lock:
            record = self._close_step(name, StepState.DONE)
            record.update(changed=list(outcome.changed), warnings=list(outcome.warnings), details=dict(outcome.details))
            for rollout, written in outcome.rollouts.items():
                self.doc["rollouts"][rollout] = _iso(written)
            self._save()

    def skip_step(self, name: str) -> None:
        """Inputs unchanged and verified: keep the record, note that this run skipped it."""
        with self._lock:
            self.doc["steps"].setdefault(name, {})["skipped"] = _iso(self._clock.now())
            self._save()

    def fail_step(self, name: str, exc: errors.SnorelocError) -> None:
        with self._lock:
            record = self._close_step(name, StepState.FAILED)
            record["error"] = {"message": exc.message, "hint": exc.hint, "exit_code": int(exc.exit_code)}
            self._save()

    def end_run(self, state: RunState, error: errors.SnorelocError | None = None) -> None:
        with self._lock:
            self.doc["state"] = state.value
            self.doc.setdefault("run", {})["finished"] = _iso(self._clock.now())
            if error is not None:
                self.doc["error"] = {"message": error.message, "hint": error.hint, "exit_code": int(error.exit_code)}
            self._save()

    def reset(self, state: RunState) -> None:
        """Forget every step (after a rollback): the next run starts from the beginning."""
        with self._lock:
            self.doc.update(state=state.value, steps={}, rollouts={})
            self._save()

    # --- context.Rollouts ---------------------------------------------------------------------------------------

    def pending(self) -> Mapping[str, datetime]:
        with self._lock:
            return {name: datetime.fromisoformat(when) for name, when in self.doc["rollouts"].items()}

    def settled(self, names: list[str]) -> None:
        with self._lock:
            for name in names:
                self.doc["rollouts"].pop(name, None)
            self._save()

    # --- the timeline's record (engine/intervals.py) -------------------------------------------------------------

    def observe(self, name: str, busy: bool, since: datetime) -> None:
        """A rollout's condition as seen now (context.Rollouts): kept as an interval for the timeline."""
        with self._lock:
            log = self.doc.setdefault(intervals.ROLLOUTS, [])
            started = intervals.when(self.doc.get("run", {}).get("started"))
            written = intervals.when(self.doc["rollouts"].get(name))
            if intervals.observe(log, name, busy, since, run_started=started, written=written):
                self._save()

    def waiting(self, state: waits.Waiting | None) -> None:
        """A `snoreloc.waits` notice: the wait's interval is journalled when it ends."""
        with self._lock:
            if state is not None:
                self._waiting = self._waiting or state
                return
            if self._waiting is not None:
                intervals.close_wait(self.doc.setdefault(intervals.WAITS, []), self._waiting, self._clock.now())
                self._waiting = None
                self._save()

"""What the timeline is drawn from, kept in the journal: the rollouts seen during the run and the waits done.

A rollout's start and end are the lastTransitionTime of its `Progressing` condition (`Updating` for the
MachineConfigPool) turning True and then False. Settle reads those conditions anyway; each reading is passed
here, and the journal keeps one interval per rollout. A rollout that began and ended between two readings shows
only its end: its start is then the time of our write that set it off (`start_seen` False), and a transition
with neither an open interval nor a write of ours is not recorded. Transitions from before the run are ignored.
Waits are recorded from `snoreloc.waits`' notices: the first report opens one, the end notice closes it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

__all__ = ["ROLLOUTS", "WAITS", "Ended", "Log", "close_wait", "observe", "when"]

ROLLOUTS = "rollout_log"
WAITS = "wait_log"


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds")


def when(text: Any) -> datetime | None:
    """A journal timestamp as a datetime (None when absent or unreadable)."""
    try:
        return datetime.fromisoformat(str(text)) if text else None
    except ValueError:
        return None


Log = list[dict[str, Any]]  # JSON-ready entries, as the journal stores them


def observe(
    log: Log, name: str, busy: bool, since: datetime, *, run_started: datetime | None, written: datetime | None
) -> bool:
    """Record that `name` was (busy) or was not rolling out since `since`; True when the log changed.
    `written`: the time of our last write that set `name` in motion, if any."""
    if run_started is None or since < run_started.replace(microsecond=0):  # clusters stamp to the second
        return False
    stamp = _iso(since)
    mine = [entry for entry in log if entry["name"] == name]
    open_ = next((entry for entry in mine if entry["finished"] is None), None)
    if busy:
        if open_ is not None or any(entry["started"] == stamp for entry in mine):
            return False
        log.append({"name": name, "started": stamp, "finished": None, "start_seen": True})
        return True
    if open_ is not None:
        open_["finished"] = stamp
        return True
    if written is None or written.replace(microsecond=0) > since or any(e["finished"] == stamp for e in mine):
        return False
    log.append({"name": name, "started": _iso(min(written, since)), "finished": stamp, "start_seen": False})
    return True


class Ended(Protocol):
    """A wait that has ended (`journal.WaitRecord`, `waits.Waiting`)."""

    @property
    def step(self) -> str: ...
    @property
    def what(self) -> str: ...
    @property
    def budget(self) -> float: ...
    @property
    def since(self) -> datetime: ...


def close_wait(log: Log, wait: Ended, finished: datetime) -> None:
    """Add a finished wait to the log."""
    log.append(
        {
            "step": wait.step,
            "what": wait.what,
            "budget": wait.budget,
            "started": _iso(wait.since),
            "finished": _iso(finished),
        }
    )

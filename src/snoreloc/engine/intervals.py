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
from typing import Any

from snoreloc.waits import Waiting

__all__ = ["ROLLOUTS", "WAITS", "close_wait", "forget", "observe", "when"]

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


def _before_run(doc: dict[str, Any], since: datetime) -> bool:
    started = when(doc.get("run", {}).get("started"))
    return started is None or since < started.replace(microsecond=0)  # clusters stamp conditions to the second


def forget(doc: dict[str, Any]) -> None:
    """A new run draws its own timeline: drop the previous run's intervals."""
    doc[ROLLOUTS], doc[WAITS] = [], []


def observe(doc: dict[str, Any], name: str, busy: bool, since: datetime) -> bool:
    """Record that `name` was (busy) or was not rolling out since `since`; True when the log changed."""
    if _before_run(doc, since):
        return False
    log: list[dict[str, Any]] = doc.setdefault(ROLLOUTS, [])
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
    return _closed_unseen(doc, log, mine, name, since)


def _closed_unseen(
    doc: dict[str, Any], log: list[dict[str, Any]], mine: list[dict[str, Any]], name: str, since: datetime
) -> bool:
    written = when(doc.get("rollouts", {}).get(name))
    stamp = _iso(since)
    if written is None or written.replace(microsecond=0) > since or any(e["finished"] == stamp for e in mine):
        return False
    log.append({"name": name, "started": _iso(min(written, since)), "finished": stamp, "start_seen": False})
    return True


def close_wait(doc: dict[str, Any], wait: Waiting, finished: datetime) -> None:
    """Add a finished wait to the log."""
    doc.setdefault(WAITS, []).append(
        {
            "step": wait.step,
            "what": wait.what,
            "budget": wait.budget,
            "started": _iso(wait.since),
            "finished": _iso(finished),
        }
    )

"""Bounded, visible waits: every wait in snoreloc goes through `until`.

At a site a wait can last twenty minutes (a kube-apiserver revision, a USB stick not yet plugged in), and the
person in front of the node has only the console. So every wait has a budget, says when it starts what it waits
for and for how long at most, and repeats where it is at least once a minute on the `snoreloc.progress` logger,
which `logs.setup` shows at the default level (console and journal alike). The wait in progress is also published
to subscribers, so the journal (and through it `snoreloc status`) can show what the run is waiting for right now.

A check returns a value when the wait is over and None to keep waiting. A `TemporaryError` raised by the check (an
API restarting under a rollout) counts as "not yet"; anything else ends the wait at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from snoreloc import errors
from snoreloc.adapters import clock as clock_mod

__all__ = ["PROGRESS", "Wait", "Waiting", "duration", "subscribe", "until"]

PROGRESS = logging.getLogger("snoreloc.progress")
T = TypeVar("T")


@dataclass(frozen=True)
class Wait:
    """What a wait is for, who waits, and its bounds (seconds)."""

    step: str
    what: str
    budget: float
    interval: float = 5.0
    report_every: float = 60.0
    hint: str = ""


@dataclass(frozen=True)
class Waiting:
    """The wait in progress, as subscribers see it."""

    step: str
    what: str
    budget: float
    since: datetime
    elapsed: float
    detail: str = ""


Listener = Callable[[Waiting | None], None]
_listeners: list[Listener] = []
_lock = threading.Lock()


def subscribe(listener: Listener) -> Callable[[], None]:
    """Call `listener` when a wait starts or reports (with a `Waiting`) and when it ends (with None)."""
    with _lock:
        _listeners.append(listener)

    def unsubscribe() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return unsubscribe


def duration(seconds: float) -> str:
    """`45s`, `3m 05s`, `1h 02m`: short enough for a console line."""
    whole = max(round(seconds), 0)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"


def until(check: Callable[[], T | None], wait: Wait, clock: clock_mod.Clock) -> T:
    """Call `check` every `wait.interval` until it returns a value; WaitTimeout once `wait.budget` is spent.

    Checks start `interval` apart, however long each took: a check that spends a second on the API does not
    push the next one a second later, so what we wait for is seen at most one interval after it happened. Between
    two checks there is always at least half an interval: a struggling API (or a simulator sharing our process)
    is never polled back to back.
    """
    started, since = clock.monotonic(), clock.now()
    report_at = started
    detail = ""
    try:
        while True:
            asked = clock.monotonic()
            value, detail = _ask(check, wait, detail)
            if value is not None:
                return value
            elapsed = clock.monotonic() - started
            if elapsed >= wait.budget:
                raise errors.WaitTimeout(wait.step, _what(wait, detail), wait.budget, hint=wait.hint or None)
            if clock.monotonic() >= report_at:
                _report(wait, since, elapsed, detail)
                report_at = clock.monotonic() + wait.report_every
            clock.sleep(_pause(wait, asked, clock.monotonic(), elapsed))
    finally:
        _publish(None)


def _pause(wait: Wait, asked: float, now: float, elapsed: float) -> float:
    """Until the next check is due (`interval` after this one started, at least half an interval from now),
    never past the budget."""
    return max(min(max(asked + wait.interval - now, wait.interval / 2), wait.budget - elapsed), 0.0)


def _ask(check: Callable[[], T | None], wait: Wait, detail: str) -> tuple[T | None, str]:
    try:
        return check(), detail
    except errors.TemporaryError as exc:
        logging.getLogger("snoreloc.waits").debug("%s: not yet: %s", wait.step, exc)
        return None, exc.message


def _what(wait: Wait, detail: str) -> str:
    return f"{wait.what} (last seen: {detail})" if detail else wait.what


def _report(wait: Wait, since: datetime, elapsed: float, detail: str) -> None:
    tail = f"; {detail}" if detail else ""
    PROGRESS.info(
        "%s: waiting for %s: %s of at most %s%s",
        wait.step,
        wait.what,
        duration(elapsed),
        duration(wait.budget),
        tail,
    )
    _publish(Waiting(wait.step, wait.what, wait.budget, since, round(elapsed, 1), detail))


def _publish(state: Waiting | None) -> None:
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(state)

"""Time as a seam: every wait, retry and deadline in snoreloc asks an injected `Clock`, never `time` directly.

A relocation waits for rollouts that take twenty minutes on real hardware. Tests cannot wait that long, so the
waits are written against this Protocol and tests pass a `FakeClock` (sleeping advances it instantly) or a
`ScaledClock` (runs at the simulator's speed, so cluster-second timeouts keep their meaning against a cluster
simulated 600 times faster than life).
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Wall time for timestamps, monotonic time for intervals, and sleeping."""

    def now(self) -> datetime: ...

    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class FakeClock:
    """A clock that only moves when slept on (or advanced): a 20-minute wait takes no real time."""

    def __init__(self, start: datetime | None = None) -> None:
        self._lock = threading.Lock()
        self._start = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._elapsed = 0.0
        self.sleeps: list[float] = []

    def now(self) -> datetime:
        with self._lock:
            return self._start + timedelta(seconds=self._elapsed)

    def monotonic(self) -> float:
        with self._lock:
            return self._elapsed

    def sleep(self, seconds: float) -> None:
        self.advance(max(seconds, 0.0))
        with self._lock:
            self.sleeps.append(seconds)

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._elapsed += seconds


class ScaledClock:
    """Real time run `speed` times faster for intervals and sleeps; `now()` stays real wall time.

    Use it against a simulator running at the same speed: a 240 s rollout takes 240 of this clock's seconds,
    so timeouts and poll intervals written in cluster seconds behave as they would on a real cluster.
    Wall time stays real because the cluster stamps conditions with real wall time.
    """

    def __init__(self, speed: float) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = speed
        self._origin = time.monotonic()

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return self._origin + (time.monotonic() - self._origin) * self.speed

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds / self.speed)

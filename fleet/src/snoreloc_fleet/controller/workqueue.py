"""A deduplicating queue of keys for the controller's reconcile workers: memory O(keys), never O(events).

The watch hands the controller one event per change of a Site; a reconcile reads the Site afresh anyway, so what
must wait for a worker is only *which* Site needs one. This queue holds keys: a key added while it waits is not
added twice (a burst of events for one Site coalesces into one reconcile), a key added while a worker reconciles
it is marked dirty and handed out again once that worker is `done` (so one key is never reconciled twice at once,
and no change is missed), and a key that failed comes back after a per-key exponential back-off.

The semantics are client-go's workqueue (kubernetes/client-go `util/workqueue/queue.go`, type `Type`: `Add`, `Get`,
`Done` over the sets `dirty` and `processing`; `delaying_queue.go` `AddAfter`, which keeps the earliest of two
delays for one item; `default_rate_limiters.go` `ItemExponentialFailureRateLimiter` with `Forget`). Python has no
maintained equivalent (kopf queues whole events per object), hence this small one.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    """Keys waiting for a worker. `get` blocks until one is due (or the queue is shut down: None); every key got
    must be given back with `done`. `add_after` and `retry` delay a key; `forget` clears its failures."""

    def __init__(
        self,
        *,
        base_delay: float = 1.0,
        max_delay: float = 300.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.base_delay, self.max_delay = base_delay, max_delay
        self._monotonic = monotonic
        self._cond = threading.Condition()
        self._queue: deque[K] = deque()  # in order; each key here is in _dirty and not in _processing
        self._dirty: set[K] = set()  # keys that need a reconcile (queued, or waiting for their worker to finish)
        self._processing: set[K] = set()  # keys a worker holds
        self._waiting: dict[K, float] = {}  # key -> when it is due (the earliest asked for)
        self._heap: list[tuple[float, int, K]] = []  # (due, sequence, key); stale entries are skipped
        self._sequence = 0
        self._failures: dict[K, int] = {}
        self._first: set[K] = set()  # keys added with `add_first` not yet handed out: ahead of the others
        self._shutdown = False

    def add(self, key: K) -> None:
        """Mark `key` as needing a reconcile (at once)."""
        with self._cond:
            self._add(key)

    def _add(self, key: K) -> None:
        if self._shutdown or key in self._dirty:
            return
        self._dirty.add(key)
        self._waiting.pop(key, None)  # due now: an earlier delayed add of it is moot
        if key not in self._processing:
            self._queue.append(key)
            self._cond.notify()

    def add_first(self, key: K) -> None:
        """Mark `key` as needing a reconcile ahead of every key queued (an urgent one: a medium its node has read,
        to eject now rather than after every insert queued); a key already queued moves to the front."""
        with self._cond:
            if self._shutdown:
                return
            self._first.add(key)
            if key in self._processing:  # queued first when its worker is done
                self._dirty.add(key)
                self._waiting.pop(key, None)
                return
            if key in self._dirty:
                self._queue.remove(key)  # O(queued): only for the few urgent keys
            self._dirty.add(key)
            self._waiting.pop(key, None)
            self._queue.appendleft(key)
            self._cond.notify()

    def add_after(self, key: K, delay: float) -> None:
        """Add `key` after `delay` seconds (at once for 0); two delays for one key: the earlier wins."""
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            if self._shutdown or key in self._dirty:
                return
            due = self._monotonic() + delay
            if key in self._waiting and self._waiting[key] <= due:
                return
            self._waiting[key] = due
            self._sequence += 1
            heapq.heappush(self._heap, (due, self._sequence, key))
            self._cond.notify()

    def retry(self, key: K) -> float:
        """Add `key` again after its back-off (`base_delay` doubled per failure in a row, at most `max_delay`)."""
        with self._cond:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        delay = min(self.max_delay, self.base_delay * 2.0**failures)
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """`key` succeeded: its next failure waits `base_delay` again."""
        with self._cond:
            self._failures.pop(key, None)

    def get(self, timeout: float | None = None) -> K | None:
        """The next key due, now held by the caller until `done`; None when shut down (or after `timeout`)."""
        deadline = None if timeout is None else self._monotonic() + timeout
        with self._cond:
            while True:
                self._promote_due()
                if self._queue:
                    key = self._queue.popleft()
                    self._first.discard(key)
                    self._dirty.discard(key)
                    self._processing.add(key)
                    return key
                if self._shutdown:
                    return None
                wait = self._next_wait(deadline)
                if wait is not None and wait <= 0:
                    return None
                self._cond.wait(wait)

    def _promote_due(self) -> None:
        now = self._monotonic()
        while self._heap and self._heap[0][0] <= now:
            due, _, key = heapq.heappop(self._heap)
            if self._waiting.get(key) == due:
                del self._waiting[key]
                self._add(key)

    def _next_wait(self, deadline: float | None) -> float | None:
        """Seconds until the next delayed key is due or the caller's deadline (<= 0: the deadline passed)."""
        now = self._monotonic()
        if deadline is not None and deadline <= now:
            return 0.0
        dues = [when for when in (self._heap[0][0] if self._heap else None, deadline) if when is not None]
        return max(0.001, min(dues) - now) if dues else None

    def done(self, key: K) -> None:
        """The worker holding `key` is finished; if it was marked dirty meanwhile, it is queued again."""
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                if key in self._first:
                    self._queue.appendleft(key)
                else:
                    self._queue.append(key)
                self._cond.notify()

    def shutdown(self) -> None:
        """Add nothing more; workers waiting in `get` get None (keys still queued are dropped)."""
        with self._cond:
            self._shutdown = True
            self._queue.clear()
            self._first.clear()
            self._dirty.clear()
            self._waiting.clear()
            self._heap.clear()
            self._cond.notify_all()

    def queued(self) -> tuple[K, ...]:
        """The keys waiting for a worker now, in order (for tests and metrics)."""
        with self._cond:
            return tuple(self._queue)

    def delayed(self) -> tuple[K, ...]:
        """The keys waiting for their back-off to end."""
        with self._cond:
            return tuple(self._waiting)

    def processing(self) -> frozenset[K]:
        with self._cond:
            return frozenset(self._processing)

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

"""Watches that resume from a resourceVersion, with bookmarks and 410 Gone, as kube-apiserver's watch cache serves.

kube-apiserver keeps a bounded window of recent changes per type (the watch cache) and serves every watch from it
(kubernetes/kubernetes, staging/src/k8s.io/apiserver/pkg/storage/cacher/):
- `watch_cache.go`, `getAllEventsSinceLocked`: a watch from resourceVersion X gets every change after X; when X is
  older than the window it fails with `Expired` (410) "too old resource version: X (oldest-1)". Without a
  resourceVersion, or with "0", it first gets a synthetic ADDED event per existing object.
- `cacher.go`, `Watch`/`cacheWatcher.process`: the failure reaches the client as an ERROR event whose object is the
  Status (code 410), and the stream ends; `cacheWatcher.convertToWatchEvent`: with a selector, an object that
  starts matching arrives as ADDED and one that stops matching as DELETED.
- bookmarks (`allowWatchBookmarks=true`): a BOOKMARK event whose object carries only kind, apiVersion and the
  resourceVersion the watcher has caught up to (kube sends one about once a minute, `bookmarkFrequency`);
  `sendInitialEvents=true` ends the synthetic ADDED events with a bookmark annotated
  `k8s.io/initial-events-end: "true"`.
- the stream ends after `timeoutSeconds` (a clean end; clients then resume from their last resourceVersion).

Here one window holds every type's changes (`History`), in resourceVersion order because the hub serialises its
writes. `compact()` moves the window past every change so far, which is how tests force 410 on watches and lists.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from snoreloc_sim.kube import messages, model

Obj = dict[str, Any]
Matcher = Callable[[Obj], bool]
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_POLL_SECONDS = 0.5


@dataclass(frozen=True)
class Change:
    """One committed change: its resourceVersion, type key, event and the object before and after."""

    rv: int
    key: str
    event: str
    old: Obj | None
    new: Obj | None


def expired(rv: int, floor: int) -> model.ApiError:
    return model.ApiError(410, "Expired", f"too old resource version: {rv} ({floor})")


class History:
    """The last `window` changes of every type; a store listener (subscribe it before any listener that writes)."""

    def __init__(self, store: model.Store, window: int) -> None:
        self._store = store
        self.window = window
        self._cond = threading.Condition()
        self._changes: collections.deque[Change] = collections.deque()
        self._floor = int(store.current_rv())  # every change after this resourceVersion is kept
        self._head = self._floor
        self._generation = 0  # bumped on restart: open streams end
        store.subscribe(self.record)

    def record(self, rtype: model.ResourceType, event: str, old: Obj | None, new: Obj | None) -> None:
        if event == "DELETED" and old is not None:
            # the deletion is a change of its own, with a resourceVersion newer than the object's last one
            rv = int(self._store.current_rv())
            old = {**old, "metadata": {**old["metadata"], "resourceVersion": str(rv)}}
        elif new is not None:
            rv = int(new["metadata"]["resourceVersion"])
        else:
            return
        with self._cond:
            self._changes.append(Change(rv, rtype.key, event, old, new))
            self._head = max(self._head, rv)
            while len(self._changes) > self.window:
                self._floor = self._changes.popleft().rv
            self._cond.notify_all()

    @property
    def floor(self) -> int:
        with self._cond:
            return self._floor

    @property
    def head(self) -> int:
        with self._cond:
            return self._head

    @property
    def generation(self) -> int:
        with self._cond:
            return self._generation

    def check(self, rv: int) -> None:
        """Raise 410 when changes after `rv` are no longer all kept."""
        with self._cond:
            if rv < self._floor:
                raise expired(rv, self._floor)

    def compact(self) -> None:
        """Forget every change so far, as etcd compaction does: resuming from any earlier version gets 410."""
        floor = int(self._store.current_rv())
        with self._cond:
            self._changes.clear()
            self._floor = self._head = floor
            self._cond.notify_all()

    def restart(self) -> None:
        """End every open stream (the connections are dropped by the caller)."""
        with self._cond:
            self._generation += 1
            self._cond.notify_all()

    def after(self, rv: int, timeout: float) -> tuple[list[Change], int]:
        """The changes after `rv` (waiting up to `timeout` for one) and the version they bring the caller to."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if rv < self._floor:
                    raise expired(rv, self._floor)
                found = list(itertools.takewhile(lambda change: change.rv > rv, reversed(self._changes)))[::-1]
                left = deadline - time.monotonic()
                if found or left <= 0:
                    return found, max(rv, self._head)
                self._cond.wait(left)


@dataclass(frozen=True)
class Watch:
    """One watch request: which objects, from where, for how long."""

    rtype: model.ResourceType
    namespace: str | None
    matches: Matcher
    start: str  # the resourceVersion parameter ("" when absent)
    bookmarks: bool
    initial_events: bool
    seconds: float


def event_for(change: Change, watch: Watch) -> Obj | None:
    """The event a watcher sees for a change (None: not its business), as `convertToWatchEvent` decides."""
    if change.key != watch.rtype.key:
        return None

    def visible(obj: Obj | None) -> bool:
        if obj is None:
            return False
        namespace = obj.get("metadata", {}).get("namespace")
        return (watch.namespace is None or namespace == watch.namespace) and watch.matches(obj)

    now, before = visible(change.new), visible(change.old)
    if change.event == "DELETED":
        return {"type": "DELETED", "object": change.old} if before else None
    if now:
        return {"type": "MODIFIED" if before and change.event == "MODIFIED" else "ADDED", "object": change.new}
    if before and change.old is not None:  # the previous content, with the change's resourceVersion
        gone = {**change.old, "metadata": {**change.old["metadata"], "resourceVersion": str(change.rv)}}
        return {"type": "DELETED", "object": gone}
    return None


def bookmark(rtype: model.ResourceType, rv: int, *, initial_end: bool = False) -> Obj:
    meta: Obj = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    return {"type": "BOOKMARK", "object": {"kind": rtype.kind, "apiVersion": rtype.api_version, "metadata": meta}}


class Streams:
    """Serves watch streams from a `History`; `snapshot(watch)` lists the matching objects and the version they
    are at, consistently with the history (under the hub's write lock)."""

    def __init__(
        self,
        history: History,
        snapshot: Callable[[Watch], tuple[list[Obj], int]],
        stopped: threading.Event,
        bookmark_seconds: float,
    ) -> None:
        self.history = history
        self._snapshot = snapshot
        self._stopped = stopped
        self.bookmark_seconds = bookmark_seconds

    def open(self, watch: Watch) -> Iterator[Obj]:
        """The stream's events; an expired start ends it after one ERROR event (code 410)."""
        generation = self.history.generation
        if watch.start in ("", "0") or watch.initial_events:
            items, position = self._snapshot(watch)
            initial = [{"type": "ADDED", "object": obj} for obj in items]
        else:
            position, initial = _parse_rv(watch.start), []
            try:
                self.history.check(position)
            except model.ApiError as error:
                return iter([{"type": "ERROR", "object": messages.status_body(error)}])
        return self._run(watch, initial, position, generation)

    def _run(self, watch: Watch, initial: list[Obj], position: int, generation: int) -> Iterator[Obj]:
        yield from initial
        if watch.initial_events and watch.bookmarks:
            yield bookmark(watch.rtype, position, initial_end=True)
        deadline = time.monotonic() + watch.seconds
        next_bookmark = time.monotonic() + self.bookmark_seconds
        while not self._stopped.is_set() and self.history.generation == generation:
            now = time.monotonic()
            if now >= deadline:
                return
            wait = min(deadline, next_bookmark if watch.bookmarks else deadline) - now
            try:
                changes, reached = self.history.after(position, max(0.0, min(wait, _POLL_SECONDS)))
            except model.ApiError as error:
                yield {"type": "ERROR", "object": messages.status_body(error)}
                return
            for change in changes:
                event = event_for(change, watch)
                if event is not None:
                    yield event
            position = reached
            if watch.bookmarks and time.monotonic() >= next_bookmark:
                yield bookmark(watch.rtype, position)
                next_bookmark = time.monotonic() + self.bookmark_seconds


def _parse_rv(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise model.ApiError(400, "BadRequest", f"invalid resource version: {text!r}") from None

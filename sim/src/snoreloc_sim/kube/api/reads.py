"""Reads: get, list (selectors, `limit`/`continue` pages) and watch (a stream of change events from now on).

A watch keeps no history: it starts from "now" whatever resourceVersion it names, and lasts `timeoutSeconds`, at
most `MAX_WATCH_SECONDS` (the hub's `hub.watch` resumes from a resourceVersion instead).
"""

from __future__ import annotations

import base64
import contextlib
import queue
import time
from collections.abc import Iterator
from typing import Any

from snoreloc_sim.kube import model
from snoreloc_sim.kube.api.paths import Paths, Target
from snoreloc_sim.kube.api.selectors import Matcher, field_matcher, label_matcher
from snoreloc_sim.kube.messages import Request, Response

Obj = dict[str, Any]
MAX_WATCH_SECONDS = 300.0


class Reads(Paths):
    """Get, list and watch over the cluster's store."""

    def _get(self, target: Target) -> Obj:
        assert target.name is not None
        return self.cluster.store.get(target.rtype, target.name, target.namespace or "")

    def _selected(self, request: Request, target: Target) -> list[Obj]:
        items = self.cluster.store.list(target.rtype, target.namespace)
        matchers = self._matchers(request, target)
        return [obj for obj in items if all(match(obj) for match in matchers)]

    def _matchers(self, request: Request, target: Target) -> list[Matcher]:
        """The list's label and field selectors as predicates (none when it has neither)."""
        matchers: list[Matcher] = []
        if request.query.get("labelSelector"):
            matchers.append(label_matcher(request.query["labelSelector"]))
        if request.query.get("fieldSelector"):
            matchers.append(field_matcher(target.rtype, request.query["fieldSelector"]))
        return matchers

    def _list(self, request: Request, target: Target) -> Response:
        if request.query.get("watch", "").lower() in ("true", "1"):
            return self._watch(request, target)
        items = self._selected(request, target)
        meta: Obj = {"resourceVersion": self.cluster.store.current_rv()}
        items, more = page(items, request.query)
        if more:
            meta["continue"] = more
        rtype = target.rtype
        return Response(
            200, {"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version, "metadata": meta, "items": items}
        )

    def _watch(self, request: Request, target: Target) -> Response:
        seconds = min(float(request.query.get("timeoutSeconds") or MAX_WATCH_SECONDS), MAX_WATCH_SECONDS)
        matchers = [m for m in (self._watch_filters(request, target)) if m is not None]
        events: queue.Queue[Obj] = queue.Queue()

        def listener(rtype: model.ResourceType, event: str, old: Obj | None, new: Obj | None) -> None:
            obj = new if new is not None else old
            if rtype.key != target.rtype.key or obj is None:
                return
            if target.namespace is not None and obj["metadata"].get("namespace") != target.namespace:
                return
            if all(match(obj) for match in matchers):
                events.put({"type": event, "object": obj})

        return Response(200, "", stream=self._stream(listener, events, seconds))

    def _watch_filters(self, request: Request, target: Target) -> list[Matcher | None]:
        label, fields = request.query.get("labelSelector"), request.query.get("fieldSelector")
        return [
            label_matcher(label) if label else None,
            field_matcher(target.rtype, fields) if fields else None,
        ]

    def _stream(self, listener: model.ChangeListener, events: queue.Queue[Obj], seconds: float) -> Iterator[Obj]:
        self.cluster.store.subscribe(listener)
        deadline = time.monotonic() + seconds
        try:
            while (left := deadline - time.monotonic()) > 0 and not self.stopped.is_set():
                with contextlib.suppress(queue.Empty):
                    yield events.get(timeout=min(left, 0.5))
        finally:
            self.cluster.store.unsubscribe(listener)


def page(items: list[Obj], query: dict[str, str]) -> tuple[list[Obj], str]:
    """Apply `limit`/`continue` (an opaque offset token); returns the page and the next token ("" at the end)."""
    start = 0
    if query.get("continue"):
        try:
            start = int(base64.urlsafe_b64decode(query["continue"].encode()).decode())
        except ValueError:
            raise model.ApiError(410, "Expired", "the provided continue parameter is too old") from None
    limit = int(query.get("limit") or 0)
    if limit <= 0:
        return items[start:], ""
    end = start + limit
    token = base64.urlsafe_b64encode(str(end).encode()).decode() if end < len(items) else ""
    return items[start:end], token

"""The hub's resource semantics: the kube layer's `kube.api.Api` with what a plain kube-apiserver adds for the hub.

`HubApi` keeps the object paths, writes, patches, validation and server-side apply of `kube.api.Api` and changes
only what differs on a plain Kubernetes hub: discovery with every verb and category (`discovery`), watches that
resume from a resourceVersion (`watch`), lists with consistent continue tokens (`paging`) joined from each
object's kept encoding (`encodings`), TokenRequest (`tokens`), finalizers and owner references on delete
(`lifecycle`), and server-side printing (`tables`).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from snoreloc_sim.hub import crds, discovery, encodings, kinds, lifecycle, namespaces, paging, tables, tokens, watch
from snoreloc_sim.kube import api as kube_api
from snoreloc_sim.kube import messages, model, registry
from snoreloc_sim.kube.api import admission, paths, reads

Obj = dict[str, Any]


def version_info() -> Obj:
    """`/version` of the Kubernetes release the hub models."""
    return {
        "major": "1",
        "minor": "30",
        "gitVersion": "v1.30.4",
        "gitCommit": "a51b3b711150f57ffc1f526a640ec058514ed596",
        "gitTreeState": "clean",
        "buildDate": "2024-08-14T19:04:58Z",
        "goVersion": "go1.22.5",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


class HubApi(kube_api.Api):
    """`kube_api.Api` over the hub's catalog of types (built-ins plus CRDs created at run time)."""

    def __init__(
        self, cluster: model.Cluster, admitter: admission.Admitter, *, history_window: int, bookmark_seconds: float
    ) -> None:
        empty = registry.Registry(types={}, builtin=frozenset())
        super().__init__(cluster, empty, admitter, version_info())
        self.write_lock = threading.RLock()  # writes and list snapshots, so the history stays in order
        self.history = watch.History(cluster.store, history_window)
        self.streams = watch.Streams(self.history, self._snapshot, self.stopped, bookmark_seconds)
        self.catalog: crds.Catalog | None = None
        self.tokens: tokens.Tokens | None = None
        self.lifecycle: lifecycle.Lifecycle | None = None
        self.namespaces: namespaces.Namespaces | None = None
        self.encodings = encodings.Encodings()  # each object's JSON per version: a page joins them (`_list`)

    def _route(self, request: messages.Request, conflict: bool) -> messages.Response:
        if request.path == "/openapi/v2":
            # kubectl 1.20 fetches the OpenAPI v2 document (protobuf) to validate client-side; an empty body is a
            # valid empty document, so kubectl skips its own validation and the hub's admission decides.
            return messages.Response(200, "")
        return super()._route(request, conflict)

    def _discovery(self, parts: list[str]) -> Obj | None:
        resources = parts == ["api", "v1"] or (len(parts) == 3 and parts[0] == "apis")
        if not resources or self.catalog is None:
            return super()._discovery(parts)
        group, version = ("", "v1") if parts[0] == "api" else (parts[1], parts[2])
        found = discovery.resource_list(self.registry, self.catalog.extras, group, version)
        if found is None:
            raise model.ApiError(404, "NotFound", "the server could not find the requested resource")
        return found

    def _resource(self, request: messages.Request, target: paths.Target, conflict: bool) -> messages.Response:
        if target.subresource == "token" and target.name is not None and self.tokens is not None:
            if request.method != "POST":
                raise model.ApiError(
                    405, "MethodNotAllowed", f"the server does not allow this method: {request.method}"
                )
            body = self._decode(request)
            return messages.Response(201, self.tokens.request(target.namespace or "", target.name, body))
        response = super()._resource(request, target, conflict)
        if request.method != "GET" or response.code != 200 or not tables.wants_table(request.accept):
            return response
        printer = self._printer(target)
        if response.stream is not None:  # each watch event's object becomes a one-row Table (`kubectl get -w`)
            response.stream = tables.table_events(response.stream, printer, request.query)
            return response
        assert isinstance(response.body, dict)
        return messages.Response(200, tables.table(response.body, printer, request.query), response.warnings)

    def _printer(self, target: paths.Target) -> tables.Printer:
        columns = self.catalog.columns(target.rtype.key) if self.catalog is not None else None
        if columns is not None:
            return tables.crd_printer(columns)
        return tables.BUILTIN_PRINTERS.get(target.rtype.key, tables.DEFAULT_PRINTER)

    def _delete(self, request: messages.Request, target: paths.Target) -> messages.Response:
        if self.lifecycle is None or request.query.get("dryRun") == "All":
            return super()._delete(request, target)
        old = self._get(target)
        options = self._decode(request) if request.body else {}
        orphan = options.get("propagationPolicy") == "Orphan" or options.get("orphanDependents") is True
        if target.rtype.key == "namespaces" and self.namespaces is not None:
            left = self.namespaces.delete(old)
        elif target.rtype.key == kinds.CRDS and self.catalog is not None:
            left = self.catalog.delete(old, self.lifecycle.delete)
        else:
            left = self.lifecycle.delete(target.rtype, old, orphan=orphan)
        if left is not None:
            return messages.Response(200, left)
        if self.registry.is_builtin(target.rtype):
            return messages.Response(200, messages.success_status(target.rtype, old))
        return messages.Response(200, old)

    def _delete_collection(self, request: messages.Request, target: paths.Target) -> messages.Response:
        """`deletecollection`: each object deleted as one DELETE would (finalizers, dependents)."""
        if self.lifecycle is None or request.query.get("dryRun") == "All":
            return super()._delete_collection(request, target)
        doomed = self._selected(request, target)
        for obj in doomed:
            with contextlib.suppress(model.ApiError):
                self.lifecycle.delete(target.rtype, obj)
        rtype = target.rtype
        meta = {"resourceVersion": self.cluster.store.current_rv()}
        body = {"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version, "metadata": meta, "items": doomed}
        return messages.Response(200, body)

    # lists and watches

    def _list(self, request: messages.Request, target: paths.Target) -> messages.Response:
        query = request.query
        if query.get("watch", "").lower() in ("true", "1"):
            return self._watch(request, target)
        if query.get("resourceVersionMatch") == "Exact":
            self.history.check(_rv(query.get("resourceVersion", "")))
        matchers = self._matchers(request, target)
        matches = (lambda obj: all(match(obj) for match in matchers)) if matchers else None
        store, rtype = self.cluster.store, target.rtype
        try:
            with self.write_lock:
                rv, floor = int(store.current_rv()), self.history.floor
                if tables.wants_table(request.accept):  # printed from the objects (`_resource`)

                    def copies(start: str, limit: int) -> tuple[list[Obj], int | None]:
                        return store.scan(rtype, target.namespace, start, limit, matches)

                    items, meta = paging.page(copies, query, rv, floor, paging.key_of)
                    body = {"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version, "metadata": meta}
                    return messages.Response(200, {**body, "items": items})

                def encoded(start: str, limit: int) -> tuple[list[encodings.Encoded], int | None]:
                    return store.scan(rtype, target.namespace, start, limit, matches, hand=self.encodings.encode)

                shown, meta = paging.page(encoded, query, rv, floor, lambda item: item.key)
        except model.ApiError as error:
            fresh = error.details.pop("continue", None)
            status = messages.status_body(error)
            if fresh:
                status["metadata"] = {"continue": fresh}
            return messages.Response(error.code, status)
        return messages.Response(200, encodings.list_body(f"{rtype.kind}List", rtype.api_version, meta, shown))

    def _watch(self, request: messages.Request, target: paths.Target) -> messages.Response:
        query = request.query
        seconds = min(float(query.get("timeoutSeconds") or reads.MAX_WATCH_SECONDS), reads.MAX_WATCH_SECONDS)
        matchers = [m for m in self._watch_filters(request, target) if m is not None]
        spec = watch.Watch(
            rtype=target.rtype,
            namespace=target.namespace,
            matches=lambda obj: all(match(obj) for match in matchers),
            start=query.get("resourceVersion", ""),
            bookmarks=query.get("allowWatchBookmarks", "").lower() == "true",
            initial_events=query.get("sendInitialEvents", "").lower() == "true",
            seconds=seconds,
        )
        return messages.Response(200, "", stream=self.streams.open(spec))

    def _snapshot(self, spec: watch.Watch) -> tuple[list[Obj], int]:
        with self.write_lock:
            items = self.cluster.store.list(spec.rtype, spec.namespace)
            return [obj for obj in items if spec.matches(obj)], self.history.head


def _rv(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise model.ApiError(400, "BadRequest", f"invalid resource version: {text!r}") from None

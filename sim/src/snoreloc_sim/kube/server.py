"""The simulated kube-apiserver's protocol: HTTPS, bearer tokens, discovery, object paths, Status errors, faults.

The agent and its tests talk to the simulator with the official `kubernetes` client and `kubectl`, unmodified, so
everything they rely on is answered as kube-apiserver answers it: the URL layout (core `/api/v1`, groups under
`/apis`, namespaced and cluster-scoped, `status`/`approval` subresources), discovery documents, `Status` bodies
with reason, details and causes, list envelopes with a resourceVersion, label and field selectors, `dryRun`,
`fieldValidation`, the three patch dialects (see `patch`), and `Warning` headers.

Three layers, outermost first:
- `_Handler`/`_HttpServer`: HTTP/1.1 over TLS on 127.0.0.1; drops connections when told to (outage, faults).
- `Front`: availability (scripted outages), bearer-token auth, injected faults (see `faults`).
- `Api`: the resource semantics over `model.Store`, with admission hooks and schema validation before a write.

Deliberate simplifications: `watch=true` streams are served (chunked JSON lines of change events, bounded by
`timeoutSeconds`, at most `MAX_WATCH_SECONDS`) but keep no history: a watch starts from "now" whatever
resourceVersion it names. Namespaces live and die as in `namespaces` (Terminating, content first). `as=Table`
requests get plain JSON (kubectl then prints client-side). Server-side apply (`apply`)
is served on main resources, not on subresources.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import hmac
import http.client
import http.server
import json
import logging
import queue
import re
import secrets
import socket
import socketserver
import ssl
import struct
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Protocol

import yaml

from snoreloc_sim.kube import apply, csr_rules, faults, model, namespaces, patch, registry, typed

Obj = dict[str, Any]
LOG = logging.getLogger(__name__)

PUBLIC_PATHS = frozenset({"/readyz", "/livez", "/healthz", "/version"})
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
MAX_WATCH_SECONDS = 300.0
HANDSHAKE_SECONDS = 10.0
IDLE_SECONDS = 120.0
MAX_HEADER_LINE = 65536  # the limits http.client applies to a header block
MAX_HEADERS = 100
PATCH_RETRIES = 5


# values passed between the layers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    content_type: str
    body: bytes
    authorization: str = ""
    user_agent: str = ""
    accept: str = ""
    impersonate_user: str = ""

    @staticmethod
    def parse(method: str, target: str, headers: dict[str, str], body: bytes) -> Request:
        split = urllib.parse.urlsplit(target)
        query = dict(urllib.parse.parse_qsl(split.query, keep_blank_values=True))
        return Request(
            method=method,
            path=split.path.rstrip("/") or "/",
            query=query,
            content_type=headers.get("content-type", ""),
            body=body,
            authorization=headers.get("authorization", ""),
            user_agent=headers.get("user-agent", ""),
            accept=headers.get("accept", ""),
            impersonate_user=headers.get("impersonate-user", ""),
        )


@dataclass
class Response:
    code: int
    body: Obj | str | bytes  # an object (sent as JSON), plain text, or JSON already encoded
    warnings: list[str] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    stream: Iterator[Obj] | None = None


def status_body(error: model.ApiError) -> Obj:
    """The `Status` object kube-apiserver sends with a refusal."""
    body: Obj = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": error.message,
        "reason": error.reason,
        "code": error.code,
    }
    if not error.reason:
        del body["reason"]  # StatusReasonUnknown is "" and omitted, as for the 500 of a refused apply body
    details = dict(error.details)
    if error.causes:
        details["causes"] = list(error.causes)
    if details:
        body["details"] = details
    return body


def error_response(error: model.ApiError) -> Response:
    return Response(error.code, status_body(error))


def success_status(rtype: model.ResourceType, obj: Obj) -> Obj:
    meta = obj.get("metadata", {})
    details = {"name": meta.get("name", ""), "group": rtype.group, "kind": rtype.plural, "uid": meta.get("uid", "")}
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def version_info(openshift_version: str) -> Obj:
    """`/version` for an OpenShift release: 4.N ships Kubernetes 1.(N+13) (4.14 -> 1.27, 4.16 -> 1.29)."""
    minor = int(openshift_version.split(".")[1]) + 13
    return {
        "major": "1",
        "minor": str(minor),
        "gitVersion": f"v1.{minor}.10+67d3387",
        "gitCommit": "67d338757e35bd1e2a3e9b6d1f2b0c1f0d6a8a51",
        "gitTreeState": "clean",
        "buildDate": "2024-10-01T00:00:00Z",
        "goVersion": "go1.21.13",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


# the validation seam ----------------------------------------------------------------------------------------------


class Admitter(Protocol):
    """Schema validation (the `validation` module): prune, default and check an object before it is stored."""

    def admit(
        self, rtype: model.ResourceType, new: Obj, old: Obj | None, *, subresource: str = ""
    ) -> tuple[Obj, list[str]]: ...

    def unknown_fields(self, rtype: model.ResourceType, obj: Obj) -> list[str]: ...

    def schema(self, rtype: model.ResourceType) -> Obj | None:
        """The type's OpenAPI schema (server-side apply merges lists by it), or None when unknown."""


class AcceptAll:
    """An Admitter that checks nothing, for when the validation module is not available."""

    def admit(
        self, rtype: model.ResourceType, new: Obj, old: Obj | None, *, subresource: str = ""
    ) -> tuple[Obj, list[str]]:
        return copy.deepcopy(new), []

    def unknown_fields(self, rtype: model.ResourceType, obj: Obj) -> list[str]:
        return []

    def schema(self, rtype: model.ResourceType) -> Obj | None:
        return None


# selectors --------------------------------------------------------------------------------------------------------

Matcher = Callable[[Obj], bool]
_REQUIREMENT = re.compile(
    r"^\s*(?P<neg>!)?\s*(?P<key>[A-Za-z0-9._/-]+)\s*"
    r"(?:(?P<op>==|=|!=)\s*(?P<value>[A-Za-z0-9._-]*)|\s(?P<setop>in|notin)\s*\((?P<set>[^)]*)\)\s*)?$"
)


def _split_requirements(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [part for part in [*parts, current] if part.strip()]


def _bad_selector(text: str) -> model.ApiError:
    return model.ApiError(400, "BadRequest", f"unable to parse requirement: invalid label selector {text!r}")


def _label_requirement(text: str) -> Matcher:
    found = _REQUIREMENT.match(text)
    if found is None or (found["neg"] and (found["op"] or found["setop"])):
        raise _bad_selector(text)
    key = found["key"]
    if found["neg"]:
        return lambda labels: key not in labels
    if found["op"]:
        value, equal = found["value"], found["op"] != "!="
        return lambda labels: (labels.get(key) == value) == equal
    if found["setop"]:
        values = {v.strip() for v in found["set"].split(",") if v.strip()}
        if found["setop"] == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    return lambda labels: key in labels


def label_matcher(selector: str) -> Matcher:
    """A predicate over an object from a `labelSelector` (=, ==, !=, exists, !exists, in, notin)."""
    requirements = [_label_requirement(part) for part in _split_requirements(selector)]

    def matches(obj: Obj) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(requirement(labels) for requirement in requirements)

    return matches


FIELD_LABELS: dict[str, tuple[str, ...]] = {
    "secrets": ("type",),
    "pods": ("spec.nodeName", "status.phase"),
    "namespaces": ("status.phase",),
    # pkg/registry/core/event/strategy.go, ToSelectableFields (`kubectl describe` selects by involvedObject.uid)
    "events": (
        *(f"involvedObject.{name}" for name in ("name", "namespace", "kind", "uid", "apiVersion", "resourceVersion")),
        *("involvedObject.fieldPath", "reason", "type", "reportingComponent"),
    ),
    "certificatesigningrequests.certificates.k8s.io": ("spec.signerName",),
}


def _dig(obj: Obj, path: str) -> str:
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return "" if node is None else str(node)


def field_matcher(rtype: model.ResourceType, selector: str) -> Matcher:
    """A predicate from a `fieldSelector`: `metadata.name`, `metadata.namespace` and the type's own field labels."""
    allowed = ("metadata.name", "metadata.namespace", *FIELD_LABELS.get(rtype.key, ()))
    checks: list[tuple[str, str, bool]] = []
    for part in _split_requirements(selector):
        found = re.match(r"^\s*([A-Za-z0-9._]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if found is None:
            raise model.ApiError(400, "BadRequest", f"invalid field selector {part!r}")
        if found[1] not in allowed:
            raise model.ApiError(400, "BadRequest", f'field label not supported: "{found[1]}"')
        checks.append((found[1], found[3], found[2] != "!="))
    return lambda obj: all((_dig(obj, path) == value) == equal for path, value, equal in checks)


# the resource semantics -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """What an object path names."""

    rtype: model.ResourceType
    namespace: str | None
    name: str | None
    subresource: str = ""


def _not_found_path() -> model.ApiError:
    return model.ApiError(404, "NotFound", "the server could not find the requested resource")


def _method_not_allowed(method: str) -> model.ApiError:
    return model.ApiError(
        405, "MethodNotAllowed", f"the server does not allow this method on the requested resource: {method}"
    )


def _bad_request(message: str) -> model.ApiError:
    return model.ApiError(400, "BadRequest", message)


class Api:
    """Requests in, Responses out, over the cluster's store: no sockets here, so it can be exercised directly."""

    def __init__(
        self,
        cluster: model.Cluster,
        served: registry.Registry,
        admitter: Admitter,
        version: Obj,
        server_address: str = "127.0.0.1:0",
    ) -> None:
        self.cluster = cluster
        self.registry = served
        self.admitter = admitter
        self.version = version
        self.server_address = server_address
        self.stopped = threading.Event()

    def handle(self, request: Request, *, conflict: bool = False) -> Response:
        try:
            return self._route(request, conflict)
        except model.ApiError as error:
            return error_response(error)

    def _route(self, request: Request, conflict: bool) -> Response:
        if request.path in ("/readyz", "/livez", "/healthz"):
            return Response(200, "ok")
        if request.path == "/version":
            return Response(200, self.version)
        parts = [urllib.parse.unquote(p) for p in request.path.strip("/").split("/")]
        document = self._discovery(parts)
        if document is not None:
            if request.method != "GET":
                raise _method_not_allowed(request.method)
            return Response(200, document)
        return self._resource(request, self._target(parts), conflict)

    def _discovery(self, parts: list[str]) -> Obj | None:
        if parts == ["api"]:
            return registry.api_versions(self.server_address)
        if parts == ["apis"]:
            return registry.api_group_list(self.registry)
        if len(parts) == 2 and parts[0] == "apis":
            versions = self.registry.group_versions().get(parts[1])
            if not versions:
                raise _not_found_path()
            return registry.api_group(parts[1], versions)
        if parts == ["api", "v1"] or (len(parts) == 3 and parts[0] == "apis"):
            group, version = ("", "v1") if parts[0] == "api" else (parts[1], parts[2])
            found = registry.api_resource_list(self.registry, group, version)
            if found is None:
                raise _not_found_path()
            return found
        return None

    def _target(self, parts: list[str]) -> Target:
        if len(parts) >= 3 and parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 4 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise _not_found_path()
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            namespace, rest = rest[1], rest[2:]
        if len(rest) > 3:
            raise _not_found_path()
        rtype = self.registry.lookup(group, version, rest[0])
        if rtype is None:
            raise _not_found_path()
        target = Target(rtype, namespace, rest[1] if len(rest) > 1 else None, rest[2] if len(rest) > 2 else "")
        self._check_scope(target)
        return target

    @staticmethod
    def _check_scope(target: Target) -> None:
        rtype = target.rtype
        if target.namespace is not None and not rtype.namespaced:
            raise _not_found_path()
        if rtype.namespaced and target.namespace is None and target.name is not None:
            raise _not_found_path()
        if target.subresource and target.subresource not in rtype.subresources:
            raise _not_found_path()

    def _resource(self, request: Request, target: Target, conflict: bool) -> Response:
        method = request.method
        if target.name is None:
            collection = {"GET": self._list, "POST": self._create, "DELETE": self._delete_collection}
            if method not in collection:
                raise _method_not_allowed(method)
            return collection[method](request, target)
        if method == "GET":
            return Response(200, self._get(target))
        if method == "DELETE" and not target.subresource:
            return self._delete(request, target)
        if method in ("PUT", "PATCH"):
            if conflict:
                self._bump(target)
            if method == "PUT":
                return self._update(request, target)
            return self._patch(request, target)
        raise _method_not_allowed(method)

    # reads

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
        items, more = _page(items, request.query)
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

    # writes

    def _decode(self, request: Request) -> Obj:
        try:
            body = json.loads(request.body or b"null")
        except ValueError as exc:
            raise _bad_request(f"the object provided could not be decoded: {exc}") from None
        if not isinstance(body, dict):
            raise _bad_request("the object provided is not a JSON object")
        return body

    @staticmethod
    def _check_identity(rtype: model.ResourceType, body: Obj) -> None:
        if body.get("apiVersion") not in (None, rtype.api_version):
            raise _bad_request(
                f"the API version in the data ({body['apiVersion']}) does not match the expected API version "
                f"({rtype.api_version})"
            )
        if body.get("kind") not in (None, rtype.kind):
            raise _bad_request(f"the kind in the data ({body['kind']}) does not match the expected kind ({rtype.kind})")
        body["apiVersion"], body["kind"] = rtype.api_version, rtype.kind

    @staticmethod
    def _place(target: Target, body: Obj) -> None:
        meta = body.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise _bad_request("metadata must be an object")
        if target.rtype.namespaced:
            sent = meta.get("namespace")
            if sent and target.namespace and sent != target.namespace:
                raise _bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = target.namespace or sent or "default"
        if target.name is not None and meta.get("name") != target.name:
            raise _bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({target.name})"
            )

    def _strict(self, request: Request, rtype: model.ResourceType, body: Obj) -> None:
        if request.query.get("fieldValidation", "").lower() != "strict":
            return
        unknown = self.admitter.unknown_fields(rtype, body)
        if unknown:
            listed = ", ".join(f'unknown field "{name}"' for name in unknown)
            raise _bad_request(f"strict decoding error: {listed}")

    def _admit(self, request: Request, target: Target, new: Obj, old: Obj | None) -> tuple[Obj, list[str]]:
        if not target.subresource:
            for hook in self.cluster.admission:
                hook(target.rtype, new, old)
        subresource = "status" if target.subresource else ""
        admitted, warnings = self.admitter.admit(target.rtype, new, old, subresource=subresource)
        if request.query.get("fieldValidation", "").lower() == "ignore":
            warnings = []
        return admitted, warnings

    def _create(self, request: Request, target: Target) -> Response:
        rtype, body = target.rtype, self._decode(request)
        self._check_identity(rtype, body)
        self._place(target, body)
        _name_or_generate(body)
        self._strict(request, rtype, body)
        apply.record_create(self._shape(rtype), body, _manager(request), rtype.api_version)
        return self._create_object(request, target, body)

    def _create_object(self, request: Request, target: Target, body: Obj) -> Response:
        rtype = target.rtype
        if "status" in rtype.subresources and rtype.key != "nodes":
            body.pop("status", None)  # as the type's create strategy does: status is written through /status
        if rtype.key == namespaces.NAMESPACES:
            namespaces.prepare_create(body)
        if rtype.key == csr_rules.CSRS:
            csr_rules.prepare_for_create(body)
        namespaces.refuse_content(self.cluster.store, self.registry.types[namespaces.NAMESPACES], rtype, body)
        admitted, warnings = self._admit(request, target, body, None)
        if rtype.key == namespaces.NAMESPACES:
            admitted["status"] = dict(namespaces.ACTIVE)  # after validation, which keeps a create's status out
        if _dry_run(request):
            return Response(201, self._dry_created(rtype, admitted), warnings)
        return Response(201, self.cluster.store.create(rtype, admitted), warnings)

    def _dry_created(self, rtype: model.ResourceType, obj: Obj) -> Obj:
        meta = obj["metadata"]
        namespace = meta.get("namespace", "")
        if rtype.namespaced and self.cluster.store.find(self.registry.types["namespaces"], namespace) is None:
            # The NamespaceLifecycle admission plugin refuses requests in a namespace that does not exist, dry runs
            # included ("Admission Control in Kubernetes", kubernetes.io/docs/reference/access-authn-authz/
            # admission-controllers/#namespacelifecycle).
            raise model.ApiError(404, "NotFound", f'namespaces "{namespace}" not found')
        if self.cluster.store.find(rtype, meta["name"], meta.get("namespace", "")) is not None:
            raise model.ApiError(
                409, "AlreadyExists", f'{rtype.key} "{meta["name"]}" already exists', details=_details(rtype, obj)
            )
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=model.now_rfc3339())
        if rtype.generation:
            meta["generation"] = 1
        return obj

    def _update(self, request: Request, target: Target) -> Response:
        rtype, body = target.rtype, self._decode(request)
        self._check_identity(rtype, body)
        self._place(target, body)
        if not self.registry.is_builtin(rtype) and not body["metadata"].get("resourceVersion"):
            raise model.ApiError(
                422,
                "Invalid",
                f'{rtype.kind}.{rtype.group} "{target.name}" is invalid: metadata.resourceVersion: Invalid value: '
                "0x0: must be specified for an update",
                causes=[
                    {
                        "reason": "FieldValueInvalid",
                        "message": "must be specified for an update",
                        "field": "metadata.resourceVersion",
                    }
                ],
                details=_details(rtype, body),
            )
        self._strict(request, rtype, body)
        old = self._get(target)
        self._record_update(request, target, old, body)
        return self._write(request, target, body, old)

    def _write(self, request: Request, target: Target, sent: Obj, old: Obj) -> Response:
        """Validate and store a full object that a PUT or a patch produced, for the main resource or a
        subresource; `old` is the stored object the write was computed from."""
        rtype = target.rtype
        candidate = _candidate(target, sent, old)
        if rtype.key == namespaces.NAMESPACES and not target.subresource:
            namespaces.prepare_update(candidate, old)
        if rtype.key == csr_rules.CSRS:
            sent_rv = sent.get("metadata", {}).get("resourceVersion")
            csr_rules.check_update(rtype, candidate, old, sent_rv, approval=target.subresource == "approval")
        admitted, warnings = self._admit(request, target, candidate, old)
        admitted.setdefault("metadata", {})["resourceVersion"] = sent.get("metadata", {}).get("resourceVersion")
        if _dry_run(request):
            return Response(200, admitted, warnings)
        status_only = bool(target.subresource)
        stored = self.cluster.store.update(rtype, admitted, status_only=status_only, owned=True)
        return Response(200, stored, warnings)

    def _patch(self, request: Request, target: Target) -> Response:
        kind = patch.patch_type(request.content_type)
        if kind is patch.PatchType.APPLY and not target.subresource:
            return self._apply(request, target)
        if kind is None or kind is patch.PatchType.APPLY:
            raise _unsupported(request.content_type)
        if kind is patch.PatchType.STRATEGIC and not self.registry.is_builtin(target.rtype):
            raise _unsupported(request.content_type)
        for _attempt in range(PATCH_RETRIES):
            old = self._get(target)
            patched = patch.apply(kind, old, request.body)
            self._check_identity(target.rtype, patched)
            self._place(target, patched)
            self._strict(request, target.rtype, patched)
            rv_given = patched["metadata"].get("resourceVersion") != old["metadata"]["resourceVersion"]
            self._record_update(request, target, old, patched)
            try:
                return self._write(request, target, patched, old)
            except model.ApiError as error:
                if error.reason != "Conflict" or rv_given:
                    raise
        raise model.ApiError(409, "Conflict", f"{target.rtype.key} {target.name!r}: too many concurrent writers")

    # server-side apply ("Server-Side Apply", kubernetes.io/docs/reference/using-api/server-side-apply/; the
    # merge and ownership rules are in `apply`). dryRun=All is honoured by `_create_object` and `_write`, as for
    # every other write ("Dry-run", kubernetes.io/docs/reference/using-api/api-concepts/#dry-run).

    def _shape(self, rtype: model.ResourceType) -> apply.Shape:
        return apply.Shape(self.admitter.schema(rtype), self.registry.is_builtin(rtype))

    def _apply(self, request: Request, target: Target) -> Response:
        manager = _apply_manager(request)
        applied = _decode_apply(request.body)
        rtype = target.rtype
        self._check_identity(rtype, applied)
        self._place(target, applied)
        typed.check(self.admitter.schema(rtype), applied)  # a 500 before any other check, Strict or not
        self._strict(request, rtype, applied)
        force = request.query.get("force", "").lower() == "true"
        for _attempt in range(PATCH_RETRIES):
            live = self.cluster.store.find(rtype, target.name or "", target.namespace or "")
            wanted_rv = applied["metadata"].get("resourceVersion")
            if wanted_rv and (live is None or wanted_rv != live["metadata"]["resourceVersion"]):
                raise model.ApiError(409, "Conflict", f"{rtype.key} {target.name!r}: the object has been modified")
            merged = apply.apply(self._shape(rtype), live, applied, manager, rtype.api_version, force=force)
            if live is None:
                try:
                    return self._create_object(request, target, merged)
                except model.ApiError as error:
                    if error.reason != "AlreadyExists":
                        raise
                    continue
            try:
                return self._write(request, target, merged, live)
            except model.ApiError as error:
                if error.reason != "Conflict" or wanted_rv:
                    raise
        raise model.ApiError(409, "Conflict", f"{rtype.key} {target.name!r}: too many concurrent writers")

    def _record_update(self, request: Request, target: Target, old: Obj, new: Obj) -> None:
        """A non-apply write moves the fields it changes to its manager."""
        if target.subresource:
            return
        apply.record_update(self._shape(target.rtype), old, new, _manager(request), target.rtype.api_version)

    def _bump(self, target: Target) -> None:
        assert target.name is not None
        self.cluster.store.bump(target.rtype, target.name, target.namespace or "")

    def _delete(self, request: Request, target: Target) -> Response:
        rtype, name = target.rtype, target.name
        assert name is not None
        if _dry_run(request):
            return Response(200, self._get(target))
        if rtype.key == namespaces.NAMESPACES:
            return Response(200, namespaces.Deleter(self.cluster, self.registry.types).delete(name))
        gone = self.cluster.store.delete(rtype, name, target.namespace or "")
        body = success_status(rtype, gone) if self.registry.is_builtin(rtype) else gone
        return Response(200, body)

    def _delete_collection(self, request: Request, target: Target) -> Response:
        doomed = self._selected(request, target)
        if not _dry_run(request):
            for obj in doomed:
                meta = obj["metadata"]
                with contextlib.suppress(model.ApiError):
                    self.cluster.store.delete(target.rtype, meta["name"], meta.get("namespace", ""))
        rtype = target.rtype
        meta = {"resourceVersion": self.cluster.store.current_rv()}
        return Response(
            200, {"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version, "metadata": meta, "items": doomed}
        )


def _unsupported(content_type: str) -> model.ApiError:
    return model.ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        + ("" if not content_type else f" (got {content_type})"),
    )


def _manager(request: Request) -> str:
    """A create's or update's manager: `fieldManager`, else the User-Agent up to its first "/" (k8s.io/apiserver
    pkg/endpoints/handlers/rest.go, `prefixFromUserAgent`)."""
    return request.query.get("fieldManager") or request.user_agent.split("/", 1)[0] or "unknown"


def _apply_manager(request: Request) -> str:
    """The applier's name: required on every apply request (kube's ValidatePatchOptions)."""
    manager = request.query.get("fieldManager", "")
    if not manager:
        raise model.ApiError(
            422,
            "Invalid",
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
            causes=[{"reason": "FieldValueRequired", "message": "Required value: is required for apply patch",
                     "field": "fieldManager"}],
        )  # fmt: skip
    return manager


def _decode_apply(body: bytes) -> Obj:
    """An apply body: YAML (JSON is YAML too) holding one object."""
    try:
        document = yaml.safe_load(body or b"")
    except yaml.YAMLError as exc:
        raise _bad_request(f"error decoding YAML: {exc}") from None
    if not isinstance(document, dict):
        raise _bad_request("error decoding YAML: an apply patch must be an object")
    for name in ("apiVersion", "kind"):
        if not document.get(name):
            raise _bad_request(f"invalid object type: {name} must be set in an apply patch")
    return document


def _candidate(target: Target, sent: Obj, old: Obj) -> Obj:
    """The object as it would be stored: a main write keeps the stored status (when status is a subresource),
    a status write keeps everything but the status, an approval write changes only the approval conditions."""
    rtype = target.rtype
    if target.subresource == "approval":
        result = model.clone(old)
        conditions = (sent.get("status") or {}).get("conditions")
        result.setdefault("status", {})["conditions"] = conditions or []
        return result
    if target.subresource:
        result = model.clone(old)
        if "status" in sent:
            result["status"] = model.clone(sent["status"])
        return result
    result = model.clone(sent)
    if rtype.has_status and "status" in rtype.subresources:
        result.pop("status", None)
        if "status" in old:
            result["status"] = model.clone(old["status"])
    return result


def _details(rtype: model.ResourceType, obj: Obj) -> Obj:
    return {"name": obj.get("metadata", {}).get("name", ""), "group": rtype.group, "kind": rtype.plural}


def _dry_run(request: Request) -> bool:
    return request.query.get("dryRun") == "All"


def _name_or_generate(body: Obj) -> None:
    meta = body["metadata"]
    if meta.get("name"):
        return
    prefix = meta.get("generateName")
    if not prefix:
        raise model.ApiError(
            422,
            "Invalid",
            "metadata.name: Required value: name or generateName is required",
            causes=[
                {
                    "reason": "FieldValueRequired",
                    "message": "name or generateName is required",
                    "field": "metadata.name",
                }
            ],
        )
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    meta["name"] = prefix + "".join(secrets.choice(alphabet) for _ in range(5))


def _page(items: list[Obj], query: dict[str, str]) -> tuple[list[Obj], str]:
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


# availability, auth and faults -----------------------------------------------------------------------------------


class Front:
    """What stands before the resource semantics: outages, the bearer token, injected faults.

    `serve` returns None when the connection must be dropped without a response (an outage in "refuse" mode, a
    reset or a hang fault).
    """

    def __init__(
        self,
        api: Api,
        token: str,
        availability: model.Availability,
        recorder: model.Recorder,
        injector: faults.Injector | None = None,
    ) -> None:
        self.api = api
        self._token = token
        self.availability = availability
        self.recorder = recorder
        self.injector = injector

    def serve(self, request: Request) -> Response | None:
        mode = self.availability.down()
        if mode == "refuse":
            return None
        if mode is not None:
            return _unavailable("the kube-apiserver is restarting", 5)
        public = request.path in PUBLIC_PATHS
        if not public and not self._authorized(request):
            return error_response(model.ApiError(401, "Unauthorized", "Unauthorized"))
        decision = self._decide(request, public)
        if decision is not None and decision.action is not faults.Action.NONE:
            return self._inject(decision)
        if not public:
            self.recorder.request(write=request.method != "GET" and not _dry_run(request))
        return self.api.handle(request, conflict=decision is not None and decision.conflict)

    def _authorized(self, request: Request) -> bool:
        scheme, _, token = request.authorization.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), self._token.encode())

    def _decide(self, request: Request, public: bool) -> faults.Decision | None:
        injector = self.injector
        if injector is None or (public and not injector.spec.health):
            return None
        decision = injector.decide(write=request.method in ("PUT", "PATCH"))
        if decision.latency:
            injector.stopped.wait(decision.latency)
        return decision

    def _inject(self, decision: faults.Decision) -> Response | None:
        assert self.injector is not None
        retry_after = self.injector.spec.retry_after
        action = decision.action
        if action is faults.Action.ERROR_500:
            error = model.ApiError(500, "InternalError", "Internal error occurred: injected fault")
            return error_response(error)
        if action is faults.Action.ERROR_503:
            return _unavailable("injected fault", retry_after)
        if action is faults.Action.ERROR_429:
            error = model.ApiError(
                429,
                "TooManyRequests",
                "the server has received too many requests and has asked us to try again later",
                details={"retryAfterSeconds": retry_after},
            )
            return Response(429, status_body(error), headers={"Retry-After": str(retry_after)})
        if action is faults.Action.HANG:
            self.injector.hang()
        return None


def _unavailable(message: str, retry_after: int) -> Response:
    error = model.ApiError(503, "ServiceUnavailable", message, details={"retryAfterSeconds": retry_after})
    return Response(503, status_body(error), headers={"Retry-After": str(retry_after)})


# HTTP over TLS -------------------------------------------------------------------------------------------------------


class Service(Protocol):
    def serve(self, request: Request) -> Response | None: ...


class RouterService:
    """The ingress router's listener: any request gets 200 and a short body; what matters is its certificate."""

    def serve(self, request: Request) -> Response | None:
        return Response(200, "snoreloc-sim router\n")


class _HttpServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    """A threaded HTTP server whose connections go through TLS in their own thread (a slow handshake never blocks
    the accept loop) and can be dropped wholesale on stop or refused during an outage."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int, service: Service, context: ssl.SSLContext, refuse: Callable[[], bool]) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.service = service
        self.context = context
        self.refuse = refuse
        self._live: set[ssl.SSLSocket] = set()
        self._live_lock = threading.Lock()

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.refuse():
            _reset(request)
            return
        request.settimeout(HANDSHAKE_SECONDS)
        try:
            connection = self.context.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            return
        connection.settimeout(IDLE_SECONDS)
        with self._live_lock:
            self._live.add(connection)
        try:
            _Handler(connection, client_address, self)
        except OSError:
            pass
        finally:
            with self._live_lock:
                self._live.discard(connection)
            connection.close()

    def drop_all(self) -> None:
        """Shut down every open connection (a restarting kube-apiserver drops its watches)."""
        with self._live_lock:
            live = list(self._live)
        for connection in live:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


def _reset(connection: socket.socket) -> None:
    """Close so the peer sees a reset, not a clean end of stream."""
    with contextlib.suppress(OSError):
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        connection.close()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # A buffered writer: a response's headers and body leave in one TLS record and one send, flushed after each
    # request (a watch flushes each event). Kept with TCP_NODELAY, as a real kube-apiserver (Go) sets it, so that
    # a write larger than the buffer is not held back by Nagle and delayed ACKs (~40 ms).
    wbufsize = -1
    disable_nagle_algorithm = True
    server: _HttpServer
    raw_requestline: bytes  # set by http.server before parse_request
    fields: dict[str, str]  # the request's header fields by lower-case name, set by parse_request
    server_version = "snoreloc-sim"
    sys_version = ""

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        LOG.debug("%s " + format, self.address_string(), *args)

    def parse_request(self) -> bool:
        """The request line and header fields. Read here rather than by `http.server`, which hands every header
        block to the `email` parser, at a cost per request close to that of admitting a write. What clients of an
        API server send is plain: `METHOD target HTTP/1.x`, then `Name: value` lines; anything else is refused
        with 400 (431 for an oversized block), and the connection closed."""
        # Until the line is read, replies (400) use HTTP/1.1 with a status line, as Go's net/http answers.
        self.command, self.request_version, self.close_connection = "", self.protocol_version, True
        self.requestline = self.raw_requestline.decode("iso-8859-1").rstrip("\r\n")
        words = self.requestline.split()
        if not words:
            return False
        if len(words) != 3 or words[2] not in ("HTTP/1.0", "HTTP/1.1"):
            self.send_error(HTTPStatus.BAD_REQUEST, f"Bad request line ({self.requestline!r})")
            return False
        self.command, target, self.request_version = words
        self.path = "/" + target.lstrip("/") if target.startswith("//") else target
        pairs = self._header_fields()
        if isinstance(pairs, HTTPStatus):
            self.send_error(pairs)
            return False
        self.fields = {name.lower(): value for name, value in pairs}  # what `_serve` reads (the last one wins)
        self.headers = fields = http.client.HTTPMessage()  # http.server's own view, in order, duplicates kept
        for name, value in pairs:
            fields[name] = value
        connection = self.fields.get("connection", "").lower()
        http10 = self.request_version == "HTTP/1.0"
        self.close_connection = connection == "close" or (http10 and connection != "keep-alive")
        if not http10 and self.fields.get("expect", "").lower() == "100-continue":
            go_on = self.handle_expect_100()
            self.wfile.flush()  # the client waits for the interim reply before it sends the body
            return go_on
        return True

    def _header_fields(self) -> list[list[str]] | HTTPStatus:
        """Every `Name: value` line up to the blank one, in order (a folded line continues the one before)."""
        pairs: list[list[str]] = []
        for _ in range(MAX_HEADERS + 1):
            raw = self.rfile.readline(MAX_HEADER_LINE + 1)
            if len(raw) > MAX_HEADER_LINE:
                return HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE
            line = raw.decode("iso-8859-1").rstrip("\r\n")
            if not line:
                return pairs
            if line[0] in " \t" and pairs:
                pairs[-1][1] += line
                continue
            name, colon, value = line.partition(":")
            if not colon or not name or name != name.strip():
                return HTTPStatus.BAD_REQUEST
            pairs.append([name, value.lstrip(" \t")])
        return HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE

    def _serve(self) -> None:
        length = int(self.fields.get("content-length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        reply = self.server.service.serve(Request.parse(self.command, self.path, self.fields, body))
        if reply is None:
            self.close_connection = True
            _reset(self.connection)
        elif reply.stream is not None:
            self._send_stream(reply)
        else:
            self._send(reply)

    def _head(self, reply: Response, content_type: str) -> None:
        self.send_response(reply.code)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache, private")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        for warning in reply.warnings:
            self.send_header("Warning", f'299 - "{warning.replace(chr(34), chr(39))}"')

    def _send(self, reply: Response) -> None:
        if isinstance(reply.body, str):
            payload, content_type = reply.body.encode(), "text/plain; charset=utf-8"
        elif isinstance(reply.body, bytes):  # JSON encoded already (the hub's lists: `hub.encodings`)
            payload, content_type = reply.body, "application/json"
        else:
            payload, content_type = json.dumps(reply.body).encode(), "application/json"
        self._head(reply, content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _send_stream(self, reply: Response) -> None:
        assert reply.stream is not None
        self._head(reply, "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        for event in reply.stream:
            line = json.dumps(event).encode() + b"\n"
            self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True


class Listener:
    """One TLS listener on 127.0.0.1 (port 0: a free port), served from a background thread."""

    def __init__(
        self, service: Service, context: ssl.SSLContext, *, port: int = 0, refuse: Callable[[], bool] | None = None
    ) -> None:
        self._server = _HttpServer(port, service, context, refuse or (lambda: False))
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def drop_connections(self) -> None:
        """Close every open connection, watches included, and keep listening."""
        self._server.drop_all()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.drop_all()
        self._server.server_close()
        self._thread.join(timeout=5)

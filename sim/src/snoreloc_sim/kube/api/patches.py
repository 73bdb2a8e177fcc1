"""Patches: JSON patch, merge patch, strategic merge patch (built-in types only) and server-side apply.

Each dialect yields a full object that `Writes._write` stores; a conflict with a concurrent writer is retried up
to `PATCH_RETRIES` times unless the patch named a resourceVersion (then the conflict is the client's answer).
Server-side apply ("Server-Side Apply", kubernetes.io/docs/reference/using-api/server-side-apply/; the merge and
ownership rules are in `apply`) is served on main resources, not on subresources. dryRun=All is honoured by
`_create_object` and `_write`, as for every other write ("Dry-run",
kubernetes.io/docs/reference/using-api/api-concepts/#dry-run).
"""

from __future__ import annotations

from typing import Any

import yaml

from snoreloc_sim.kube import apply, model, patch, typed
from snoreloc_sim.kube.api.paths import Target, bad_request
from snoreloc_sim.kube.api.writes import Writes
from snoreloc_sim.kube.messages import Request, Response

Obj = dict[str, Any]
PATCH_RETRIES = 5


class Patches(Writes):
    """The three patch dialects and server-side apply."""

    def _patch(self, request: Request, target: Target) -> Response:
        kind = patch.patch_type(request.content_type)
        if kind is patch.PatchType.APPLY and not target.subresource:
            return self._apply(request, target)
        dialect = self._dialect(request, target, kind)
        for _attempt in range(PATCH_RETRIES):
            answer = self._patch_once(request, target, dialect)
            if answer is not None:
                return answer
        raise _too_many_writers(target)

    def _dialect(self, request: Request, target: Target, kind: patch.PatchType | None) -> patch.PatchType:
        """The patch type, if this target takes it: strategic merge is for built-in types only, and apply is not
        served on subresources."""
        if kind is None or kind is patch.PatchType.APPLY:
            raise _unsupported(request.content_type)
        if kind is patch.PatchType.STRATEGIC and not self.registry.is_builtin(target.rtype):
            raise _unsupported(request.content_type)
        return kind

    def _patch_once(self, request: Request, target: Target, kind: patch.PatchType) -> Response | None:
        """One read, patch and write; None when a concurrent writer came first and the patch named no
        resourceVersion, so it may be computed again."""
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
        return None

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
            answer = self._apply_once(request, target, applied, manager, force=force)
            if answer is not None:
                return answer
        raise _too_many_writers(target)

    def _apply_once(
        self, request: Request, target: Target, applied: Obj, manager: str, *, force: bool
    ) -> Response | None:
        """One merge of the applied configuration into the live object (or a create when there is none); None
        when a concurrent writer came first (a create that met one, or an update that named no resourceVersion)."""
        rtype = target.rtype
        live = self.cluster.store.find(rtype, target.name or "", target.namespace or "")
        wanted_rv = applied["metadata"].get("resourceVersion")
        if wanted_rv and (live is None or wanted_rv != live["metadata"]["resourceVersion"]):
            raise model.ApiError(409, "Conflict", f"{rtype.key} {target.name!r}: the object has been modified")
        merged = apply.apply(self._shape(rtype), live, applied, manager, rtype.api_version, force=force)
        try:
            if live is None:
                return self._create_object(request, target, merged)
            return self._write(request, target, merged, live)
        except model.ApiError as error:
            again = error.reason == "AlreadyExists" if live is None else error.reason == "Conflict" and not wanted_rv
            if not again:
                raise
        return None


def _too_many_writers(target: Target) -> model.ApiError:
    return model.ApiError(409, "Conflict", f"{target.rtype.key} {target.name!r}: too many concurrent writers")


def _unsupported(content_type: str) -> model.ApiError:
    return model.ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        + ("" if not content_type else f" (got {content_type})"),
    )


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
        raise bad_request(f"error decoding YAML: {exc}") from None
    if not isinstance(document, dict):
        raise bad_request("error decoding YAML: an apply patch must be an object")
    for name in ("apiVersion", "kind"):
        if not document.get(name):
            raise bad_request(f"invalid object type: {name} must be set in an apply patch")
    return document

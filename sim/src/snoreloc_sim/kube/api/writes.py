"""Writes: create and update (PUT), each decoded, placed, checked and admitted before it is stored.

What kube-apiserver does to a write before storage, in its order: the body's apiVersion/kind and the URL's
namespace and name must agree with it; `fieldValidation=Strict` refuses unknown fields; a create without a name
takes one from `generateName`; the type's create strategy drops a status sent on create; admission hooks and
schema validation run; `dryRun=All` answers without storing. Managed fields are recorded as server-side apply
keeps them (`apply`), whatever the write's dialect.
"""

from __future__ import annotations

import json
import secrets
import uuid
from typing import Any

from snoreloc_sim.kube import apply, csr_rules, model, namespaces
from snoreloc_sim.kube.api.paths import Target, bad_request
from snoreloc_sim.kube.api.reads import Reads
from snoreloc_sim.kube.messages import Request, Response, dry_run

Obj = dict[str, Any]


class Writes(Reads):
    """Create and update; `_write` stores any full object a PUT or a patch produced."""

    def _decode(self, request: Request) -> Obj:
        try:
            body = json.loads(request.body or b"null")
        except ValueError as exc:
            raise bad_request(f"the object provided could not be decoded: {exc}") from None
        if not isinstance(body, dict):
            raise bad_request("the object provided is not a JSON object")
        return body

    @staticmethod
    def _check_identity(rtype: model.ResourceType, body: Obj) -> None:
        if body.get("apiVersion") not in (None, rtype.api_version):
            raise bad_request(
                f"the API version in the data ({body['apiVersion']}) does not match the expected API version "
                f"({rtype.api_version})"
            )
        if body.get("kind") not in (None, rtype.kind):
            raise bad_request(f"the kind in the data ({body['kind']}) does not match the expected kind ({rtype.kind})")
        body["apiVersion"], body["kind"] = rtype.api_version, rtype.kind

    @staticmethod
    def _place(target: Target, body: Obj) -> None:
        meta = body.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        if target.rtype.namespaced:
            sent = meta.get("namespace")
            if sent and target.namespace and sent != target.namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = target.namespace or sent or "default"
        if target.name is not None and meta.get("name") != target.name:
            raise bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({target.name})"
            )

    def _strict(self, request: Request, rtype: model.ResourceType, body: Obj) -> None:
        if request.query.get("fieldValidation", "").lower() != "strict":
            return
        unknown = self.admitter.unknown_fields(rtype, body)
        if unknown:
            listed = ", ".join(f'unknown field "{name}"' for name in unknown)
            raise bad_request(f"strict decoding error: {listed}")

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
        apply.record_create(self._shape(rtype), body, manager(request), rtype.api_version)
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
        if dry_run(request):
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
                409, "AlreadyExists", f'{rtype.key} "{meta["name"]}" already exists', details=details(rtype, obj)
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
            raise _unversioned_update(target, body)
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
        if dry_run(request):
            return Response(200, admitted, warnings)
        status_only = bool(target.subresource)
        stored = self.cluster.store.update(rtype, admitted, status_only=status_only, owned=True)
        return Response(200, stored, warnings)

    def _shape(self, rtype: model.ResourceType) -> apply.Shape:
        return apply.Shape(self.admitter.schema(rtype), self.registry.is_builtin(rtype))

    def _record_update(self, request: Request, target: Target, old: Obj, new: Obj) -> None:
        """A non-apply write moves the fields it changes to its manager."""
        if target.subresource:
            return
        apply.record_update(self._shape(target.rtype), old, new, manager(request), target.rtype.api_version)

    def _bump(self, target: Target) -> None:
        assert target.name is not None
        self.cluster.store.bump(target.rtype, target.name, target.namespace or "")


def _unversioned_update(target: Target, body: Obj) -> model.ApiError:
    """A PUT of a custom resource must name the resourceVersion it replaces: its strategy does not
    `AllowUnconditionalUpdate` (k8s.io/apiserver pkg/registry/generic/registry/store.go, `Update`)."""
    rtype = target.rtype
    return model.ApiError(
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
        details=details(rtype, body),
    )


def manager(request: Request) -> str:
    """A create's or update's manager: `fieldManager`, else the User-Agent up to its first "/" (k8s.io/apiserver
    pkg/endpoints/handlers/rest.go, `prefixFromUserAgent`)."""
    return request.query.get("fieldManager") or request.user_agent.split("/", 1)[0] or "unknown"


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


def details(rtype: model.ResourceType, obj: Obj) -> Obj:
    return {"name": obj.get("metadata", {}).get("name", ""), "group": rtype.group, "kind": rtype.plural}


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

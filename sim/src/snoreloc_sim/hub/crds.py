"""CustomResourceDefinitions created at run time: checked, served at their group/version/plural, and removed.

kube-apiserver's apiextensions-apiserver watches CRDs and starts serving a new type as soon as its names are
accepted and it is Established; deleting a CRD deletes its custom resources first. Here a store listener does the
same synchronously, inside the write that created or deleted the CRD, so a client that applies a CRD and then its
objects never races the server. What is followed, by file (kubernetes/kubernetes, `staging/src/k8s.io/`):

- the checks on a CRD: `apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go`
  (`ValidateCustomResourceDefinition`: name is `<plural>.<group>`, scope, exactly one storage version, a schema
  per version in v1);
- the status it gets: `apiextensions-apiserver/pkg/controller/status/naming_controller.go` (NamesAccepted,
  `acceptedNames`) and `.../controller/establish/establishing_controller.go` (Established);
- which version is served: every served version in kube; here only the storage version (one store per type);
- the default printer column: `apiextensions-apiserver/pkg/apiserver/customresource_handler.go`
  (`serveDefaultColumnsIfEmpty`: an `Age` column over `.metadata.creationTimestamp` when none are given);
- deleting a CRD: `apiextensions-apiserver/pkg/registry/customresourcedefinition/etcd.go` (`Delete`: a
  `deletionTimestamp`, the `customresourcecleanup.apiextensions.k8s.io` finalizer and a Terminating condition),
  then `apiextensions-apiserver/pkg/controller/finalizer/crd_finalizer.go` (`sync`: every instance deleted as a
  DELETE would, so their own finalizers hold the CRD; the finalizer removed once none is left), and
  `apiextensions-apiserver/pkg/apiserver/customresource_handler.go` (no create while the CRD is terminating: 405).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from snoreloc_sim.hub import kinds
from snoreloc_sim.kube import model, registry, validation

Obj = dict[str, Any]
_ONE_STORAGE = "must have exactly one version marked as storage version"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
AGE_COLUMN: Obj = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
_CRD_INFO = validation.CrdInfo(
    group="apiextensions.k8s.io",
    version="v1",
    plural="customresourcedefinitions",
    kind="CustomResourceDefinition",
    namespaced=False,
    subresources=("status",),
    schema={},
)


@dataclass(frozen=True)
class Served:
    """One CRD's served version: its type, discovery extras, printer columns and schema."""

    rtype: model.ResourceType
    extras: kinds.Extras
    columns: tuple[Obj, ...]
    schema: Obj

    def info(self) -> validation.CrdInfo:
        rtype = self.rtype
        return validation.CrdInfo(
            rtype.group, rtype.version, rtype.plural, rtype.kind, rtype.namespaced, rtype.subresources, self.schema
        )


def _storage_version(spec: Obj) -> Obj | None:
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict)]
    stored = [v for v in versions if v.get("storage")]
    return stored[0] if len(stored) == 1 else None


def _mapping(obj: Obj, name: str) -> Obj:
    value = obj.get(name)
    return value if isinstance(value, dict) else {}


def problems(crd: Obj) -> list[validation.FieldError]:
    """What `ValidateCustomResourceDefinition` refuses, for the fields the hub relies on."""
    spec = _mapping(crd, "spec")
    names = _mapping(spec, "names")
    errors: list[validation.FieldError] = []
    required = {"spec.group": spec.get("group"), "spec.names.plural": names.get("plural")}
    required["spec.names.kind"] = names.get("kind")
    errors += [validation.FieldError(validation.Reason.REQUIRED, path) for path, value in required.items() if not value]
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        errors.append(
            validation.FieldError(
                validation.Reason.NOT_SUPPORTED,
                "spec.scope",
                spec.get("scope"),
                'supported values: "Cluster", "Namespaced"',
            )
        )
    name = (crd.get("metadata") or {}).get("name")
    if names.get("plural") and spec.get("group") and name != f"{names['plural']}.{spec['group']}":
        detail = 'must be spec.names.plural+"."+spec.group'
        errors.append(validation.FieldError(validation.Reason.INVALID, "metadata.name", name, detail))
    errors += _version_problems(spec)
    return errors


def _version_problems(spec: Obj) -> list[validation.FieldError]:
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        return [validation.FieldError(validation.Reason.REQUIRED, "spec.versions", detail=_ONE_STORAGE)]
    errors = []
    if _storage_version(spec) is None:
        errors.append(validation.FieldError(validation.Reason.INVALID, "spec.versions", "[...]", _ONE_STORAGE))
    for index, version in enumerate(versions):
        schema = ((version or {}).get("schema") or {}).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            path = f"spec.versions[{index}].schema.openAPIV3Schema"
            errors.append(validation.FieldError(validation.Reason.REQUIRED, path, detail="schemas are required"))
    return errors


def served(crd: Obj) -> Served:
    """The type a valid CRD serves (its storage version)."""
    spec, names = crd["spec"], crd["spec"]["names"]
    version = _storage_version(spec)
    assert version is not None
    subresources = tuple(name for name in ("status", "scale") if name in (version.get("subresources") or {}))
    rtype = model.ResourceType(
        group=spec["group"],
        version=version["name"],
        plural=names["plural"],
        kind=names["kind"],
        namespaced=spec["scope"] == "Namespaced",
        has_status="status" in subresources,
        short_names=tuple(names.get("shortNames") or ()),
        subresources=subresources,
    )
    columns = tuple(version.get("additionalPrinterColumns") or ()) or (AGE_COLUMN,)
    extras = kinds.Extras(categories=tuple(names.get("categories") or ()))
    return Served(rtype, extras, columns, version["schema"]["openAPIV3Schema"])


def _status(crd: Obj, now: str) -> Obj:
    """NamesAccepted and Established, as the naming and establishing controllers set them once names are free."""
    old = {c.get("type"): c for c in (crd.get("status") or {}).get("conditions") or []}

    def condition(kind: str, reason: str, message: str) -> Obj:
        since = old.get(kind, {}).get("lastTransitionTime") if old.get(kind, {}).get("status") == "True" else None
        return {
            "type": kind,
            "status": "True",
            "lastTransitionTime": since or now,
            "reason": reason,
            "message": message,
        }

    version = _storage_version(crd["spec"]) or {}
    return {
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": dict(crd["spec"]["names"]),
        "storedVersions": [version.get("name", "")],
    }


class Catalog:
    """The hub's served types: the built-ins plus every Established CRD. Publishes each change by replacing the
    API's `registry` (copy on write: a request in flight keeps the registry it started with)."""

    def __init__(
        self,
        store: model.Store,
        validator: validation.Validator,
        publish: Callable[[registry.Registry], None],
        base: registry.Registry,
    ) -> None:
        self._store = store
        self._validator = validator
        self._publish = publish
        self._lock = threading.Lock()
        self._crd_types: dict[str, Served] = {}
        self._terminating: set[str] = set()
        builtin = kinds.builtin_types(base)
        self.registry = registry.Registry(types=builtin, builtin=frozenset(builtin))
        publish(self.registry)

    def extras(self, key: str) -> kinds.Extras:
        found = self._crd_types.get(key)
        return found.extras if found is not None else kinds.EXTRAS.get(key, kinds.Extras())

    def columns(self, key: str) -> tuple[Obj, ...] | None:
        found = self._crd_types.get(key)
        return found.columns if found is not None else None

    def admit(self, rtype: model.ResourceType, new: Obj, old: Obj | None) -> None:
        """The admission hook: refuse an invalid CRD with kube's 422, and new objects of a terminating one."""
        if old is None and rtype.key in self._terminating_types():
            message = "create not allowed while custom resource definition is terminating"
            raise model.ApiError(405, "MethodNotAllowed", message)
        if rtype.key != kinds.CRDS:
            return
        errors = problems(new)
        if errors:
            raise validation.invalid(_CRD_INFO, new, errors)

    def _terminating_types(self) -> set[str]:
        with self._lock:
            return {entry.rtype.key for name, entry in self._crd_types.items() if name in self._terminating}

    def delete(self, crd: Obj, deleter: Callable[[model.ResourceType, Obj], object]) -> Obj | None:
        """Start (or go on) deleting a CRD: the CRD while instances remain, None once it is gone.
        `deleter(type, obj)` deletes one instance as a DELETE would."""
        name = crd["metadata"]["name"]
        crd_type = self.registry.types[kinds.CRDS]
        if not crd["metadata"].get("deletionTimestamp"):
            marked = model.clone(crd)
            finalizers = [*marked["metadata"].get("finalizers", []), CLEANUP_FINALIZER]
            marked["metadata"].update(deletionTimestamp=model.now_rfc3339(), finalizers=sorted(set(finalizers)))
            marked = self._store.update(crd_type, marked, check_rv=False)
            status = dict(marked.get("status") or {})
            status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != "Terminating"] + [
                {"type": "Terminating", "status": "True", "lastTransitionTime": model.now_rfc3339(),
                 "reason": "InstanceDeletionInProgress", "message": "CustomResource deletion is in progress"}
            ]  # fmt: skip
            self._store.update(crd_type, {**marked, "status": status}, status_only=True, check_rv=False)
        with self._lock:
            self._terminating.add(name)
            entry = self._crd_types.get(name)
        if entry is not None:
            for obj in self._store.list(entry.rtype):
                with contextlib.suppress(model.ApiError):
                    deleter(entry.rtype, obj)
        return self._finish(name)

    def _finish(self, name: str) -> Obj | None:
        """Remove the cleanup finalizer once no instance is left (the CRD then goes, and stops being served)."""
        with self._lock:
            entry = self._crd_types.get(name)
        if entry is not None and self._store.list(entry.rtype):
            return self._store.find(self.registry.types[kinds.CRDS], name)
        crd = self._store.find(self.registry.types[kinds.CRDS], name)
        if crd is None:
            return None
        crd["metadata"]["finalizers"] = [f for f in crd["metadata"].get("finalizers") or [] if f != CLEANUP_FINALIZER]
        with contextlib.suppress(model.ApiError):
            self._store.update(self.registry.types[kinds.CRDS], crd, check_rv=False)
        return self._store.find(self.registry.types[kinds.CRDS], name)

    def on_change(self, rtype: model.ResourceType, event: str, old: Obj | None, new: Obj | None) -> None:
        """The store listener: serve, re-serve or drop a CRD's type; finish a terminating CRD's cleanup."""
        if rtype.key != kinds.CRDS:
            if event == "DELETED" and rtype.key in self._terminating_types():
                name = next(n for n, e in list(self._crd_types.items()) if e.rtype.key == rtype.key)
                self._finish(name)
            return
        if event == "DELETED" and old is not None:
            self._drop(old["metadata"]["name"])
        elif new is not None:
            self._serve(new)

    def _serve(self, crd: Obj) -> None:
        entry = served(crd)
        with self._lock:
            self._crd_types[crd["metadata"]["name"]] = entry
            self._validator.register(entry.info())
            self.registry = registry.Registry(
                types={**self.registry.types, entry.rtype.key: entry.rtype}, builtin=self.registry.builtin
            )
            self._publish(self.registry)
        status = _status(crd, model.now_rfc3339())
        if crd.get("status") != status and not crd["metadata"].get("deletionTimestamp"):
            crd_type = self.registry.types[kinds.CRDS]
            with contextlib.suppress(model.ApiError):
                self._store.update(crd_type, {**crd, "status": status}, status_only=True, check_rv=False)

    def _drop(self, name: str) -> None:
        with self._lock:
            entry = self._crd_types.pop(name, None)
            self._terminating.discard(name)
        if entry is None:
            return
        for obj in self._store.list(entry.rtype):
            meta = obj["metadata"]
            with contextlib.suppress(model.ApiError):
                self._store.delete(entry.rtype, meta["name"], meta.get("namespace", ""))
        with self._lock:
            self._validator.forget(entry.rtype.key)
            types = {key: t for key, t in self.registry.types.items() if key != entry.rtype.key}
            self.registry = registry.Registry(types=types, builtin=self.registry.builtin)
            self._publish(self.registry)

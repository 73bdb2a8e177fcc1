"""Deletion as kube-apiserver and its garbage collector do it: finalizers hold an object, owners take dependents.

Followed (kubernetes/kubernetes):
- `staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go`, `Delete` and
  `updateForGracefulDeletionAndFinalizers`: deleting an object that has finalizers only sets
  `metadata.deletionTimestamp` (and `deletionGracePeriodSeconds: 0`) and answers the object; deleting it again
  changes nothing; an update that leaves it with no finalizers removes it (`Update`, `shouldDeleteDuringUpdate`).
- `staging/src/k8s.io/apiserver/pkg/registry/rest/update.go`, `BeforeUpdate`: clients cannot set or clear
  `deletionTimestamp`; `staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta.go`,
  `ValidateObjectMetaUpdate`: "no new finalizers can be added if the object is being deleted".
- `pkg/controller/garbagecollector/garbagecollector.go`, `attemptToDeleteItem`: once an owner is gone, a
  dependent whose other owners are gone too is deleted (background propagation; its own finalizers apply); one
  that still has a live owner only loses the dangling reference. `propagationPolicy: Orphan` leaves dependents.
- The collector is a controller of kube-controller-manager, not of the API server: it learns of the owner's
  deletion from its informers and deletes dependents later (`garbagecollector.go`, `attemptToDeleteWorker`), so a
  client sees them for a while after the owner is gone. `defer` runs the collection so (the hub simulator's
  `controller_delay`, 0.2 s by default); without it, inside the owner's deletion.
Difference: `Foreground` is treated as `Background` (no `foregroundDeletion` finalizer).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from snoreloc_sim.kube import model

Obj = dict[str, Any]
Ident = tuple[str, str, str]  # type key, namespace, name


def _meta(obj: Obj) -> Obj:
    meta = obj.setdefault("metadata", {})
    assert isinstance(meta, dict)
    return meta


class Lifecycle:
    """Finalizers and owner references over the hub's store (a listener: subscribe it before objects are made);
    `lookup(key)` gives a served type. Owners and dependents are indexed by UID, as the collector's graph is."""

    def __init__(
        self,
        store: model.Store,
        lookup: Callable[[str], model.ResourceType | None],
        defer: Callable[[Callable[[], None]], None] | None = None,
    ) -> None:
        self._store = store
        self._lookup = lookup
        self._defer = defer or (lambda task: task())
        self._orphaning: set[str] = set()
        self._lock = threading.Lock()
        self._by_uid: dict[str, Ident] = {}
        self._owners_of: dict[Ident, set[str]] = {}
        self._dependents: dict[str, set[Ident]] = {}

    def admit(self, rtype: model.ResourceType, new: Obj, old: Obj | None) -> None:
        """The admission hook: the server owns `deletionTimestamp`; a deleting object takes no new finalizers."""
        meta, old_meta = _meta(new), (old or {}).get("metadata") or {}
        for name in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            if name in old_meta:
                meta[name] = old_meta[name]
            else:
                meta.pop(name, None)
        if old_meta.get("deletionTimestamp"):
            added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
            if added:
                detail = "no new finalizers can be added if the object is being deleted, found new finalizers "
                detail += str(sorted(added))
                cause = {
                    "reason": "FieldValueForbidden",
                    "message": f"Forbidden: {detail}",
                    "field": "metadata.finalizers",
                }
                message = f'{rtype.kind} "{meta.get("name", "")}" is invalid: metadata.finalizers: Forbidden: {detail}'
                raise model.ApiError(422, "Invalid", message, causes=[cause])

    def delete(self, rtype: model.ResourceType, obj: Obj, *, orphan: bool = False) -> Obj | None:
        """Delete `obj`: the object as it stays (finalizers pending), or None once it is gone."""
        meta = obj["metadata"]
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return obj
            marked = model.clone(obj)
            marked["metadata"].update(deletionTimestamp=model.now_rfc3339(), deletionGracePeriodSeconds=0)
            return self._store.update(rtype, marked, check_rv=False)
        if orphan:
            with self._lock:
                self._orphaning.add(meta.get("uid", ""))
        try:
            self._store.delete(rtype, meta["name"], meta.get("namespace", ""))
        finally:
            with self._lock:
                self._orphaning.discard(meta.get("uid", ""))
        return None

    def on_change(self, rtype: model.ResourceType, event: str, old: Obj | None, new: Obj | None) -> None:
        """The store listener: finish deletions whose finalizers are done; collect an owner's dependents."""
        obj = new if new is not None else old
        if obj is not None:
            self._index(rtype, obj, present=new is not None)
        if event == "MODIFIED" and new is not None and rtype.key != "namespaces":  # those terminate (`namespaces`)
            meta = new["metadata"]
            if meta.get("deletionTimestamp") and not meta.get("finalizers"):
                with contextlib.suppress(model.ApiError):
                    self._store.delete(rtype, meta["name"], meta.get("namespace", ""))
        elif event == "DELETED" and old is not None:
            uid = old["metadata"].get("uid", "")
            with self._lock:
                orphan = uid in self._orphaning
            if not orphan:
                self._defer(lambda: self._collect(uid))

    def _index(self, rtype: model.ResourceType, obj: Obj, *, present: bool) -> None:
        meta = obj["metadata"]
        ident = (rtype.key, meta.get("namespace", ""), meta.get("name", ""))
        with self._lock:
            for owner in self._owners_of.pop(ident, set()):
                self._dependents.get(owner, set()).discard(ident)
            if not present:
                self._by_uid.pop(meta.get("uid", ""), None)
                return
            self._by_uid[meta.get("uid", "")] = ident
            owners = {str(ref.get("uid")) for ref in meta.get("ownerReferences") or []}
            if owners:
                self._owners_of[ident] = owners
            for owner in owners:
                self._dependents.setdefault(owner, set()).add(ident)

    def _collect(self, owner_uid: str) -> None:
        with self._lock:
            dependents = sorted(self._dependents.pop(owner_uid, set()))
        for key, namespace, name in dependents:
            rtype = self._lookup(key)
            obj = self._store.find(rtype, name, namespace) if rtype is not None else None
            if rtype is not None and obj is not None:
                self._dependent(rtype, obj, owner_uid)

    def _dependent(self, rtype: model.ResourceType, obj: Obj, owner_uid: str) -> None:
        refs = [ref for ref in obj["metadata"].get("ownerReferences") or [] if ref.get("uid") != owner_uid]
        with self._lock:
            alive = [ref for ref in refs if ref.get("uid") in self._by_uid]
        if alive:
            trimmed = model.clone(obj)
            trimmed["metadata"]["ownerReferences"] = refs
            with contextlib.suppress(model.ApiError):
                self._store.update(rtype, trimmed, check_rv=False)
            return
        with contextlib.suppress(model.ApiError):
            self.delete(rtype, obj)

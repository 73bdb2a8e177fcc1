"""A namespace's life as kube-apiserver and the namespace controller lead it: created Active, deleted in the background.

- Creation (pkg/registry/core/namespace/strategy.go, `namespaceStrategy.PrepareForCreate`): `status.phase` is
  `Active` and `spec.finalizers` holds `kubernetes`; the defaulting adds the label `kubernetes.io/metadata.name`
  with the namespace's name (pkg/apis/core/v1/defaults.go, `SetDefaults_Namespace`). An update keeps the stored
  `spec.finalizers` and status (`PrepareForUpdate`); the label is set again.
- Deletion (pkg/registry/core/namespace/storage/storage.go, `REST.Delete`): the first DELETE sets
  `metadata.deletionTimestamp` and `status.phase: Terminating` and answers 200 with the namespace; while
  `spec.finalizers` is not empty a later DELETE answers the same. The namespace controller
  (pkg/controller/namespace/deletion/namespaced_resources_deleter.go) then deletes every object in it, and only
  then removes the `kubernetes` finalizer through `/finalize`, after which the namespace is gone. Here that takes
  `DELETE_SECONDS` of cluster time.
- Content in a terminating namespace (k8s.io/apiserver pkg/admission/plugin/namespace/lifecycle/admission.go,
  `Lifecycle.Admit`): a create is refused with 403 Forbidden, "unable to create new content in namespace <ns>
  because it is being terminated", with a `NamespaceTerminating` cause on `metadata.namespace`; updates and
  deletes of what is still there are allowed.
"""

from __future__ import annotations

import contextlib
from typing import Any

from snoreloc_sim.kube import model

Obj = dict[str, Any]

NAMESPACES = "namespaces"
FINALIZER = "kubernetes"
NAME_LABEL = "kubernetes.io/metadata.name"
DELETE_SECONDS = 5.0  # cluster seconds from the DELETE to the namespace being gone (content first)
TERMINATING = "Terminating"
ACTIVE = {"phase": "Active"}


def prepare_create(body: Obj) -> None:
    """`PrepareForCreate` and the defaulting: the `kubernetes` finalizer, the name label (the server sets the
    phase, `ACTIVE`, on what validation admitted)."""
    spec = body.setdefault("spec", {})
    finalizers = list(spec.get("finalizers") or [])
    if FINALIZER not in finalizers:
        finalizers.append(FINALIZER)
    spec["finalizers"] = finalizers
    _label(body)


def prepare_update(new: Obj, old: Obj) -> None:
    """`PrepareForUpdate`: the stored finalizers and status stay; the name label is set again."""
    new["spec"] = {**(new.get("spec") or {}), "finalizers": list((old.get("spec") or {}).get("finalizers") or [])}
    if "status" in old:
        new["status"] = model.clone(old["status"])
    for name in ("deletionTimestamp", "deletionGracePeriodSeconds"):
        if name in old.get("metadata", {}):
            new.setdefault("metadata", {})[name] = old["metadata"][name]
    _label(new)


def _label(body: Obj) -> None:
    meta = body.setdefault("metadata", {})
    if meta.get("name"):
        meta["labels"] = {**(meta.get("labels") or {}), NAME_LABEL: meta["name"]}


def terminating(obj: Obj | None) -> bool:
    return obj is not None and (obj.get("status") or {}).get("phase") == TERMINATING


def refuse_content(store: model.Store, namespaces: model.ResourceType, rtype: model.ResourceType, obj: Obj) -> None:
    """NamespaceLifecycle admission of a create: 403 when the object's namespace is being terminated."""
    if not rtype.namespaced:
        return
    meta = obj.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    if not terminating(store.find(namespaces, namespace)):
        return
    name = str(meta.get("name") or "")
    raise model.ApiError(
        403,
        "Forbidden",
        f'{rtype.key} "{name}" is forbidden: unable to create new content in namespace {namespace} because it is '
        "being terminated",
        details={"name": name, "group": rtype.group, "kind": rtype.plural},
        causes=[
            {
                "reason": "NamespaceTerminating",
                "message": f"namespace {namespace} is being terminated",
                "field": "metadata.namespace",
            }
        ],
    )


class Deleter:
    """`REST.Delete` for namespaces and the namespace controller's work after it."""

    def __init__(self, cluster: model.Cluster, types: dict[str, model.ResourceType]) -> None:
        self.cluster = cluster
        self.types = types

    @property
    def _rtype(self) -> model.ResourceType:
        return self.types[NAMESPACES]

    def delete(self, name: str) -> Obj:
        """The answer to DELETE: the namespace, Terminating; the controller empties and removes it later."""
        store = self.cluster.store
        current = store.get(self._rtype, name)
        if current["metadata"].get("deletionTimestamp"):
            return current
        marked = model.clone(current)
        marked["metadata"]["deletionTimestamp"] = model.now_rfc3339()
        marked["status"] = {**(marked.get("status") or {}), "phase": TERMINATING}
        store.update(self._rtype, marked, check_rv=False)
        stored = store.update(self._rtype, marked, status_only=True, check_rv=False)
        self.cluster.timeline.after(DELETE_SECONDS, lambda: self._finish(name, current["metadata"]["uid"]))
        return stored

    def _finish(self, name: str, uid: str) -> None:
        """The namespace controller: delete the content, then the `kubernetes` finalizer, then the namespace."""
        store = self.cluster.store
        found = store.find(self._rtype, name)
        if found is None or found["metadata"].get("uid") != uid:
            return
        for rtype in self.types.values():
            if rtype.namespaced:
                for obj in store.list(rtype, name):
                    with contextlib.suppress(model.ApiError):
                        store.delete(rtype, obj["metadata"]["name"], name)
        with contextlib.suppress(model.ApiError):
            store.delete(self._rtype, name)

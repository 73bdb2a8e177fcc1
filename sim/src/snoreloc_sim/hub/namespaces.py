"""Namespaces that terminate as kube's do: deleting one deletes its content first, finalizers and all.

Followed (kubernetes/kubernetes):
- `pkg/registry/core/namespace/storage/storage.go`, `Delete`: the namespace gets a `deletionTimestamp` and
  `status.phase: Terminating` and stays until the namespace controller has emptied it
  (`pkg/controller/namespace/deletion/namespaced_resources_deleter.go`, `Delete`: every namespaced object is
  deleted, each as a DELETE would, so objects with finalizers hold the namespace until their controllers let go);
- `plugin/pkg/admission/namespace/lifecycle/admission.go`: nothing new is created in a terminating namespace
  ("unable to create new content in namespace X because it is being terminated", 403 with the cause
  `NamespaceTerminating`), and `default`, `kube-system` and `kube-public` may not be deleted.
Differences: the emptying happens inside the DELETE (and on each later deletion in it), not in a controller
loop; the namespace's own `spec.finalizers` are not modelled.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from snoreloc_sim import model
from snoreloc_sim.hub import lifecycle

Obj = dict[str, Any]
IMMORTAL = frozenset({"default", "kube-system", "kube-public"})


class Namespaces:
    """Terminating namespaces over the hub's store; `types()` gives the served types."""

    def __init__(
        self,
        store: model.Store,
        deleter: lifecycle.Lifecycle,
        namespaces: Callable[[], model.ResourceType],
        types: Callable[[], list[model.ResourceType]],
    ) -> None:
        self._store = store
        self._deleter = deleter
        self._namespaces = namespaces
        self._types = types
        self._lock = threading.Lock()
        self._terminating: set[str] = set()

    def admit(self, rtype: model.ResourceType, new: Obj, old: Obj | None) -> None:
        """The admission hook: no new content in a terminating namespace."""
        namespace = (new.get("metadata") or {}).get("namespace", "")
        with self._lock:
            terminating = namespace in self._terminating
        if old is None and rtype.namespaced and terminating:
            message = f"unable to create new content in namespace {namespace} because it is being terminated"
            name = (new.get("metadata") or {}).get("name", "")
            cause = {"reason": "NamespaceTerminating", "message": message, "field": "metadata.namespace"}
            details = {"name": name, "group": rtype.group, "kind": rtype.plural, "causes": [cause]}
            raise model.ApiError(403, "Forbidden", f'{rtype.key} "{name}" is forbidden: {message}', details=details)

    def delete(self, namespace: Obj) -> Obj | None:
        """Start (or go on) terminating a namespace: the namespace while content remains, None once it is gone."""
        name = namespace["metadata"]["name"]
        if name in IMMORTAL:
            message = f'namespaces "{name}" is forbidden: this namespace may not be deleted'
            raise model.ApiError(403, "Forbidden", message, details={"name": name, "group": "", "kind": "namespaces"})
        if not namespace["metadata"].get("deletionTimestamp"):
            marked = model.clone(namespace)
            marked["metadata"].update(deletionTimestamp=model.now_rfc3339())
            marked = self._store.update(self._namespaces(), marked, check_rv=False)
            marked["status"] = {**(marked.get("status") or {}), "phase": "Terminating"}
            self._store.update(self._namespaces(), marked, status_only=True, check_rv=False)
        with self._lock:
            self._terminating.add(name)
        for rtype in self._types():
            if rtype.namespaced:
                for obj in self._store.list(rtype, name):
                    with contextlib.suppress(model.ApiError):
                        self._deleter.delete(rtype, obj)
        return self._finish(name)

    def on_change(self, rtype: model.ResourceType, event: str, old: Obj | None, new: Obj | None) -> None:
        """The store listener: a terminating namespace goes once its last object has."""
        if event != "DELETED" or old is None or not rtype.namespaced:
            return
        namespace = old["metadata"].get("namespace", "")
        with self._lock:
            terminating = namespace in self._terminating
        if terminating:
            self._finish(namespace)

    def _finish(self, name: str) -> Obj | None:
        if any(self._store.list(rtype, name) for rtype in self._types() if rtype.namespaced):
            return self._store.find(self._namespaces(), name)
        with self._lock:
            self._terminating.discard(name)
        with contextlib.suppress(model.ApiError):
            self._store.delete(self._namespaces(), name)
        return None

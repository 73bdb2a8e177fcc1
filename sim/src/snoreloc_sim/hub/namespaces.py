"""Namespaces that terminate as kube's do: deleting one deletes its content first, finalizers and all.

Followed (kubernetes/kubernetes):
- `pkg/registry/core/namespace/storage/storage.go`, `Delete`: the namespace gets a `deletionTimestamp` and
  `status.phase: Terminating` and stays until the namespace controller has emptied it
  (`pkg/controller/namespace/deletion/namespaced_resources_deleter.go`, `Delete`: every namespaced object is
  deleted, each as a DELETE would, so objects with finalizers hold the namespace until their controllers let go);
- `plugin/pkg/admission/namespace/lifecycle/admission.go`: `default`, `kube-system` and `kube-public` may not be
  deleted. Its refusal of new content in a terminating namespace, the `kubernetes` finalizer and the name label
  are the kube layer's (`snoreloc_sim.kube.namespaces`, applied by `kube.api.Api` to the hub too).
That module's namespace controller empties a namespace after a delay and without regard to finalizers; the hub's
empties it as kube-controller-manager's namespace controller does, after the DELETE has answered with the
namespace Terminating (`defer`: the hub simulator's `controller_delay`, 0.2 s by default; without it, inside the
DELETE), each object deleted as a DELETE would, so a controller's finalizers hold the namespace as on a real hub.
The namespace goes once its last object has. A DELETE always answers the Terminating namespace, even an empty one,
as the real server does (the namespace controller removes its `kubernetes` finalizer later).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from snoreloc_sim.hub import lifecycle
from snoreloc_sim.kube import model
from snoreloc_sim.kube import namespaces as sim_namespaces

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
        defer: Callable[[Callable[[], None]], None] | None = None,
    ) -> None:
        self._defer = defer
        self._store = store
        self._deleter = deleter
        self._namespaces = namespaces
        self._types = types
        self._lock = threading.Lock()
        self._terminating: set[str] = set()

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
            marked["status"] = {**(marked.get("status") or {}), "phase": sim_namespaces.TERMINATING}
            self._store.update(self._namespaces(), marked, status_only=True, check_rv=False)
        with self._lock:
            self._terminating.add(name)
        if self._defer is None:
            return self._empty(name)
        uid = namespace["metadata"].get("uid")

        def empty() -> None:  # that namespace, still terminating: not a new one of its name made since
            current = self._store.find(self._namespaces(), name)
            if current is not None and current["metadata"].get("uid") == uid:
                self._empty(name)

        self._defer(empty)
        return self._store.find(self._namespaces(), name)

    def _empty(self, name: str) -> Obj | None:
        """The namespace controller's pass: delete every object in it; the namespace goes once they have."""
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

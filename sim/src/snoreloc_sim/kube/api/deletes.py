"""Deletes: one object (a namespace goes Terminating and its content first, see `namespaces`) or a collection.

A built-in type's delete answers with a `Status`, a custom resource's with the object (k8s.io/apiserver
pkg/endpoints/handlers/delete.go, `DeleteResource`; pkg/registry/generic/registry/store.go, `ReturnDeletedObject`).
"""

from __future__ import annotations

import contextlib
from typing import Any

from snoreloc_sim.kube import model, namespaces
from snoreloc_sim.kube.api.paths import Target
from snoreloc_sim.kube.api.reads import Reads
from snoreloc_sim.kube.messages import Request, Response, dry_run, success_status

Obj = dict[str, Any]


class Deletes(Reads):
    """Delete and deletecollection."""

    def _delete(self, request: Request, target: Target) -> Response:
        rtype, name = target.rtype, target.name
        assert name is not None
        if dry_run(request):
            return Response(200, self._get(target))
        if rtype.key == namespaces.NAMESPACES:
            return Response(200, namespaces.Deleter(self.cluster, self.registry.types).delete(name))
        gone = self.cluster.store.delete(rtype, name, target.namespace or "")
        body = success_status(rtype, gone) if self.registry.is_builtin(rtype) else gone
        return Response(200, body)

    def _delete_collection(self, request: Request, target: Target) -> Response:
        doomed = self._selected(request, target)
        if not dry_run(request):
            for obj in doomed:
                meta = obj["metadata"]
                with contextlib.suppress(model.ApiError):
                    self.cluster.store.delete(target.rtype, meta["name"], meta.get("namespace", ""))
        rtype = target.rtype
        meta = {"resourceVersion": self.cluster.store.current_rv()}
        return Response(
            200, {"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version, "metadata": meta, "items": doomed}
        )

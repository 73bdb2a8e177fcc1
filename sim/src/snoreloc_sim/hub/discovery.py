"""The hub's discovery documents: kopf and kubectl find every type, verb, short name and category here.

The group list and group documents are the simulator's own (`registry`); the resource lists are built here
because kube-apiserver publishes more than the OpenShift simulator needs: `watch` and `deletecollection` among the
verbs (kopf refuses to serve a type whose verbs lack `watch` and `list`), categories (`kubectl get all`-style
names), and per-subresource verbs (`serviceaccounts/token` only `create`).
Followed: staging/src/k8s.io/apiserver/pkg/endpoints/discovery/ (`APIResourceList`) and, for CRDs,
staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_discovery_controller.go (`sync`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from snoreloc_sim.hub import kinds
from snoreloc_sim.kube import model, registry

Obj = dict[str, Any]


def resource_list(
    served: registry.Registry, extras: Callable[[str], kinds.Extras], group: str, version: str
) -> Obj | None:
    """`/api/v1` or `/apis/<group>/<version>`; `extras(key)` gives a type's `kinds.Extras`."""

    def entries(rtype: model.ResourceType) -> list[Obj]:
        extra = extras(rtype.key)

        def subresource(name: str) -> Obj:
            found: Obj = {"verbs": list(extra.subresource_verbs.get(name, kinds.SUBRESOURCE_VERBS))}
            if name == "token":  # served by the authentication group (pkg/registry/core/rest/storage_core.go)
                found.update(kind="TokenRequest", group="authentication.k8s.io", version="v1")
            return found

        return registry.resource_entries(rtype, extra.verbs, extra.categories, subresource)

    return registry.api_resource_list(served, group, version, entries)

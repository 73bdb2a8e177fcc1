"""The hub's discovery documents: kopf and kubectl find every type, verb, short name and category here.

The group list and group documents are the simulator's own (`registry`); the resource lists are built here
because kube-apiserver publishes more than the OpenShift simulator needs: `watch` and `deletecollection` among the
verbs (kopf refuses to serve a type whose verbs lack `watch` and `list`), categories (`kubectl get all`-style
names), and per-subresource verbs (`serviceaccounts/token` only `create`).
Followed: staging/src/k8s.io/apiserver/pkg/endpoints/discovery/ (`APIResourceList`) and, for CRDs,
staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_discovery_controller.go (`sync`).
"""

from __future__ import annotations

from typing import Any

from snoreloc_sim import model, registry
from snoreloc_sim.hub import kinds

Obj = dict[str, Any]


def _entries(rtype: model.ResourceType, extras: kinds.Extras) -> list[Obj]:
    main: Obj = {
        "name": rtype.plural,
        "singularName": rtype.singular,
        "namespaced": rtype.namespaced,
        "kind": rtype.kind,
        "verbs": list(extras.verbs),
    }
    if rtype.short_names:
        main["shortNames"] = list(rtype.short_names)
    if extras.categories:
        main["categories"] = list(extras.categories)
    subs = [
        {
            "name": f"{rtype.plural}/{sub}",
            "singularName": "",
            "namespaced": rtype.namespaced,
            "kind": "TokenRequest" if sub == "token" else rtype.kind,
            "verbs": list(extras.subresource_verbs.get(sub, kinds.SUBRESOURCE_VERBS)),
            **({"group": "authentication.k8s.io", "version": "v1"} if sub == "token" else {}),
        }
        for sub in rtype.subresources
    ]
    return [main, *subs]


def resource_list(served: registry.Registry, extras: Any, group: str, version: str) -> Obj | None:
    """`/api/v1` or `/apis/<group>/<version>`; `extras(key)` gives a type's `kinds.Extras`."""
    types = served.in_group_version(group, version)
    if not types:
        return None
    resources = [entry for rtype in types for entry in _entries(rtype, extras(rtype.key))]
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}

"""Which resources the simulated API server serves, and how it describes them in discovery.

kubectl and the official client find resources through discovery (`/api`, `/apis`, `/apis/<group>/<version>`)
before they touch an object, so the server must describe each type as kube-apiserver does: plural, kind, scope,
verbs, short names and subresources. The built-in types are declared here; every CRD comes from the `*.json`
files of the directory `load` is given (the OpenShift layer's `openshift/crds`, one per CRD, written by
`tools/gen_sim_schemas.py`), so adding a CRD there serves it with no code change.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from snoreloc_sim.kube import kinds, model

Obj = dict[str, Any]

OBJECT_VERBS = ("create", "delete", "get", "list", "patch", "update")
SUBRESOURCE_VERBS = ("get", "patch", "update")

BUILTIN_TYPES: tuple[model.ResourceType, ...] = (
    model.ResourceType("", "v1", "namespaces", "Namespace", False, True, ("ns",), ("status", "finalize")),
    model.ResourceType("", "v1", "secrets", "Secret", True, False, (), ()),
    model.ResourceType("", "v1", "configmaps", "ConfigMap", True, False, ("cm",), ()),
    model.ResourceType("", "v1", "nodes", "Node", False, True, ("no",), ("status",)),
    model.ResourceType("", "v1", "pods", "Pod", True, True, ("po",), ("status",)),
    model.ResourceType("", "v1", "events", "Event", True, False, ("ev",), ()),
    model.ResourceType(
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
        False,
        True,
        ("csr",),
        ("status", "approval"),
    ),
)


@dataclass(frozen=True)
class Registry:
    """The served types by store key, and which of them are built into kube-apiserver (not CRDs)."""

    types: dict[str, model.ResourceType]
    builtin: frozenset[str]

    def lookup(self, group: str, version: str, plural: str) -> model.ResourceType | None:
        key = f"{plural}.{group}" if group else plural
        found = self.types.get(key)
        return found if found is not None and found.version == version else None

    def is_builtin(self, rtype: model.ResourceType) -> bool:
        return rtype.key in self.builtin

    def without(self, keys: frozenset[str]) -> Registry:
        """The same registry minus the types at `keys`: an older API server that never knew them."""
        kept = {key: rtype for key, rtype in self.types.items() if key not in keys}
        return Registry(types=kept, builtin=self.builtin - keys)

    def group_versions(self) -> dict[str, list[str]]:
        """Every served API group (core is "") with its versions, in a stable order."""
        found: dict[str, list[str]] = {}
        for rtype in sorted(self.types.values(), key=lambda t: (t.group, t.version)):
            versions = found.setdefault(rtype.group, [])
            if rtype.version not in versions:
                versions.append(rtype.version)
        return found

    def in_group_version(self, group: str, version: str) -> list[model.ResourceType]:
        return sorted(
            (t for t in self.types.values() if t.group == group and t.version == version), key=lambda t: t.plural
        )


def crd_type(spec: Obj) -> model.ResourceType:
    """The ResourceType a generated CRD file describes."""
    subresources = tuple(spec.get("subresources", ()))
    return model.ResourceType(
        group=spec["group"],
        version=spec["version"],
        plural=spec["plural"],
        kind=spec["kind"],
        namespaced=bool(spec["namespaced"]),
        has_status="status" in subresources,
        short_names=tuple(spec.get("shortNames") or ()),
        subresources=subresources,
    )


def load(crd_dir: Path) -> Registry:
    """The built-in types plus one type per `*.json` CRD file in `crd_dir` (missing dir: built-ins only)."""
    builtins = (*BUILTIN_TYPES, *(t for t in kinds.resource_types() if t.key not in {b.key for b in BUILTIN_TYPES}))
    builtins = tuple(dataclasses.replace(t, generation=t.key in kinds.WITH_GENERATION) for t in builtins)
    types = {t.key: t for t in builtins}
    if crd_dir.is_dir():
        for path in sorted(crd_dir.glob("*.json")):
            rtype = crd_type(json.loads(path.read_text(encoding="utf-8")))
            types[rtype.key] = rtype
    return Registry(types=types, builtin=frozenset(t.key for t in builtins))


def api_versions(server_address: str) -> Obj:
    """The `/api` document: the core group's versions."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def api_group(name: str, versions: list[str]) -> Obj:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry: Registry) -> Obj:
    """The `/apis` document: every named group (the core group is listed under `/api`)."""
    groups = [api_group(name, versions) for name, versions in registry.group_versions().items() if name]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def resource_entries(
    rtype: model.ResourceType,
    verbs: tuple[str, ...] = OBJECT_VERBS,
    categories: tuple[str, ...] = (),
    subresource: Callable[[str], Obj] | None = None,
) -> list[Obj]:
    """A type's discovery entries: the resource, then one per subresource (`subresource(name)` overrides fields)."""
    main: Obj = {
        "name": rtype.plural,
        "singularName": rtype.singular,
        "namespaced": rtype.namespaced,
        "kind": rtype.kind,
        "verbs": list(verbs),
    }
    if rtype.short_names:
        main["shortNames"] = list(rtype.short_names)
    if categories:
        main["categories"] = list(categories)
    subs = [
        {
            "name": f"{rtype.plural}/{sub}",
            "singularName": "",
            "namespaced": rtype.namespaced,
            "kind": "Scale" if sub == "scale" else rtype.kind,
            "verbs": list(SUBRESOURCE_VERBS),
            **(subresource(sub) if subresource is not None else {}),
        }
        for sub in rtype.subresources
    ]
    return [main, *subs]


def api_resource_list(
    registry: Registry,
    group: str,
    version: str,
    entries: Callable[[model.ResourceType], list[Obj]] = resource_entries,
) -> Obj | None:
    """The `/api/v1` or `/apis/<group>/<version>` document, or None when nothing is served there."""
    served = registry.in_group_version(group, version)
    if not served:
        return None
    resources = [entry for rtype in served for entry in entries(rtype)]
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}

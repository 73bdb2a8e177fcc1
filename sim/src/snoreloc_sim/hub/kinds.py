"""The built-in kinds the hub serves beyond the simulator's own, and how discovery describes them.

The simulator's built-in kinds (`registry.BUILTIN_TYPES` and `snoreloc_sim.kube.kinds`: namespaces, Secrets,
ConfigMaps, Events, Services, ServiceAccounts, the four RBAC kinds, Deployments...) are the hub's too, validated
and with `generation` as there; nothing runs them (no Pods scheduled, no cluster IPs, no rollouts). The hub adds
what its clients need and an OpenShift node's agent does not: the ServiceAccount `token` subresource,
`events.k8s.io` Events, CustomResourceDefinitions and SelfSubjectAccessReviews. Discovery entries carry the verbs,
short names and categories kube-apiserver publishes for them (`pkg/registry/*/storage`,
`ShortNames()`/`Categories()`; verbs from the REST storage's interfaces).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from snoreloc_sim.kube import model, registry

# Verbs a REST storage with every interface publishes (staging/src/k8s.io/apiserver/pkg/endpoints/installer.go,
# `registerResourceHandlers` adds a verb per interface the storage implements); CRDs get the same eight
# (staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_discovery_controller.go, `sync`).
ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
SUBRESOURCE_VERBS = ("get", "patch", "update")
CREATE_ONLY = ("create",)

CRDS = "customresourcedefinitions.apiextensions.k8s.io"
SERVICE_ACCOUNTS = "serviceaccounts"
SECRETS = "secrets"
NAMESPACES = "namespaces"


@dataclass(frozen=True)
class Extras:
    """What discovery says beyond `model.ResourceType`: verbs, categories, and the verbs of each subresource."""

    verbs: tuple[str, ...] = ALL_VERBS
    categories: tuple[str, ...] = ()
    subresource_verbs: dict[str, tuple[str, ...]] = field(default_factory=dict)


HUB_TYPES: tuple[model.ResourceType, ...] = (
    model.ResourceType("", "v1", SERVICE_ACCOUNTS, "ServiceAccount", True, False, ("sa",), ("token",), False),
    model.ResourceType("events.k8s.io", "v1", "events", "Event", True, False, ("ev",), (), False),
    model.ResourceType(
        "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False, True,
        ("crd", "crds"), ("status",),
    ),
    model.ResourceType(
        "authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False, False, (), (),
        False,
    ),
)  # fmt: skip


def builtin_types(base: registry.Registry) -> dict[str, model.ResourceType]:
    """The simulator's built-in types (`base`, from `registry.load` without CRDs) with the hub's added or replaced."""
    return {**{key: base.types[key] for key in sorted(base.builtin)}, **{t.key: t for t in HUB_TYPES}}


EXTRAS: dict[str, Extras] = {
    SERVICE_ACCOUNTS: Extras(subresource_verbs={"token": CREATE_ONLY}),
    "selfsubjectaccessreviews.authorization.k8s.io": Extras(verbs=CREATE_ONLY),
    CRDS: Extras(categories=("api-extensions",)),
    "services": Extras(categories=("all",)),
    "deployments.apps": Extras(categories=("all",), subresource_verbs={"status": SUBRESOURCE_VERBS}),
    NAMESPACES: Extras(
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
        subresource_verbs={"finalize": ("update",)},
    ),
}

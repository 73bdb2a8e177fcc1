"""The built-in kinds a plain kube-apiserver serves to the fleet hub's clients, and how discovery describes them.

Only what the hub's clients touch: namespaces, Secrets, ConfigMaps, ServiceAccounts (with the `token`
subresource), Events (core and `events.k8s.io`), the four RBAC kinds, CustomResourceDefinitions and
SelfSubjectAccessReviews; Services and Deployments are stored (so a controller's manifests apply) but nothing
runs them: no Pods, no cluster IPs, no rollout status. Discovery entries carry the verbs, short names and
categories kube-apiserver publishes for them (`pkg/registry/*/storage`, `ShortNames()`/`Categories()`; verbs
from the REST storage's interfaces).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from snoreloc_sim import model

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


def _core(
    plural: str, kind: str, namespaced: bool, short: tuple[str, ...] = (), subs: tuple[str, ...] = ()
) -> model.ResourceType:
    return model.ResourceType("", "v1", plural, kind, namespaced, "status" in subs, short, subs)


BUILTIN_TYPES: tuple[model.ResourceType, ...] = (
    _core(NAMESPACES, "Namespace", False, ("ns",), ("status", "finalize")),
    _core(SECRETS, "Secret", True),
    _core("configmaps", "ConfigMap", True, ("cm",)),
    _core(SERVICE_ACCOUNTS, "ServiceAccount", True, ("sa",), ("token",)),
    _core("events", "Event", True, ("ev",)),
    _core("services", "Service", True, ("svc",), ("status",)),
    model.ResourceType("events.k8s.io", "v1", "events", "Event", True, False, ("ev",), ()),
    model.ResourceType("apps", "v1", "deployments", "Deployment", True, True, ("deploy",), ("status",)),
    model.ResourceType("rbac.authorization.k8s.io", "v1", "roles", "Role", True, False, (), ()),
    model.ResourceType("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True, False, (), ()),
    model.ResourceType("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False, False, (), ()),
    model.ResourceType(
        "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False, False, (), ()
    ),
    model.ResourceType(
        "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False, True,
        ("crd", "crds"), ("status",),
    ),
    model.ResourceType(
        "authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False, False, (), ()
    ),
)  # fmt: skip

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

"""The built-in kinds a site's extra manifests commonly carry, served with the validation that matters to apply.

A site brings Services, ServiceAccounts, RBAC, Deployments, DaemonSets, NetworkPolicies and claims along with its
ConfigMaps and Secrets; a real cluster takes them, so the simulator must too, and refuse what a real one refuses.
Each kind is a `builtin.Kind`: its schema names the fields of the real type (so server-side apply refuses an
undeclared or mistyped field, see `typed`; nested parts the agent never reads, like a pod template's spec, are left
open), its `prepare` applies the defaults kube-apiserver stores, and its `check` the Go rules that decide
acceptance. Sources, all in kubernetes/kubernetes:

- Service: pkg/apis/core/validation/validation.go `ValidateService` (ports required unless headless or
  ExternalName; port 1-65535; names required with several ports, unique; `type` among the four; ExternalName needs
  `externalName`), `ValidateServiceUpdate` (clusterIP immutable); defaults pkg/apis/core/v1/defaults.go
  `SetDefaults_Service` (type ClusterIP, sessionAffinity None, protocol TCP, targetPort = port) and the ClusterIP
  allocator (pkg/registry/core/service/storage: an address from the service network, 172.30.0.0/16 on
  OpenShift; `ipFamilies`, `ipFamilyPolicy: SingleStack`).
- Role, ClusterRole, RoleBinding, ClusterRoleBinding: pkg/apis/rbac/validation/validation.go (`ValidatePolicyRule`:
  verbs required, apiGroups required with resources, no nonResourceURLs in a Role; `ValidateRoleBindingSubject`;
  roleRef kind Role or ClusterRole (ClusterRole only in a ClusterRoleBinding), name required, and immutable on
  update: "cannot change roleRef").
- Deployment, DaemonSet: pkg/apis/apps/validation/validation.go (`ValidateDeploymentSpec`/`ValidateDaemonSetSpec`:
  selector required and matching the template's labels, "`selector` does not match template `labels`"; selector
  immutable in apps/v1), defaults pkg/apis/apps/v1/defaults.go.
- NetworkPolicy: pkg/apis/networking/validation/validation.go (`policyTypes` among Ingress and Egress).
- PersistentVolumeClaim: pkg/apis/core/validation/validation.go `ValidatePersistentVolumeClaimSpec` (at least one
  access mode, among the four; `resources.requests[storage]` required) and `ValidatePersistentVolumeClaimUpdate`
  (the spec is immutable but for the requests).

Generation: kube-apiserver sets `metadata.generation` only in the strategies of kinds that have one (Deployments,
DaemonSets, NetworkPolicies, custom resources); ConfigMaps, Secrets, Namespaces, Services, ServiceAccounts, RBAC,
claims and CSRs carry none (`WITH_GENERATION`, used by the store).

Authorization is not modelled here: RBAC objects are stored and validated, not enforced.
"""

from __future__ import annotations

import ipaddress
import itertools
import threading
from typing import Any

from snoreloc_sim.kube import model
from snoreloc_sim.kube.builtin import Issue, Kind

Obj = dict[str, Any]

_STR: Obj = {"type": "string"}
_INT: Obj = {"type": "integer"}
_BOOL: Obj = {"type": "boolean"}
_OPEN: Obj = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_STRINGS: Obj = {"type": "array", "items": _STR}
_STRING_MAP: Obj = {"type": "object", "additionalProperties": _STR}
_INT_OR_STRING: Obj = {"x-kubernetes-int-or-string": True}
_SELECTOR: Obj = {
    "type": "object",
    "properties": {"matchLabels": _STRING_MAP, "matchExpressions": {"type": "array", "items": _OPEN}},
}
_TEMPLATE: Obj = {
    "type": "object",
    "properties": {
        "metadata": {"type": "object", "properties": {"labels": _STRING_MAP, "annotations": _STRING_MAP}},
        "spec": _OPEN,
    },
}
SERVICE_NETWORK = ipaddress.ip_network("172.30.0.0/16")
# Store keys of the built-in kinds whose strategy sets metadata.generation (custom resources always get one).
WITH_GENERATION = frozenset({"deployments.apps", "daemonsets.apps", "networkpolicies.networking.k8s.io"})
PORT_RANGE = "must be between 1 and 65535, inclusive"


def _obj(**properties: Obj) -> Obj:
    return {"type": "object", "properties": properties}


def _root(**properties: Obj) -> Obj:
    return _obj(apiVersion=_STR, kind=_STR, metadata={"type": "object"}, **properties)


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _immutable(obj: Obj, old: Obj | None, path: tuple[str, ...], detail: str = "field is immutable") -> list[Issue]:
    if old is None:
        return []
    new_value, old_value = _dig(obj, path), _dig(old, path)
    if new_value == old_value:
        return []
    return [Issue("FieldValueInvalid", ".".join(path), new_value, detail)]


def _dig(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


# ---- Service --------------------------------------------------------------------------------------------------

SERVICE_TYPES = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
PROTOCOLS = ("SCTP", "TCP", "UDP")
_PORT: Obj = _obj(
    name=_STR,
    protocol={"type": "string", "default": "TCP"},
    appProtocol=_STR,
    port=_INT,
    targetPort=_INT_OR_STRING,
    nodePort=_INT,
)  # protocol's default lets a port without it be a keyed item (structured-merge-diff's defaulted list keys)
_SERVICE_SPEC: Obj = _obj(
    ports={"type": "array", "items": _PORT, "x-kubernetes-list-type": "map",
           "x-kubernetes-list-map-keys": ["port", "protocol"]},
    selector=_STRING_MAP, clusterIP=_STR, clusterIPs=_STRINGS, type=_STR, externalIPs=_STRINGS,
    sessionAffinity=_STR, loadBalancerIP=_STR, loadBalancerSourceRanges=_STRINGS, externalName=_STR,
    externalTrafficPolicy=_STR, healthCheckNodePort=_INT, publishNotReadyAddresses=_BOOL,
    sessionAffinityConfig=_OPEN, ipFamilies=_STRINGS, ipFamilyPolicy=_STR, allocateLoadBalancerNodePorts=_BOOL,
    loadBalancerClass=_STR, internalTrafficPolicy=_STR, trafficDistribution=_STR,
)  # fmt: skip


class _Addresses:
    """The ClusterIP allocator: the next free address of the service network."""

    def __init__(self) -> None:
        self._next = itertools.count(10)
        self._lock = threading.Lock()

    def allocate(self) -> str:
        with self._lock:
            return str(SERVICE_NETWORK[next(self._next) % (SERVICE_NETWORK.num_addresses - 2) + 1])


_ADDRESSES = _Addresses()


def _prepare_service(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
    if spec["type"] == "ExternalName":
        return
    if not spec.get("clusterIP"):
        spec["clusterIP"] = _ADDRESSES.allocate()
    spec.setdefault("clusterIPs", [spec["clusterIP"]])
    if spec["clusterIP"] != "None":
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
    spec.setdefault("internalTrafficPolicy", "Cluster")


def _check_service(obj: Obj, old: Obj | None) -> list[Issue]:
    spec = _spec(obj)
    kind = spec.get("type", "ClusterIP")
    issues: list[Issue] = []
    if kind not in SERVICE_TYPES:
        issues.append(Issue("FieldValueNotSupported", "spec.type", kind, _supported(SERVICE_TYPES)))
    ports = spec.get("ports") or []
    headless = spec.get("clusterIP") == "None"
    if not ports and not headless and kind != "ExternalName":
        issues.append(Issue("FieldValueRequired", "spec.ports"))
    if kind == "ExternalName" and not spec.get("externalName"):
        issues.append(Issue("FieldValueRequired", "spec.externalName"))
    issues += _port_issues(ports)
    if old is not None and _spec(old).get("clusterIP") and spec.get("clusterIP") != _spec(old).get("clusterIP"):
        issues.append(Issue("FieldValueInvalid", "spec.clusterIP", spec.get("clusterIP"), "field is immutable"))
    return issues


def _port_issues(ports: list[Any]) -> list[Issue]:
    issues, names = [], set()
    for index, port in enumerate(ports):
        if not isinstance(port, dict):
            continue
        where = f"spec.ports[{index}]"
        number = port.get("port")
        if not isinstance(number, int) or not 1 <= number <= 65535:
            issues.append(Issue("FieldValueInvalid", f"{where}.port", number, PORT_RANGE))
        name = port.get("name")
        if len(ports) > 1 and not name:
            issues.append(Issue("FieldValueRequired", f"{where}.name"))
        elif name and name in names:
            issues.append(Issue("FieldValueDuplicate", f"{where}.name", name))
        names.add(name)
        protocol = port.get("protocol", "TCP")
        if protocol not in PROTOCOLS:
            issues.append(Issue("FieldValueNotSupported", f"{where}.protocol", protocol, _supported(PROTOCOLS)))
    return issues


def _supported(values: tuple[str, ...]) -> str:
    return "supported values: " + ", ".join(f'"{value}"' for value in values)


# ---- RBAC ------------------------------------------------------------------------------------------------------

_RULE: Obj = _obj(
    apiGroups=_STRINGS, resources=_STRINGS, verbs=_STRINGS, resourceNames=_STRINGS, nonResourceURLs=_STRINGS
)
_RULES: Obj = {"type": "array", "items": _RULE}
_SUBJECT: Obj = _obj(kind=_STR, apiGroup=_STR, name=_STR, namespace=_STR)
_ROLE_REF: Obj = _obj(apiGroup=_STR, kind=_STR, name=_STR)
SUBJECT_KINDS = ("ServiceAccount", "User", "Group")


def _rule_issues(obj: Obj, *, namespaced: bool) -> list[Issue]:
    issues = []
    for index, rule in enumerate(obj.get("rules") or []):
        if not isinstance(rule, dict):
            continue
        where = f"rules[{index}]"
        if not rule.get("verbs"):
            issues.append(Issue("FieldValueRequired", f"{where}.verbs", detail="verbs must contain at least one value"))
        if rule.get("nonResourceURLs") and namespaced:
            detail = "namespaced rules cannot apply to non-resource URLs"
            issues.append(Issue("FieldValueInvalid", f"{where}.nonResourceURLs", rule["nonResourceURLs"], detail))
        if rule.get("resources") and not rule.get("apiGroups"):
            detail = "resource rules must supply at least one api group"
            issues.append(Issue("FieldValueRequired", f"{where}.apiGroups", detail=detail))
    return issues


def _check_role(obj: Obj, _old: Obj | None) -> list[Issue]:
    return _rule_issues(obj, namespaced=True)


def _check_cluster_role(obj: Obj, _old: Obj | None) -> list[Issue]:
    return _rule_issues(obj, namespaced=False)


def _binding_issues(obj: Obj, old: Obj | None, kinds: tuple[str, ...], *, cluster: bool) -> list[Issue]:
    ref: Obj = obj["roleRef"] if isinstance(obj.get("roleRef"), dict) else {}
    issues = []
    if ref.get("kind") not in kinds:
        issues.append(Issue("FieldValueNotSupported", "roleRef.kind", ref.get("kind"), _supported(kinds)))
    if not ref.get("name"):
        issues.append(Issue("FieldValueRequired", "roleRef.name"))
    for index, subject in enumerate(obj.get("subjects") or []):
        if not isinstance(subject, dict):
            continue
        where = f"subjects[{index}]"
        kind = subject.get("kind")
        if kind not in SUBJECT_KINDS:
            issues.append(Issue("FieldValueNotSupported", f"{where}.kind", kind, _supported(SUBJECT_KINDS)))
        if not subject.get("name"):
            issues.append(Issue("FieldValueRequired", f"{where}.name"))
        if cluster and subject.get("kind") == "ServiceAccount" and not subject.get("namespace"):
            issues.append(Issue("FieldValueRequired", f"{where}.namespace"))
    return issues + _immutable(obj, old, ("roleRef",), "cannot change roleRef")


def _check_role_binding(obj: Obj, old: Obj | None) -> list[Issue]:
    return _binding_issues(obj, old, ("Role", "ClusterRole"), cluster=False)


def _check_cluster_role_binding(obj: Obj, old: Obj | None) -> list[Issue]:
    return _binding_issues(obj, old, ("ClusterRole",), cluster=True)


def _prepare_binding(obj: Obj) -> None:
    for subject in obj.get("subjects") or []:
        if isinstance(subject, dict) and subject.get("kind") in ("User", "Group"):
            subject.setdefault("apiGroup", "rbac.authorization.k8s.io")


# ---- workloads -------------------------------------------------------------------------------------------------


def _workload_issues(obj: Obj, old: Obj | None) -> list[Issue]:
    spec = _spec(obj)
    selector = spec.get("selector")
    labels = _dig(spec, ("template", "metadata", "labels")) or {}
    issues = []
    if not isinstance(selector, dict) or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        issues.append(Issue("FieldValueRequired", "spec.selector"))
    else:
        wanted = selector.get("matchLabels") or {}
        if not isinstance(labels, dict) or any(labels.get(k) != v for k, v in wanted.items()):
            detail = "`selector` does not match template `labels`"
            issues.append(Issue("FieldValueInvalid", "spec.template.metadata.labels", labels, detail))
    containers = _dig(spec, ("template", "spec", "containers"))
    if not isinstance(containers, list) or not containers:
        issues.append(Issue("FieldValueRequired", "spec.template.spec.containers"))
    return issues + _immutable(obj, old, ("spec", "selector"))


def _prepare_deployment(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
        spec.setdefault("strategy", strategy)


def _prepare_daemon_set(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("revisionHistoryLimit", 10)
        strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
        spec.setdefault("updateStrategy", strategy)


_WORKLOAD_COMMON: Obj = {"selector": _SELECTOR, "template": _TEMPLATE, "minReadySeconds": _INT,
                         "revisionHistoryLimit": _INT}  # fmt: skip
_DEPLOYMENT_SPEC: Obj = _obj(
    **_WORKLOAD_COMMON, replicas=_INT, strategy=_OPEN, paused=_BOOL, progressDeadlineSeconds=_INT
)
_DAEMON_SET_SPEC: Obj = _obj(**_WORKLOAD_COMMON, updateStrategy=_OPEN)


# ---- NetworkPolicy ---------------------------------------------------------------------------------------------

POLICY_TYPES = ("Ingress", "Egress")
_NETWORK_POLICY_SPEC: Obj = _obj(
    podSelector=_SELECTOR, policyTypes=_STRINGS,
    ingress={"type": "array", "items": _OPEN}, egress={"type": "array", "items": _OPEN},
)  # fmt: skip


def _check_network_policy(obj: Obj, _old: Obj | None) -> list[Issue]:
    issues = []
    for index, kind in enumerate(_spec(obj).get("policyTypes") or []):
        if kind not in POLICY_TYPES:
            issues.append(Issue("FieldValueNotSupported", f"spec.policyTypes[{index}]", kind, _supported(POLICY_TYPES)))
    return issues


def _prepare_network_policy(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict):
        spec.setdefault("podSelector", {})
        if not spec.get("policyTypes"):
            spec["policyTypes"] = ["Ingress", *(["Egress"] if spec.get("egress") else [])]


# ---- PersistentVolumeClaim -------------------------------------------------------------------------------------

ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
_CLAIM_SPEC: Obj = _obj(
    accessModes=_STRINGS, selector=_SELECTOR, storageClassName=_STR, volumeMode=_STR, volumeName=_STR,
    resources=_obj(requests={"type": "object", "additionalProperties": _INT_OR_STRING},
                   limits={"type": "object", "additionalProperties": _INT_OR_STRING}),
    dataSource=_OPEN, dataSourceRef=_OPEN, volumeAttributesClassName=_STR,
)  # fmt: skip


def _check_claim(obj: Obj, old: Obj | None) -> list[Issue]:
    spec = _spec(obj)
    modes = spec.get("accessModes") or []
    issues = []
    if not modes:
        issues.append(Issue("FieldValueRequired", "spec.accessModes", detail="at least 1 access mode is required"))
    for mode in modes:
        if mode not in ACCESS_MODES:
            issues.append(Issue("FieldValueNotSupported", "spec.accessModes", mode, _supported(ACCESS_MODES)))
    if _dig(spec, ("resources", "requests", "storage")) is None:
        issues.append(Issue("FieldValueRequired", "spec.resources[storage]"))
    if old is not None:
        mine, theirs = dict(spec), dict(_spec(old))
        for side in (mine, theirs):
            side.pop("resources", None)
            side.pop("volumeName", None)
        if mine != theirs:
            detail = "spec is immutable after creation except resources.requests and volumeAttributesClassName"
            issues.append(Issue("FieldValueForbidden", "spec", detail=detail))
    return issues


def _prepare_claim(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("volumeMode", "Filesystem")
    obj.setdefault("status", {"phase": "Pending"})


# ---- the kinds -------------------------------------------------------------------------------------------------

KINDS: tuple[Kind, ...] = (
    Kind("", "v1", "services", "Service", True, _root(spec=_SERVICE_SPEC, status=_OPEN), ("status",),
         name_check="label", prepare=_prepare_service, check=_check_service),
    Kind("", "v1", "serviceaccounts", "ServiceAccount", True,
         _root(secrets={"type": "array", "items": _OPEN}, imagePullSecrets={"type": "array", "items": _OPEN},
               automountServiceAccountToken=_BOOL)),
    Kind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, _root(spec=_CLAIM_SPEC, status=_OPEN),
         ("status",), prepare=_prepare_claim, check=_check_claim),
    Kind("rbac.authorization.k8s.io", "v1", "roles", "Role", True, _root(rules=_RULES), name_check="path",
         check=_check_role),
    Kind("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False,
         _root(rules=_RULES, aggregationRule=_OPEN), name_check="path", check=_check_cluster_role),
    Kind("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True,
         _root(roleRef=_ROLE_REF, subjects={"type": "array", "items": _SUBJECT}), name_check="path",
         prepare=_prepare_binding, check=_check_role_binding),
    Kind("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False,
         _root(roleRef=_ROLE_REF, subjects={"type": "array", "items": _SUBJECT}), name_check="path",
         prepare=_prepare_binding, check=_check_cluster_role_binding),
    Kind("apps", "v1", "deployments", "Deployment", True, _root(spec=_DEPLOYMENT_SPEC, status=_OPEN),
         ("status",), prepare=_prepare_deployment, check=_workload_issues),
    Kind("apps", "v1", "daemonsets", "DaemonSet", True, _root(spec=_DAEMON_SET_SPEC, status=_OPEN), ("status",),
         prepare=_prepare_daemon_set, check=_workload_issues),
    Kind("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, _root(spec=_NETWORK_POLICY_SPEC),
         prepare=_prepare_network_policy, check=_check_network_policy),
)  # fmt: skip

SHORT_NAMES = {"services": ("svc",), "serviceaccounts": ("sa",), "persistentvolumeclaims": ("pvc",),
               "deployments.apps": ("deploy",), "daemonsets.apps": ("ds",),
               "networkpolicies.networking.k8s.io": ("netpol",)}  # fmt: skip


def resource_types() -> tuple[model.ResourceType, ...]:
    """The kinds above as served types (discovery, paths, storage)."""
    return tuple(
        model.ResourceType(
            kind.group, kind.version, kind.plural, kind.kind, kind.namespaced, "status" in kind.subresources,
            SHORT_NAMES.get(kind.key, ()), kind.subresources,
        )
        for kind in KINDS
    )  # fmt: skip

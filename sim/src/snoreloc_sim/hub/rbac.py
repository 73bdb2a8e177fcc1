"""Who may do what: the request's attributes, RBAC over Roles and ClusterRoles, and kube's 403.

Followed (kubernetes/kubernetes):
- `staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`, `NewRequestInfo`: the verb from the method
  (get/list/watch, create, update, patch, delete/deletecollection), the API group, resource, subresource,
  namespace and name; a list or watch with the field selector `metadata.name=X` is authorized as for name X.
- `plugin/pkg/auth/authorizer/rbac/rbac.go`, `RBACAuthorizer.Authorize` and `RuleAllows`, with
  `pkg/apis/rbac/v1/evaluation_helpers.go` (`VerbMatches`, `APIGroupMatches`, `ResourceMatches` with `*` and
  `*/<subresource>`, `ResourceNameMatches`: a rule with resourceNames never matches a request without a name,
  `NonResourceURLMatches` with a trailing `*`); `pkg/registry/rbac/validation/rule.go`, `VisitRulesFor` and
  `appliesToUser` (ClusterRoleBindings, then the RoleBindings of the request's namespace; User, Group and
  ServiceAccount subjects); a binding to a missing role adds `RBAC: ... not found` to the refusal's reason.
- `pkg/kubeapiserver/authorizer/config.go`: the `system:masters` group is allowed everything before RBAC.
- `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go`, `Forbidden`/`forbiddenMessage`,
  with `apimachinery/pkg/api/errors.NewForbidden`: the 403 Status `<resource>.<group> "<name>" is forbidden: User
  "<user>" cannot <verb> resource "<resource>[/<sub>]" in API group "<group>" in the namespace "<ns>"`.
- `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`: the default `system:discovery`,
  `system:basic-user` and `system:public-info-viewer` roles every authenticated user is bound to (the last one
  anonymous users too).
"""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from snoreloc_sim.hub.tokens import User
from snoreloc_sim.kube import messages, model

Obj = dict[str, Any]
RBAC_GROUP = "rbac.authorization.k8s.io"
PRIVILEGED_GROUP = "system:masters"
_METHOD_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete", "GET": "get"}
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})

BOOTSTRAP_CLUSTER_ROLES: tuple[Obj, ...] = (
    {
        "metadata": {"name": "system:discovery"},
        "rules": [
            {
                "verbs": ["get"],
                "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                                    "/openapi/*", "/readyz", "/version", "/version/"],
            }
        ],
    },
    {
        "metadata": {"name": "system:basic-user"},
        "rules": [
            {
                "verbs": ["create"],
                "apiGroups": ["authorization.k8s.io"],
                "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
            }
        ],
    },
    {
        "metadata": {"name": "system:public-info-viewer"},
        "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]}],
    },
    {"metadata": {"name": "cluster-admin"}, "rules": [
        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}, {"verbs": ["*"], "nonResourceURLs": ["*"]}]},
)  # fmt: skip
BOOTSTRAP_CLUSTER_ROLE_BINDINGS: tuple[Obj, ...] = tuple(
    {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": group} for group in groups],
    }
    for name, groups in (
        ("system:discovery", ("system:authenticated",)),
        ("system:basic-user", ("system:authenticated",)),
        ("system:public-info-viewer", ("system:authenticated", "system:unauthenticated")),
    )
)


@dataclass(frozen=True)
class Attributes:
    """What a request asks to do (kube's `authorizer.Attributes`)."""

    verb: str
    path: str
    resource_request: bool = False
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


def attributes(request: messages.Request) -> Attributes:
    """The request's attributes, as `NewRequestInfo` parses them."""
    parts = [urllib.parse.unquote(p) for p in request.path.strip("/").split("/") if p]
    if len(parts) >= 3 and parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        return Attributes(verb=request.method.lower(), path=request.path)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    name = rest[1] if len(rest) > 1 else ""
    verb = _verb(request, bool(name))
    if not name and verb in ("list", "watch"):
        name = _name_from_field_selector(request.query.get("fieldSelector", ""))
    subresource = rest[2] if len(rest) > 2 else ""
    return Attributes(verb, request.path, True, group, rest[0], subresource, namespace, name)


def _verb(request: messages.Request, named: bool) -> str:
    verb = _METHOD_VERBS.get(request.method, request.method.lower())
    if verb == "get" and not named:
        return "watch" if request.query.get("watch", "").lower() in ("true", "1") else "list"
    if verb == "delete" and not named:
        return "deletecollection"
    return verb


def _name_from_field_selector(selector: str) -> str:
    """X from `metadata.name=X` or `metadata.name==X` (`RequiresExactMatch`), else ""."""
    for part in selector.split(","):
        key, _, value = part.partition("=")
        if key.strip() == "metadata.name":
            return value.removeprefix("=").strip()
    return ""


def _matches(wanted: str, granted: list[str]) -> bool:
    return "*" in granted or wanted in granted


def _resource_matches(rule: Obj, attrs: Attributes) -> bool:
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    for granted in rule.get("resources") or []:
        if granted in ("*", combined):
            return True
        if attrs.subresource and granted == f"*/{attrs.subresource}":
            return True
    return False


def _url_matches(rule: Obj, path: str) -> bool:
    for granted in rule.get("nonResourceURLs") or []:
        if granted in ("*", path) or (granted.endswith("*") and path.startswith(granted[:-1])):
            return True
    return False


def rule_allows(rule: Obj, attrs: Attributes) -> bool:
    """`RuleAllows`."""
    if not _matches(attrs.verb, rule.get("verbs") or []):
        return False
    if not attrs.resource_request:
        return _url_matches(rule, attrs.path)
    names = rule.get("resourceNames") or []
    return (
        _matches(attrs.api_group, rule.get("apiGroups") or [])
        and _resource_matches(rule, attrs)
        and (not names or attrs.name in names)
    )


def _applies(subject: Obj, user: User, binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return bool(name == user.name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return user.name == f"system:serviceaccount:{namespace}:{name}"
    return False


_KINDS = {
    f"{plural}.{RBAC_GROUP}": plural for plural in ("roles", "clusterroles", "rolebindings", "clusterrolebindings")
}


class Authorizer:
    """RBAC over the hub's Roles, ClusterRoles and bindings, kept in an index that a store listener (`on_change`,
    subscribed before any is created) maintains, as kube-apiserver's RBAC authorizer reads its informers' caches
    rather than etcd on each request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._index: dict[str, dict[str, dict[str, Obj]]] = {plural: {} for plural in _KINDS.values()}  # by ns, name

    def on_change(self, rtype: model.ResourceType, event: str, old: Obj | None, new: Obj | None) -> None:
        plural = _KINDS.get(rtype.key)
        obj = new if new is not None else old
        if plural is None or obj is None:
            return
        meta = obj.get("metadata") or {}
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        with self._lock:
            objects = self._index[plural].setdefault(namespace, {})
            if new is None:
                objects.pop(name, None)
            else:
                objects[name] = new

    def authorize(self, user: User, attrs: Attributes) -> model.ApiError | None:
        """None when allowed, else the 403 to send."""
        if PRIVILEGED_GROUP in user.groups:
            return None
        errors: list[str] = []
        for rules in self._rules_for(user, attrs.namespace, errors):
            if any(rule_allows(rule, attrs) for rule in rules):
                return None
        return forbidden(user, attrs, _reason(errors))

    def rules_for(self, user: User, namespace: str) -> tuple[list[Obj], list[str]]:
        """Every rule granted to `user` in `namespace` ("" for cluster-wide only), and the resolution errors."""
        errors: list[str] = []
        rules = [rule for granted in self._rules_for(user, namespace, errors) for rule in granted]
        return rules, errors

    def role_rules(self, ref: Obj, namespace: str) -> tuple[list[Obj], list[str]]:
        """The rules of the role a binding in `namespace` refers to, and the error when it does not exist."""
        errors: list[str] = []
        return self._role(ref, namespace, errors), errors

    def _bindings(self, plural: str, namespace: str) -> list[Obj]:
        with self._lock:
            return list(self._index[plural].get(namespace, {}).values())

    def _rules_for(self, user: User, namespace: str, errors: list[str]) -> Iterator[list[Obj]]:
        for binding in self._bindings("clusterrolebindings", ""):
            if any(_applies(s, user, "") for s in binding.get("subjects") or []):
                yield self._role(binding.get("roleRef") or {}, "", errors)
        if not namespace:
            return
        for binding in self._bindings("rolebindings", namespace):
            if any(_applies(s, user, namespace) for s in binding.get("subjects") or []):
                yield self._role(binding.get("roleRef") or {}, namespace, errors)

    def _role(self, ref: Obj, namespace: str, errors: list[str]) -> list[Obj]:
        kind, name = ref.get("kind"), ref.get("name", "")
        cluster = kind == "ClusterRole"
        with self._lock:
            role = self._index["clusterroles" if cluster else "roles"].get("" if cluster else namespace, {}).get(name)
        if role is None:
            errors.append(f'{kind.lower() if kind else "role"}.{RBAC_GROUP} "{name}" not found')
            return []
        return list(role.get("rules") or [])


def _reason(errors: list[str]) -> str:
    """`RBAC: <aggregate>`: one error as it is, several in brackets (utilerrors.NewAggregate)."""
    if not errors:
        return ""
    return "RBAC: " + (errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")


def forbidden(user: User, attrs: Attributes, reason: str = "") -> model.ApiError:
    """kube's 403 for these attributes (`responsewriters.Forbidden` + `NewForbidden`)."""
    if not attrs.resource_request:
        message = f'User "{user.name}" cannot {attrs.verb} path "{attrs.path}"'
        return model.ApiError(403, "Forbidden", f"forbidden: {message}" + (f": {reason}" if reason else ""))
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    message = f'User "{user.name}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.api_group}" {where}'
    if reason:
        message += f": {reason}"
    qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
    subject = f'{qualified} "{attrs.name}"' if attrs.name else qualified
    details = {"name": attrs.name, "group": attrs.api_group, "kind": attrs.resource}
    return model.ApiError(403, "Forbidden", f"{subject} is forbidden: {message}", details=details)

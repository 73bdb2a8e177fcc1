"""RBAC's guard against privilege escalation: a user may only grant the permissions it already holds.

A controller that hands each site a Role and RoleBinding must itself hold what it grants (or be allowed the
`escalate` and `bind` verbs), or a real kube-apiserver refuses the write; so a controller's own RBAC manifest is
tested here as strictly as on a real hub. Followed (kubernetes/kubernetes):
- `pkg/registry/rbac/role/policybased/storage.go` (and `clusterrole/...`): a Role is written when the user is
  privileged (`rbacregistry.EscalationAllowed`: `system:masters`), may `escalate` roles
  (`RoleEscalationAuthorized`), the update keeps the rules, or every rule is covered by the user's own rules;
- `pkg/registry/rbac/rolebinding/policybased/storage.go` (and `clusterrolebinding/...`): a binding is written when
  the user is privileged, may `bind` the referenced role (`BindingAuthorized`), or holds every rule of that role;
  `roleRef` cannot change (`pkg/apis/rbac/validation/validation.go`, `ValidateRoleBindingUpdate`);
- `pkg/registry/rbac/validation/rule.go`, `ConfirmNoEscalation`, and `policy_comparator.go`, `Covers`: each rule
  is broken down to one verb, group, resource and name, and each piece must be covered by some rule the user has
  (`*` and `*/<subresource>` resources, resourceNames, non-resource URLs); the refusal lists what is missing,
  compacted by verb (`CompactRules`) and printed as `rbacv1helpers.CompactString`.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from typing import Any

from snoreloc_sim.hub import rbac
from snoreloc_sim.hub.tokens import User
from snoreloc_sim.kube import model

Obj = dict[str, Any]
ROLES = {f"roles.{rbac.RBAC_GROUP}": "roles", f"clusterroles.{rbac.RBAC_GROUP}": "clusterroles"}
BINDINGS = {
    f"rolebindings.{rbac.RBAC_GROUP}": "rolebindings",
    f"clusterrolebindings.{rbac.RBAC_GROUP}": "clusterrolebindings",
}


class Caller(threading.local):
    """Who the request being handled on this thread comes from (admission hooks see no request)."""

    user: User | None = None


def _breakdown(rule: Obj) -> Iterator[Obj]:
    """`BreakdownRule`: one rule per (verb, group, resource, name), or per (verb, URL)."""
    verbs = rule.get("verbs") or []
    for url, verb in itertools.product(rule.get("nonResourceURLs") or [], verbs):
        yield {"nonResourceURLs": [url], "verbs": [verb]}
    names = rule.get("resourceNames") or [None]
    groups, resources = rule.get("apiGroups") or [], rule.get("resources") or []
    for group, resource, verb, name in itertools.product(groups, resources, verbs, names):
        piece: Obj = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
        if name is not None:
            piece["resourceNames"] = [name]
        yield piece


def _has(granted: list[str], wanted: str) -> bool:
    return "*" in granted or wanted in granted


def _resource_covered(granted: list[str], wanted: str) -> bool:
    if _has(granted, wanted):
        return True
    base, _, sub = wanted.partition("/")
    return bool(sub) and (f"*/{sub}" in granted or f"{base}/*" in granted)


def _url_covered(granted: list[str], wanted: str) -> bool:
    return any(g in ("*", wanted) or (g.endswith("*") and wanted.startswith(g[:-1])) for g in granted)


def _covers(owner: Obj, piece: Obj) -> bool:
    """`ruleCovers` for one broken-down piece."""
    if not _has(owner.get("verbs") or [], piece["verbs"][0]):
        return False
    if "nonResourceURLs" in piece:
        return _url_covered(owner.get("nonResourceURLs") or [], piece["nonResourceURLs"][0])
    names = owner.get("resourceNames") or []
    wanted_names = piece.get("resourceNames") or []
    return (
        _has(owner.get("apiGroups") or [], piece["apiGroups"][0])
        and _resource_covered(owner.get("resources") or [], piece["resources"][0])
        and (not names or (bool(wanted_names) and wanted_names[0] in names))
    )


def missing(owned: list[Obj], wanted: list[Obj]) -> list[Obj]:
    """The broken-down pieces of `wanted` that no rule in `owned` covers."""
    return [piece for rule in wanted for piece in _breakdown(rule) if not any(_covers(o, piece) for o in owned)]


def _compact(pieces: list[Obj]) -> list[Obj]:
    """`CompactRules`: pieces that differ only by verb become one rule."""
    merged: dict[str, Obj] = {}
    for piece in pieces:
        key = json.dumps({k: v for k, v in piece.items() if k != "verbs"}, sort_keys=True)
        found = merged.setdefault(key, {**piece, "verbs": []})
        if piece["verbs"][0] not in found["verbs"]:
            found["verbs"].append(piece["verbs"][0])
    return list(merged.values())


def _quoted(values: list[str]) -> str:
    """Go's %q of a []string: `["a" "b"]`."""
    return "[" + " ".join(json.dumps(v) for v in values) + "]"


def compact_string(rule: Obj) -> str:
    """`rbacv1helpers.CompactString`."""
    fields = (
        ("APIGroups", "apiGroups"),
        ("Resources", "resources"),
        ("NonResourceURLs", "nonResourceURLs"),
        ("ResourceNames", "resourceNames"),
        ("Verbs", "verbs"),
    )
    parts = [f"{label}:{_quoted(rule[key])}" for label, key in fields if rule.get(key)]
    return "{" + ", ".join(parts) + "}"


class Guard:
    """The admission hook that refuses Roles and bindings granting more than their writer holds."""

    def __init__(self, authorizer: rbac.Authorizer, caller: Caller) -> None:
        self._authorizer = authorizer
        self._caller = caller

    def admit(self, rtype: model.ResourceType, new: Obj, old: Obj | None) -> None:
        user = self._caller.user
        if rtype.key in BINDINGS and old is not None and new.get("roleRef") != old.get("roleRef"):
            raise _invalid_role_ref(rtype, new)
        if user is None or rbac.PRIVILEGED_GROUP in user.groups:
            return
        meta = new.get("metadata") or {}
        namespace = meta.get("namespace", "") if rtype.namespaced else ""
        if rtype.key in ROLES:
            self._check_role(user, rtype, new, old, namespace)
        elif rtype.key in BINDINGS and old is None:
            self._check_binding(user, rtype, new, namespace)

    def _allowed(self, user: User, verb: str, resource: str, namespace: str, name: str) -> bool:
        attrs = rbac.Attributes(verb, "", True, rbac.RBAC_GROUP, resource, "", namespace, name)
        return self._authorizer.authorize(user, attrs) is None

    def _check_role(self, user: User, rtype: model.ResourceType, new: Obj, old: Obj | None, namespace: str) -> None:
        name = (new.get("metadata") or {}).get("name", "")
        if old is not None and old.get("rules") == new.get("rules"):
            return
        if self._allowed(user, "escalate", ROLES[rtype.key], namespace, name):
            return
        self._confirm(user, list(new.get("rules") or []), namespace, rtype, name)

    def _check_binding(self, user: User, rtype: model.ResourceType, new: Obj, namespace: str) -> None:
        ref = new.get("roleRef") or {}
        plural = "clusterroles" if ref.get("kind") == "ClusterRole" else "roles"
        if self._allowed(user, "bind", plural, namespace, ref.get("name", "")):
            return
        rules, errors = self._authorizer.role_rules(ref, namespace)
        name = (new.get("metadata") or {}).get("name", "")
        if errors:
            raise _forbidden(rtype, name, errors[0])
        self._confirm(user, rules, namespace, rtype, name)

    def _confirm(self, user: User, wanted: list[Obj], namespace: str, rtype: model.ResourceType, name: str) -> None:
        """`ConfirmNoEscalation`."""
        owned, errors = self._authorizer.rules_for(user, namespace)
        lacking = missing(owned, wanted)
        if not lacking:
            return
        described = sorted(compact_string(rule) for rule in _compact(lacking))
        message = (
            f'user "{user.name}" (groups={_quoted(list(user.groups))}) is attempting to grant RBAC permissions not '
            "currently held:\n" + "\n".join(described)
        )
        if errors:
            message += f"; resolution errors: [{' '.join(errors)}]"
        raise _forbidden(rtype, name, message)


def _forbidden(rtype: model.ResourceType, name: str, message: str) -> model.ApiError:
    details = {"name": name, "group": rtype.group, "kind": rtype.plural}
    return model.ApiError(403, "Forbidden", f'{rtype.key} "{name}" is forbidden: {message}', details=details)


def _invalid_role_ref(rtype: model.ResourceType, new: Obj) -> model.ApiError:
    """422 as `ValidateRoleBindingUpdate` words it (the value printed as Go's %#v of the internal RoleRef)."""
    name = (new.get("metadata") or {}).get("name", "")
    ref = new.get("roleRef") or {}
    shown = f"rbac.RoleRef{{APIGroup:{json.dumps(ref.get('apiGroup', ''))}, Kind:{json.dumps(ref.get('kind', ''))}, "
    shown += f"Name:{json.dumps(ref.get('name', ''))}}}"
    body = f"Invalid value: {shown}: cannot change roleRef"
    cause = {"reason": "FieldValueInvalid", "message": body, "field": "roleRef"}
    details = {"name": name, "group": rtype.group, "kind": rtype.kind}
    message = f'{rtype.kind}.{rtype.group} "{name}" is invalid: roleRef: {body}'
    return model.ApiError(422, "Invalid", message, causes=[cause], details=details)

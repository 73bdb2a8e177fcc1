"""A controller may grant through Roles and RoleBindings only what it holds itself, as on a real hub."""

from __future__ import annotations

from typing import Any

import kubernetes
import pytest

from .conftest import GROUP, PLURAL, Call

NS = "fleet"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
RBAC_GROUP = "rbac.authorization.k8s.io"
USER = f"system:serviceaccount:{NS}:controller"


def _role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "rules": rules}


def _binding(name: str, kind: str, role: str, account: str = "site-w1") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": NS}],
    }


SITE_STATUS = {
    "apiGroups": [GROUP],
    "resources": [f"{PLURAL}/status"],
    "resourceNames": ["w1"],
    "verbs": ["get", "patch"],
}


@pytest.fixture
def controller(widgets: kubernetes.client.CustomObjectsApi, raw: Call) -> str:
    """A controller's token: it manages widgets (and their status), Roles and RoleBindings in its namespace."""
    raw("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
    raw("POST", f"/api/v1/namespaces/{NS}/serviceaccounts", {"metadata": {"name": "controller"}})
    rules = [
        {"apiGroups": [GROUP], "resources": [PLURAL, f"{PLURAL}/status"], "verbs": ["get", "list", "watch", "patch"]},
        {
            "apiGroups": [RBAC_GROUP],
            "resources": ["roles", "rolebindings"],
            "verbs": ["create", "get", "update", "patch"],
        },
    ]
    assert raw("POST", f"{RBAC}/clusterroles", _role("widget-controller", rules)).code == 201
    binding = _binding("widget-controller", "ClusterRole", "widget-controller", "controller")
    assert raw("POST", f"{RBAC}/clusterrolebindings", binding).code == 201
    reply = raw("POST", f"/api/v1/namespaces/{NS}/serviceaccounts/controller/token", {"spec": {}})
    return str(reply.body["status"]["token"])


def test_a_role_within_the_writers_own_rights_is_created_and_bound(controller: str, raw: Call) -> None:
    assert raw("POST", f"{RBAC}/namespaces/{NS}/roles", _role("site-w1", [SITE_STATUS]), token=controller).code == 201
    bound = raw(
        "POST", f"{RBAC}/namespaces/{NS}/rolebindings", _binding("site-w1", "Role", "site-w1"), token=controller
    )
    assert bound.code == 201


def test_a_role_granting_more_is_refused_with_what_is_missing(controller: str, raw: Call) -> None:
    wider = {"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get", "delete", "deletecollection"]}
    refused = raw("POST", f"{RBAC}/namespaces/{NS}/roles", _role("too-much", [SITE_STATUS, wider]), token=controller)
    assert refused.code == 403 and refused.body["reason"] == "Forbidden"
    assert refused.body["message"] == (
        f'roles.{RBAC_GROUP} "too-much" is forbidden: user "{USER}" (groups=["system:serviceaccounts" '
        f'"system:serviceaccounts:{NS}" "system:authenticated"]) is attempting to grant RBAC permissions not '
        f'currently held:\n{{APIGroups:["{GROUP}"], Resources:["{PLURAL}"], Verbs:["delete" "deletecollection"]}}'
    )


def test_binding_a_role_the_writer_does_not_hold_is_refused_unless_it_may_bind_it(controller: str, raw: Call) -> None:
    path = f"{RBAC}/namespaces/{NS}/rolebindings"
    refused = raw("POST", path, _binding("admin", "ClusterRole", "cluster-admin"), token=controller)
    assert refused.code == 403
    assert "is attempting to grant RBAC permissions not currently held" in refused.body["message"]
    may_bind = {
        "apiGroups": [RBAC_GROUP],
        "resources": ["clusterroles"],
        "resourceNames": ["view-widgets"],
        "verbs": ["bind"],
    }
    raw("POST", f"{RBAC}/namespaces/{NS}/roles", _role("may-bind", [may_bind]))
    raw("POST", path, _binding("controller-may-bind", "Role", "may-bind", "controller"))
    viewer = _role("view-widgets", [{"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["delete"]}])
    raw("POST", f"{RBAC}/clusterroles", viewer)
    assert raw("POST", path, _binding("viewers", "ClusterRole", "view-widgets"), token=controller).code == 201


def test_the_escalate_verb_lets_a_writer_grant_more(controller: str, raw: Call) -> None:
    escalate = {"apiGroups": [RBAC_GROUP], "resources": ["roles"], "verbs": ["escalate"]}
    raw("POST", f"{RBAC}/namespaces/{NS}/roles", _role("may-escalate", [escalate]))
    raw("POST", f"{RBAC}/namespaces/{NS}/rolebindings", _binding("may-escalate", "Role", "may-escalate", "controller"))
    wider = {"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["delete"]}
    assert raw("POST", f"{RBAC}/namespaces/{NS}/roles", _role("wider", [wider]), token=controller).code == 201


def test_a_bindings_role_ref_cannot_change(controller: str, raw: Call) -> None:
    raw("POST", f"{RBAC}/namespaces/{NS}/roles", _role("site-w1", [SITE_STATUS]))
    raw("POST", f"{RBAC}/namespaces/{NS}/rolebindings", _binding("site-w1", "Role", "site-w1"))
    patch = {"roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "other"}}
    changed = raw(
        "PATCH", f"{RBAC}/namespaces/{NS}/rolebindings/site-w1", patch, content_type="application/merge-patch+json"
    )
    assert changed.code == 422
    shown = f'rbac.RoleRef{{APIGroup:"{RBAC_GROUP}", Kind:"Role", Name:"other"}}'
    assert changed.body["message"].endswith(f"roleRef: Invalid value: {shown}: cannot change roleRef")

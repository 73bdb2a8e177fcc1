"""ServiceAccount tokens from TokenRequest, bearer authentication, and RBAC with resourceNames and subresources."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import kubernetes
import pytest
from kubernetes.client.rest import ApiException

from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import GROUP, PLURAL, VERSION, Call, client_for, widget

NS = "fleet"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
TOKEN = f"/api/v1/namespaces/{NS}/serviceaccounts/reporter/token"
W1_STATUS = f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/{PLURAL}/w1/status"
W2_STATUS = f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/{PLURAL}/w2/status"
USER = f"system:serviceaccount:{NS}:reporter"


@pytest.fixture
def scoped(widgets: kubernetes.client.CustomObjectsApi, raw: Call) -> dict[str, Any]:
    """A namespace with widgets w1 and w2, a ServiceAccount allowed get/patch of w1's status only, and a Secret
    its token is bound to."""
    assert raw("POST", "/api/v1/namespaces", {"metadata": {"name": NS}}).code == 201
    for name in ("w1", "w2"):
        widgets.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, widget(name))
    assert raw("POST", f"/api/v1/namespaces/{NS}/serviceaccounts", {"metadata": {"name": "reporter"}}).code == 201
    role = {
        "metadata": {"name": "w1-status"},
        "rules": [
            {
                "apiGroups": [GROUP],
                "resources": [f"{PLURAL}/status"],
                "resourceNames": ["w1"],
                "verbs": ["get", "patch"],
            }
        ],
    }
    assert raw("POST", f"{RBAC}/namespaces/{NS}/roles", role).code == 201
    binding = {
        "metadata": {"name": "w1-status"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "w1-status"},
        "subjects": [{"kind": "ServiceAccount", "name": "reporter", "namespace": NS}],
    }
    assert raw("POST", f"{RBAC}/namespaces/{NS}/rolebindings", binding).code == 201
    secret = raw("POST", f"/api/v1/namespaces/{NS}/secrets", {"metadata": {"name": "w1-binding"}}).body
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {
            "expirationSeconds": 3600,
            "boundObjectRef": {
                "apiVersion": "v1",
                "kind": "Secret",
                "name": "w1-binding",
                "uid": secret["metadata"]["uid"],
            },
        },
    }
    reply = raw("POST", TOKEN, request)
    assert reply.code == 201, reply.body
    return reply.body


def test_a_token_request_answers_a_token_with_its_expiry(scoped: dict[str, Any]) -> None:
    assert scoped["kind"] == "TokenRequest" and scoped["status"]["token"]
    expires = datetime.strptime(scoped["status"]["expirationTimestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert 3590 <= (expires - datetime.now(UTC)).total_seconds() <= 3600
    assert scoped["spec"]["audiences"] == ["https://kubernetes.default.svc.cluster.local"]


def test_the_token_may_patch_only_its_own_objects_status(scoped: dict[str, Any], raw: Call) -> None:
    token = scoped["status"]["token"]
    patch = {"status": {"phase": "Reported"}}
    allowed = raw("PATCH", W1_STATUS, patch, token=token, content_type="application/merge-patch+json")
    assert allowed.code == 200 and allowed.body["status"]["phase"] == "Reported"
    refused = raw("PATCH", W2_STATUS, patch, token=token, content_type="application/merge-patch+json")
    assert refused.code == 403
    assert refused.body["reason"] == "Forbidden"
    assert refused.body["message"] == (
        f'{PLURAL}.{GROUP} "w2" is forbidden: User "{USER}" cannot patch resource "{PLURAL}/status" '
        f'in API group "{GROUP}" in the namespace "{NS}"'
    )
    assert refused.body["details"] == {"name": "w2", "group": GROUP, "kind": PLURAL}
    main = raw("PATCH", W1_STATUS.removesuffix("/status"), {"spec": {"size": 9}}, token=token,
               content_type="application/merge-patch+json")  # fmt: skip
    assert main.code == 403
    listed = raw("GET", f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/{PLURAL}", token=token)
    assert listed.code == 403 and "cannot list resource" in listed.body["message"]
    assert raw("GET", f"/apis/{GROUP}/{VERSION}", token=token).code == 200  # discovery: system:discovery


def test_the_official_client_with_the_token_gets_403_as_an_api_exception(
    hub_sim: HubSimulator, scoped: dict[str, Any]
) -> None:
    objects = kubernetes.client.CustomObjectsApi(client_for(hub_sim, scoped["status"]["token"]))
    assert objects.get_namespaced_custom_object_status(GROUP, VERSION, NS, PLURAL, "w1")["metadata"]["name"] == "w1"
    with pytest.raises(ApiException) as refused:
        objects.get_namespaced_custom_object_status(GROUP, VERSION, NS, PLURAL, "w2")
    assert refused.value.status == 403


def test_deleting_the_bound_secret_revokes_the_token(scoped: dict[str, Any], raw: Call) -> None:
    token = scoped["status"]["token"]
    assert raw("GET", W1_STATUS, token=token).code == 200
    assert raw("DELETE", f"/api/v1/namespaces/{NS}/secrets/w1-binding").code == 200
    refused = raw("GET", W1_STATUS, token=token)
    assert refused.code == 401 and refused.body["message"] == "Unauthorized"
    raw("POST", f"/api/v1/namespaces/{NS}/secrets", {"metadata": {"name": "w1-binding"}})
    assert raw("GET", W1_STATUS, token=token).code == 401  # a new Secret of that name has another UID


def test_deleting_the_service_account_revokes_the_token(scoped: dict[str, Any], raw: Call) -> None:
    assert raw("DELETE", f"/api/v1/namespaces/{NS}/serviceaccounts/reporter").code == 200
    assert raw("GET", W1_STATUS, token=scoped["status"]["token"]).code == 401


def test_an_expired_token_is_refused(hub_sim: HubSimulator, scoped: dict[str, Any], raw: Call) -> None:
    hub_sim.advance_clock(3599)
    assert raw("GET", W1_STATUS, token=scoped["status"]["token"]).code == 200
    hub_sim.advance_clock(2)
    assert raw("GET", W1_STATUS, token=scoped["status"]["token"]).code == 401


def test_token_requests_are_checked(scoped: dict[str, Any], raw: Call) -> None:
    short = raw("POST", TOKEN, {"spec": {"expirationSeconds": 60}})
    assert short.code == 422
    assert short.body["message"] == (
        'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: '
        "may not specify a duration less than 10 minutes"
    )
    ref = {"apiVersion": "v1", "kind": "Secret", "name": "w1-binding", "uid": "stale"}
    stale = raw("POST", TOKEN, {"spec": {"boundObjectRef": ref}})
    assert stale.code == 409 and "does not match the UID in record" in stale.body["message"]
    assert raw("POST", f"/api/v1/namespaces/{NS}/serviceaccounts/nobody/token", {"spec": {}}).code == 404
    other = raw("POST", TOKEN, {"spec": {"audiences": ["vault"]}}).body["status"]["token"]
    assert raw("GET", W1_STATUS, token=other).code == 401  # not for the API server's audience


def test_cluster_roles_group_subjects_and_a_missing_role(scoped: dict[str, Any], raw: Call) -> None:
    token = scoped["status"]["token"]
    reader = {
        "metadata": {"name": "widget-reader"},
        "rules": [{"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["list"]}],
    }
    assert raw("POST", f"{RBAC}/clusterroles", reader).code == 201
    binding = {
        "metadata": {"name": "all-accounts-read"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "widget-reader"},
        "subjects": [{"kind": "Group", "name": f"system:serviceaccounts:{NS}"}],
    }
    assert raw("POST", f"{RBAC}/clusterrolebindings", binding).code == 201
    assert raw("GET", f"/apis/{GROUP}/{VERSION}/{PLURAL}", token=token).code == 200
    assert raw("GET", f"/api/v1/namespaces/{NS}/secrets", token=token).code == 403
    dangling = {
        "metadata": {"name": "dangling"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "gone"},
        "subjects": [{"kind": "ServiceAccount", "name": "reporter"}],
    }
    assert raw("POST", f"{RBAC}/namespaces/{NS}/rolebindings", dangling).code == 201
    refused = raw("GET", f"/api/v1/namespaces/{NS}/secrets", token=token)
    assert refused.body["message"].endswith(': RBAC: role.rbac.authorization.k8s.io "gone" not found')


def test_a_name_field_selector_lets_a_named_rule_list_and_watch(scoped: dict[str, Any], raw: Call) -> None:
    token = scoped["status"]["token"]
    rule = {"apiGroups": [GROUP], "resources": [PLURAL], "resourceNames": ["w1"], "verbs": ["list", "watch"]}
    named = {"metadata": {"name": "w1-read"}, "rules": [rule]}
    raw("POST", f"{RBAC}/namespaces/{NS}/roles", named)
    binding = {
        "metadata": {"name": "w1-read"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "w1-read"},
        "subjects": [{"kind": "ServiceAccount", "name": "reporter", "namespace": NS}],
    }
    raw("POST", f"{RBAC}/namespaces/{NS}/rolebindings", binding)
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/{PLURAL}"
    assert raw("GET", f"{path}?fieldSelector=metadata.name%3Dw1", token=token).code == 200
    assert raw("GET", f"{path}?fieldSelector=metadata.name%3Dw2", token=token).code == 403
    assert raw("GET", path, token=token).code == 403


def test_self_subject_access_reviews_answer_for_the_caller(scoped: dict[str, Any], raw: Call) -> None:
    def review(name: str) -> bool:
        attrs = {
            "group": GROUP,
            "resource": PLURAL,
            "subresource": "status",
            "verb": "patch",
            "namespace": NS,
            "name": name,
        }
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attrs},
        }
        reply = raw(
            "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body, token=scoped["status"]["token"]
        )
        assert reply.code == 201
        return bool(reply.body["status"]["allowed"])

    assert review("w1") is True
    assert review("w2") is False

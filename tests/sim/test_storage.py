"""Storage semantics of the simulated API server, through the official client: versions, conflicts, selectors,
the three patch dialects, the status and approval subresources, delete."""

from __future__ import annotations

import base64
import json
import time

import kubernetes
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes.client import exceptions

from snoreloc_sim.kube import model, patch
from snoreloc_sim.kube.api import selectors

from .conftest import Call

# The simulator's store and patch module, partly without HTTP; see test_real_answers.py for the answers checked
# against a real cluster too.
pytestmark = pytest.mark.simonly

CO = ("config.openshift.io", "v1", "clusteroperators")
JSON_PATCH = "application/json-patch+json"


def _status(error: exceptions.ApiException) -> dict:
    return json.loads(error.body)


def _configmap(name: str, labels: dict | None = None, **data: str) -> dict:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": data}


@pytest.fixture
def core(kube: kubernetes.client.ApiClient) -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(kube)


@pytest.fixture
def custom(kube: kubernetes.client.ApiClient) -> kubernetes.client.CustomObjectsApi:
    return kubernetes.client.CustomObjectsApi(kube)


def _operator(name: str) -> dict:
    return {"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator", "metadata": {"name": name}, "spec": {}}


def _condition(kind: str, status: str) -> dict:
    return {"type": kind, "status": status, "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "AsExpected"}


# identity and versions


def test_create_sets_uid_timestamp_and_a_global_monotonic_resource_version(core: kubernetes.client.CoreV1Api) -> None:
    first = core.create_namespaced_config_map("default", _configmap("one"))
    second = core.create_namespaced_config_map("openshift-config", _configmap("two"))
    assert first.metadata.uid and first.metadata.uid != second.metadata.uid
    assert first.metadata.creation_timestamp is not None
    assert int(second.metadata.resource_version) > int(first.metadata.resource_version)
    listed = core.list_namespaced_config_map("default")
    assert int(listed.metadata.resource_version) >= int(second.metadata.resource_version)


def test_stale_resource_version_is_409_conflict(core: kubernetes.client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map("default", _configmap("racy", a="1"))
    core.patch_namespaced_config_map("racy", "default", {"data": {"a": "2"}})
    created.data = {"a": "3"}
    with pytest.raises(exceptions.ApiException) as caught:
        core.replace_namespaced_config_map("racy", "default", created)
    assert caught.value.status == 409
    assert _status(caught.value)["reason"] == "Conflict"
    assert core.read_namespaced_config_map("racy", "default").data == {"a": "2"}


def test_custom_resource_update_needs_a_resource_version(custom: kubernetes.client.CustomObjectsApi) -> None:
    custom.create_cluster_custom_object(*CO, _operator("needs-rv"))
    body = _operator("needs-rv")
    with pytest.raises(exceptions.ApiException) as caught:
        custom.replace_cluster_custom_object(*CO, "needs-rv", body)
    assert caught.value.status == 422
    assert "metadata.resourceVersion" in _status(caught.value)["message"]


def test_no_op_update_keeps_the_resource_version(core: kubernetes.client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map("default", _configmap("same", a="1"))
    replaced = core.replace_namespaced_config_map("same", "default", created)
    patched = core.patch_namespaced_config_map("same", "default", {"data": {"a": "1"}})
    assert replaced.metadata.resource_version == created.metadata.resource_version
    assert patched.metadata.resource_version == created.metadata.resource_version


def test_generation_moves_on_spec_changes_only(custom: kubernetes.client.CustomObjectsApi) -> None:
    custom.create_cluster_custom_object(
        "config.openshift.io", "v1", "proxies", {"metadata": {"name": "gen"}, "spec": {}}
    )
    args = ("config.openshift.io", "v1", "proxies", "gen")
    labelled = custom.patch_cluster_custom_object(*args, {"metadata": {"labels": {"x": "y"}}})
    assert labelled["metadata"]["generation"] == 1
    changed = custom.patch_cluster_custom_object(*args, {"spec": {"noProxy": "example.com"}})
    assert changed["metadata"]["generation"] == 2
    status = custom.patch_cluster_custom_object_status(*args, {"status": {"httpProxy": "http://p:3128"}})
    assert status["metadata"]["generation"] == 2
    assert int(status["metadata"]["resourceVersion"]) > int(changed["metadata"]["resourceVersion"])


# selectors and lists


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("tier=web", {"a", "b"}),
        ("tier==web", {"a", "b"}),
        ("tier!=web", {"c", "d"}),
        ("tier", {"a", "b", "c"}),
        ("!tier", {"d"}),
        ("tier in (web, db)", {"a", "b", "c"}),
        ("tier notin (web)", {"c", "d"}),
        ("tier=web,env=prod", {"a"}),
    ],
)
def test_label_selectors(core: kubernetes.client.CoreV1Api, selector: str, expected: set[str]) -> None:
    labels = {"a": {"tier": "web", "env": "prod"}, "b": {"tier": "web"}, "c": {"tier": "db"}, "d": {}}
    core.create_namespace({"metadata": {"name": "sel"}})
    for name, value in labels.items():
        core.create_namespaced_config_map("sel", _configmap(name, value))
    found = core.list_namespaced_config_map("sel", label_selector=selector).items
    assert {item.metadata.name for item in found} == expected


def test_field_selectors(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", _configmap("picked"))
    core.create_namespaced_config_map("openshift-config", _configmap("picked"))
    by_name = core.list_config_map_for_all_namespaces(field_selector="metadata.name=picked").items
    assert {item.metadata.namespace for item in by_name} == {"default", "openshift-config"}
    both = "metadata.name==picked,metadata.namespace!=default"
    assert [i.metadata.namespace for i in core.list_config_map_for_all_namespaces(field_selector=both).items] == [
        "openshift-config"
    ]
    with pytest.raises(exceptions.ApiException) as caught:
        core.list_namespaced_config_map("default", field_selector="data.a=1")
    assert caught.value.status == 400


def test_list_pages_with_limit_and_continue(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "paged"}})
    for index in range(5):
        core.create_namespaced_config_map("paged", _configmap(f"cm-{index}"))
    first = core.list_namespaced_config_map("paged", limit=2)
    names = [item.metadata.name for item in first.items]
    token = first.metadata._continue
    while token:
        page = core.list_namespaced_config_map("paged", limit=2, _continue=token)
        names += [item.metadata.name for item in page.items]
        token = page.metadata._continue
    assert names == [f"cm-{index}" for index in range(5)]


def test_list_in_a_missing_namespace_is_empty(core: kubernetes.client.CoreV1Api) -> None:
    assert core.list_namespaced_config_map("nowhere").items == []


# patches


def test_merge_patch_merges_maps_and_deletes_with_null(custom: kubernetes.client.CustomObjectsApi) -> None:
    args = ("config.openshift.io", "v1", "proxies")
    custom.create_cluster_custom_object(
        *args, {"metadata": {"name": "merge"}, "spec": {"noProxy": "a", "httpProxy": "http://h"}}
    )
    patched = custom.patch_cluster_custom_object(*args, "merge", {"spec": {"noProxy": None, "httpsProxy": "http://s"}})
    assert patched["spec"] == {"httpProxy": "http://h", "httpsProxy": "http://s"}


def test_json_patch_applies_and_a_failed_test_is_422(custom: kubernetes.client.CustomObjectsApi) -> None:
    args = ("config.openshift.io", "v1", "proxies")
    custom.create_cluster_custom_object(*args, {"metadata": {"name": "jp"}, "spec": {"noProxy": "a"}})
    ops = [
        {"op": "test", "path": "/spec/noProxy", "value": "a"},
        {"op": "replace", "path": "/spec/noProxy", "value": "b"},
    ]
    patched = custom.patch_cluster_custom_object(*args, "jp", ops, _content_type=JSON_PATCH)
    assert patched["spec"]["noProxy"] == "b"
    failing = [{"op": "test", "path": "/spec/noProxy", "value": "a"}, {"op": "remove", "path": "/spec/noProxy"}]
    with pytest.raises(exceptions.ApiException) as caught:
        custom.patch_cluster_custom_object(*args, "jp", failing, _content_type=JSON_PATCH)
    assert caught.value.status == 422
    assert custom.get_cluster_custom_object(*args, "jp")["spec"]["noProxy"] == "b"


@pytest.mark.parametrize(
    ("ops", "code"),
    [
        ([{"op": "remove", "path": "/spec/absent"}], 422),
        ([{"op": "add", "path": "/spec/deep/er", "value": 1}], 422),
        ([{"op": "frobnicate", "path": "/spec"}], 422),  # evanphx/json-patch: "Unexpected kind", answered 422
        ({"op": "add"}, 400),
    ],
)
def test_json_patch_refusals(raw: Call, ops: object, code: int) -> None:
    path = "/apis/config.openshift.io/v1/proxies/cluster"
    reply = raw("PATCH", path, ops, content_type=JSON_PATCH)
    assert reply.code == code
    assert reply.body["kind"] == "Status"


def test_strategic_merge_on_builtin_types(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", _configmap("smp", a="1"))
    patched = core.patch_namespaced_config_map("smp", "default", {"data": {"b": "2"}})
    assert patched.data == {"a": "1", "b": "2"}
    secret = {"metadata": {"name": "s", "finalizers": ["one"]}, "type": "Opaque", "data": {"k": "dg=="}}
    core.create_namespaced_secret("default", secret)
    merged = core.patch_namespaced_secret("s", "default", {"metadata": {"finalizers": ["two"]}, "data": {"j": "dw=="}})
    assert merged.metadata.finalizers == ["one", "two"]
    assert merged.data == {"k": "dg==", "j": "dw=="}


def test_strategic_merge_on_a_crd_is_415(raw: Call) -> None:
    content_type = "application/strategic-merge-patch+json"
    reply = raw("PATCH", "/apis/config.openshift.io/v1/proxies/cluster", {"spec": {}}, content_type=content_type)
    assert reply.code == 415
    assert reply.body["reason"] == "UnsupportedMediaType"


def test_a_patch_carrying_a_stale_resource_version_is_409(custom: kubernetes.client.CustomObjectsApi) -> None:
    args = ("config.openshift.io", "v1", "proxies")
    created = custom.create_cluster_custom_object(*args, {"metadata": {"name": "stale"}, "spec": {}})
    custom.patch_cluster_custom_object(*args, "stale", {"spec": {"noProxy": "x"}})
    stale = {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "spec": {"noProxy": "y"}}
    with pytest.raises(exceptions.ApiException) as caught:
        custom.patch_cluster_custom_object(*args, "stale", stale)
    assert caught.value.status == 409


# subresources


def test_status_is_a_subresource(custom: kubernetes.client.CustomObjectsApi) -> None:
    custom.create_cluster_custom_object(*CO, _operator("sub"))
    main = custom.patch_cluster_custom_object(*CO, "sub", {"status": {"conditions": [_condition("Available", "True")]}})
    assert "conditions" not in (main.get("status") or {})
    body = {"spec": {}, "status": {"conditions": [_condition("Available", "True")]}}
    written = custom.patch_cluster_custom_object_status(*CO, "sub", body)
    assert written["status"]["conditions"][0]["type"] == "Available"
    ignored = custom.patch_cluster_custom_object_status(*CO, "sub", {"metadata": {"labels": {"x": "y"}}})
    assert "labels" not in ignored["metadata"]


def test_create_drops_status_when_it_is_a_subresource(custom: kubernetes.client.CustomObjectsApi) -> None:
    body = {**_operator("born"), "status": {"conditions": [_condition("Available", "True")]}}
    created = custom.create_cluster_custom_object(*CO, body)
    assert "conditions" not in (created.get("status") or {})


def _csr_request() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, "system:node:sno1"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
        ]
    )
    csr = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    return base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()


def test_csr_approval_subresource_changes_only_the_conditions(kube: kubernetes.client.ApiClient) -> None:
    certificates = kubernetes.client.CertificatesV1Api(kube)
    body = {
        "metadata": {"name": "node-csr"},
        "spec": {
            "request": _csr_request(),
            "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
            "usages": ["digital signature", "client auth"],
        },
    }
    created = certificates.create_certificate_signing_request(body)
    approval = {
        "metadata": {"name": "node-csr", "resourceVersion": created.metadata.resource_version},
        "spec": {**body["spec"], "signerName": "kubernetes.io/kubelet-serving"},
        "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "Test", "message": "ok"}]},
    }
    approved = certificates.replace_certificate_signing_request_approval("node-csr", approval)
    assert [c.type for c in approved.status.conditions] == ["Approved"]
    assert approved.spec.signer_name == "kubernetes.io/kube-apiserver-client-kubelet"


# delete


def test_delete_then_404_and_namespace_delete_empties_it_in_the_background(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "doomed"}})
    core.create_namespaced_config_map("doomed", _configmap("inside"))
    core.delete_namespaced_config_map("inside", "doomed")
    with pytest.raises(exceptions.ApiException) as caught:
        core.delete_namespaced_config_map("inside", "doomed")
    assert caught.value.status == 404
    core.create_namespaced_config_map("doomed", _configmap("again"))
    core.delete_namespace("doomed")  # Terminating: emptied and removed in the background
    deadline = time.monotonic() + 10
    while core.list_namespace(field_selector="metadata.name=doomed").items and time.monotonic() < deadline:
        time.sleep(0.05)
    assert core.list_namespace(field_selector="metadata.name=doomed").items == []
    assert core.list_namespaced_config_map("doomed").items == []


# the patch module alone (no HTTP): the corner cases RFC 6902/7386 spell out


def test_merge_patch_rfc7386_examples() -> None:
    assert patch.merge_patch({"a": "b"}, {"a": "c"}) == {"a": "c"}
    assert patch.merge_patch({"a": [{"b": "c"}]}, {"a": [1]}) == {"a": [1]}
    assert patch.merge_patch({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}) == {"a": {"b": "d"}}
    assert patch.merge_patch(["a"], {"a": "b"}) == {"a": "b"}


def test_json_patch_move_copy_and_array_positions() -> None:
    doc = {"a": [1, 2], "b": {"c": 1}}
    ops = [
        {"op": "add", "path": "/a/-", "value": 3},
        {"op": "add", "path": "/a/0", "value": 0},
        {"op": "copy", "from": "/b/c", "path": "/d"},
        {"op": "move", "from": "/b", "path": "/e"},
        {"op": "add", "path": "/f~1g", "value": True},
    ]
    assert patch.json_patch(doc, ops) == {"a": [0, 1, 2, 3], "d": 1, "e": {"c": 1}, "f/g": True}
    with pytest.raises(model.ApiError) as caught:
        patch.json_patch({"a": True}, [{"op": "test", "path": "/a", "value": 1}])
    assert caught.value.code == 422


def test_strategic_merge_keyed_lists_and_directives() -> None:
    pod = {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}
    result = patch.strategic_merge(
        pod, {"spec": {"containers": [{"name": "b", "image": "z"}, {"name": "a", "$patch": "delete"}]}}
    )
    assert result["spec"]["containers"] == [{"name": "b", "image": "z"}]
    assert patch.strategic_merge({"spec": {"x": {"a": 1}}}, {"spec": {"x": {"$patch": "replace", "b": 2}}}) == {
        "spec": {"x": {"b": 2}}
    }
    removed = patch.strategic_merge(
        {"metadata": {"finalizers": ["a", "b"]}}, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}
    )
    assert removed == {"metadata": {"finalizers": ["b"]}}


def test_label_selector_syntax_errors_are_400() -> None:
    with pytest.raises(model.ApiError) as caught:
        selectors.label_matcher("a in b")
    assert caught.value.code == 400

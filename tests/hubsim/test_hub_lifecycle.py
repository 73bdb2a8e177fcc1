"""Finalizers hold a deleted object until they are removed; deleting an owner deletes its dependents."""

from __future__ import annotations

import kubernetes

from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import GROUP, PLURAL, VERSION, Call, eventually, watch_events, widget

PATH = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"
MERGE = "application/merge-patch+json"


def test_a_finalizer_holds_the_object_until_it_is_removed(
    hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi, raw: Call
) -> None:
    body = widget("held")
    body["metadata"]["finalizers"] = ["example.com/cleanup"]
    raw("POST", PATH, body)
    rv = raw("GET", PATH).body["metadata"]["resourceVersion"]
    deleting = raw("DELETE", f"{PATH}/held")
    assert deleting.code == 200 and deleting.body["metadata"]["deletionTimestamp"]
    assert raw("GET", f"{PATH}/held").body["metadata"]["deletionTimestamp"]
    assert raw("DELETE", f"{PATH}/held").code == 200  # again: nothing changes
    more = raw(
        "PATCH", f"{PATH}/held", {"metadata": {"finalizers": ["example.com/cleanup", "x/y"]}}, content_type=MERGE
    )
    assert more.code == 422 and "no new finalizers can be added" in more.body["message"]
    cleared = raw("PATCH", f"{PATH}/held", {"metadata": {"finalizers": None}}, content_type=MERGE)
    assert cleared.code == 200
    assert raw("GET", f"{PATH}/held").code == 404
    events = watch_events(hub_sim, f"{PATH}?watch=true&resourceVersion={rv}", until=3)
    assert [e["type"] for e in events] == ["MODIFIED", "MODIFIED", "DELETED"]


def test_a_client_cannot_set_a_deletion_timestamp(widgets: kubernetes.client.CustomObjectsApi, raw: Call) -> None:
    raw("POST", PATH, widget("w"))
    patched = raw("PATCH", f"{PATH}/w", {"metadata": {"deletionTimestamp": "2020-01-01T00:00:00Z"}}, content_type=MERGE)
    assert "deletionTimestamp" not in patched.body["metadata"]


def test_deleting_an_owner_deletes_its_dependents_unless_orphaned(
    widgets: kubernetes.client.CustomObjectsApi, raw: Call
) -> None:
    owner = raw("POST", PATH, widget("owner")).body
    ref = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "name": "owner", "uid": owner["metadata"]["uid"]}
    other = raw("POST", PATH, widget("other")).body
    other_ref = {**ref, "name": "other", "uid": other["metadata"]["uid"]}
    for name, refs in (("sa-one", [ref]), ("sa-two", [ref, other_ref])):
        body = {"metadata": {"name": name, "ownerReferences": refs}}
        assert raw("POST", "/api/v1/namespaces/default/serviceaccounts", body).code == 201
    raw("DELETE", f"{PATH}/owner")
    # the collector is kube-controller-manager's: it acts after the owner's DELETE has answered (controller_delay)
    assert raw("GET", "/api/v1/namespaces/default/serviceaccounts/sa-one").code == 200
    eventually("sa-one collected", lambda: raw("GET", "/api/v1/namespaces/default/serviceaccounts/sa-one").code == 404)
    kept = raw("GET", "/api/v1/namespaces/default/serviceaccounts/sa-two").body
    assert [r["name"] for r in kept["metadata"]["ownerReferences"]] == ["other"]
    raw("DELETE", f"{PATH}/other", {"propagationPolicy": "Orphan"})
    assert raw("GET", "/api/v1/namespaces/default/serviceaccounts/sa-two").code == 200


def test_deletecollection_honours_finalizers(widgets: kubernetes.client.CustomObjectsApi, raw: Call) -> None:
    held = widget("held")
    held["metadata"]["finalizers"] = ["example.com/cleanup"]
    raw("POST", PATH, held)
    raw("POST", PATH, widget("free"))
    assert raw("DELETE", PATH).code == 200
    left = raw("GET", PATH).body["items"]
    assert [w["metadata"]["name"] for w in left] == ["held"] and left[0]["metadata"]["deletionTimestamp"]


def test_a_namespace_terminates_once_its_content_has_gone(
    widgets: kubernetes.client.CustomObjectsApi, raw: Call
) -> None:
    raw("POST", "/api/v1/namespaces", {"metadata": {"name": "going"}})
    path = f"/apis/{GROUP}/{VERSION}/namespaces/going/{PLURAL}"
    held = widget("held")
    held["metadata"]["finalizers"] = ["example.com/cleanup"]
    raw("POST", path, held)
    raw("POST", path, widget("free"))
    deleting = raw("DELETE", "/api/v1/namespaces/going")
    assert deleting.code == 200 and deleting.body["status"]["phase"] == "Terminating"
    eventually(
        "the namespace emptied but for held",
        lambda: [w["metadata"]["name"] for w in raw("GET", path).body["items"]] == ["held"],
    )
    refused = raw("POST", path, widget("late"))
    assert refused.code == 403
    assert refused.body["message"].endswith(
        "unable to create new content in namespace going because it is being terminated"
    )
    raw("PATCH", f"{path}/held", {"metadata": {"finalizers": None}}, content_type=MERGE)
    eventually("the namespace gone", lambda: raw("GET", "/api/v1/namespaces/going").code == 404)


def test_the_system_namespaces_may_not_be_deleted(raw: Call) -> None:
    refused = raw("DELETE", "/api/v1/namespaces/default")
    assert refused.code == 403
    assert refused.body["message"] == 'namespaces "default" is forbidden: this namespace may not be deleted'


def test_a_crd_terminates_once_its_objects_finalizers_let_go(
    widgets: kubernetes.client.CustomObjectsApi, raw: Call
) -> None:
    held = widget("held")
    held["metadata"]["finalizers"] = ["example.com/cleanup"]
    raw("POST", PATH, held)
    crd_path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{PLURAL}.{GROUP}"
    deleting = raw("DELETE", crd_path)
    assert deleting.code == 200
    assert deleting.body["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
    conditions = {c["type"]: c["status"] for c in raw("GET", crd_path).body["status"]["conditions"]}
    assert conditions["Terminating"] == "True"
    assert raw("GET", f"{PATH}/held").body["metadata"]["deletionTimestamp"]
    refused = raw("POST", PATH, widget("late"))
    assert refused.code == 405 and "terminating" in refused.body["message"]
    raw("PATCH", f"{PATH}/held", {"metadata": {"finalizers": None}}, content_type=MERGE)
    assert raw("GET", crd_path).code == 404
    assert raw("GET", PATH).code == 404

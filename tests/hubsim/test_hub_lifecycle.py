"""Finalizers hold a deleted object until they are removed; deleting an owner deletes its dependents."""

from __future__ import annotations

import kubernetes

from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import GROUP, PLURAL, VERSION, Call, watch_events, widget

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
    assert raw("GET", "/api/v1/namespaces/default/serviceaccounts/sa-one").code == 404
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

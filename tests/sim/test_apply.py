"""Server-side apply and dryRun on the simulated API server, over HTTPS, as kube-apiserver answers them.

The rules come from "Server-Side Apply" (kubernetes.io/docs/reference/using-api/server-side-apply/) and "Dry-run"
(kubernetes.io/docs/reference/using-api/api-concepts/#dry-run): create when absent, managedFields per manager,
409 on another manager's field unless force, removal of fields the applier stopped naming, lists merged by their
list type, and dryRun=All validating without persisting.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from snoreloc_sim.openshift import simulator

from .conftest import Call

# The simulator's own apply engine through `raw` (its store, its seed); what a real cluster answers is pinned by
# test_real_answers.py, which runs on both.
pytestmark = pytest.mark.simonly

APPLY = "application/apply-patch+yaml"
CM = "/api/v1/namespaces/default/configmaps"
CATALOGS = "/apis/operators.coreos.com/v1alpha1/namespaces/openshift-marketplace/catalogsources"
PROXY = "/apis/config.openshift.io/v1/proxies"


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": data}


def applied(raw: Call, path: str, body: Any, manager: str = "snoreloc", **query: str) -> Any:
    params = "&".join(f"{k}={v}" for k, v in {"fieldManager": manager, **query}.items() if v)
    text = body if isinstance(body, bytes) else json.dumps(body).encode()
    return raw("PATCH", f"{path}?{params}", text, content_type=APPLY)


def managers(obj: dict[str, Any]) -> dict[str, str]:
    return {e["manager"]: e["operation"] for e in obj["metadata"].get("managedFields") or []}


def test_apply_creates_an_absent_object_and_records_its_manager(raw: Call) -> None:
    reply = applied(raw, f"{CM}/site-a", configmap("site-a", region="north"))
    assert reply.code == 201
    stored = raw("GET", f"{CM}/site-a").body
    assert stored["data"] == {"region": "north"}
    entry = stored["metadata"]["managedFields"][0]
    assert (entry["manager"], entry["operation"], entry["fieldsType"]) == ("snoreloc", "Apply", "FieldsV1")
    assert entry["fieldsV1"] == {"f:data": {"f:region": {}}}


def test_yaml_body_is_accepted(raw: Call) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\n  namespace: default\ndata:\n  a: '1'\n"
    assert applied(raw, f"{CM}/from-yaml", body).code == 201
    assert raw("GET", f"{CM}/from-yaml").body["data"] == {"a": "1"}


def test_apply_without_a_field_manager_is_refused(raw: Call) -> None:
    reply = applied(raw, f"{CM}/nobody", configmap("nobody", a="1"), manager="")
    assert reply.code == 422
    assert "fieldManager" in reply.body["message"]
    assert raw("GET", f"{CM}/nobody").code == 404


def test_reapplying_the_same_object_writes_nothing(raw: Call) -> None:
    applied(raw, f"{CM}/same", configmap("same", a="1"))
    before = raw("GET", f"{CM}/same").body["metadata"]["resourceVersion"]
    assert applied(raw, f"{CM}/same", configmap("same", a="1")).code == 200
    assert raw("GET", f"{CM}/same").body["metadata"]["resourceVersion"] == before


def test_a_field_the_applier_stops_naming_is_removed_but_others_fields_stay(raw: Call) -> None:
    applied(raw, f"{CM}/shrink", configmap("shrink", a="1", b="2"))
    raw(
        "PATCH", f"{CM}/shrink?fieldManager=operator", {"data": {"c": "3"}}, content_type="application/merge-patch+json"
    )
    applied(raw, f"{CM}/shrink", configmap("shrink", a="1"))
    stored = raw("GET", f"{CM}/shrink").body
    assert stored["data"] == {"a": "1", "c": "3"}
    assert managers(stored) == {"snoreloc": "Apply", "operator": "Update"}


def test_another_managers_field_with_a_different_value_is_a_409_conflict(raw: Call) -> None:
    applied(raw, f"{CM}/contested", configmap("contested", owner="theirs"), manager="someone-else")
    reply = applied(raw, f"{CM}/contested", configmap("contested", owner="ours"))
    assert reply.code == 409
    assert reply.body["reason"] == "Conflict"
    assert reply.body["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "someone-else"', "field": ".data.owner"}
    ]
    assert raw("GET", f"{CM}/contested").body["data"] == {"owner": "theirs"}


def test_the_same_value_is_shared_ownership_not_a_conflict(raw: Call) -> None:
    applied(raw, f"{CM}/shared", configmap("shared", x="1"), manager="someone-else")
    assert applied(raw, f"{CM}/shared", configmap("shared", x="1")).code == 200
    assert managers(raw("GET", f"{CM}/shared").body) == {"someone-else": "Apply", "snoreloc": "Apply"}


def test_force_takes_the_field_over(raw: Call) -> None:
    applied(raw, f"{CM}/forced", configmap("forced", owner="theirs", keep="k"), manager="someone-else")
    assert applied(raw, f"{CM}/forced", configmap("forced", owner="ours"), force="true").code == 200
    stored = raw("GET", f"{CM}/forced").body
    assert stored["data"] == {"owner": "ours", "keep": "k"}
    fields = {e["manager"]: e["fieldsV1"] for e in stored["metadata"]["managedFields"]}
    assert fields == {"someone-else": {"f:data": {"f:keep": {}}}, "snoreloc": {"f:data": {"f:owner": {}}}}


def test_an_object_without_managed_fields_belongs_to_before_first_apply(raw: Call, sim: simulator.Simulator) -> None:
    sim.cluster.store.create(sim.cluster.types["configmaps"], configmap("plain", mode="factory"))  # as seeded
    reply = applied(raw, f"{CM}/plain", configmap("plain", mode="site"))
    assert reply.code == 409
    assert reply.body["message"] == (
        'Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.mode'
    )


def test_a_created_object_belongs_to_the_user_agents_product(raw: Call) -> None:
    raw("POST", CM, configmap("plain", mode="factory"))  # http.client sends no User-Agent: "unknown" here
    reply = applied(raw, f"{CM}/plain", configmap("plain", mode="site"))
    assert reply.code == 409
    assert reply.body["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "unknown" using v1', "field": ".data.mode"}
    ]


def test_a_map_list_merges_by_key_and_an_atomic_list_is_replaced(raw: Call, sim: simulator.Simulator) -> None:
    # Proxy cluster: spec.readinessEndpoints is atomic (no list type). IngressController's
    # spec.httpHeaders.actions.request is a map list keyed by name in the CRD (x-kubernetes-list-type: map).
    body = {"apiVersion": "config.openshift.io/v1", "kind": "Proxy", "metadata": {"name": "lists"}}
    applied(raw, f"{PROXY}/lists", {**body, "spec": {"readinessEndpoints": ["http://a", "http://b"]}}, manager="one")
    applied(raw, f"{PROXY}/lists", {**body, "spec": {"readinessEndpoints": ["http://c"]}}, manager="one")
    assert raw("GET", f"{PROXY}/lists").body["spec"]["readinessEndpoints"] == ["http://c"]


def test_keyed_items_from_two_managers_are_kept_side_by_side(raw: Call) -> None:
    path = "/api/v1/namespaces/default/pods/keyed"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "keyed", "namespace": "default"}}
    one = {**pod, "spec": {"containers": [{"name": "app", "image": "quay.io/a:1"}]}}
    two = {**pod, "spec": {"containers": [{"name": "sidecar", "image": "quay.io/b:1"}]}}
    assert applied(raw, path, one, manager="one").code == 201
    assert applied(raw, path, two, manager="two").code == 200
    names = [c["name"] for c in raw("GET", path).body["spec"]["containers"]]
    assert names == ["app", "sidecar"]
    applied(raw, path, {**pod, "spec": {}}, manager="two")
    assert [c["name"] for c in raw("GET", path).body["spec"]["containers"]] == ["app"]


def test_a_custom_resource_is_applied_and_validated_by_its_schema(raw: Call) -> None:
    catalog = {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "CatalogSource",
        "metadata": {"name": "site", "namespace": "openshift-marketplace"},
        "spec": {"sourceType": "grpc", "image": "mirror.example.com/index:v1"},
    }
    assert applied(raw, f"{CATALOGS}/site", catalog).code == 201
    bad = {**catalog, "spec": {"image": "mirror.example.com/index:v2"}}  # sourceType is required
    reply = applied(raw, f"{CATALOGS}/site", bad, force="true")
    assert reply.code == 422
    assert raw("GET", f"{CATALOGS}/site").body["spec"]["image"] == "mirror.example.com/index:v1"


@pytest.mark.parametrize("existing", [False, True])
def test_dry_run_apply_validates_and_answers_without_persisting(raw: Call, existing: bool) -> None:
    if existing:
        applied(raw, f"{CM}/dry", configmap("dry", a="1"))
    before = raw("GET", f"{CM}/dry").body
    reply = applied(raw, f"{CM}/dry", configmap("dry", a="2"), dryRun="All")
    assert reply.code == (200 if existing else 201)
    assert reply.body["data"] == {"a": "2"}
    assert raw("GET", f"{CM}/dry").body == before


def test_dry_run_of_an_invalid_object_is_refused_like_the_real_write(raw: Call) -> None:
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad", "namespace": "default"}}
    bad["data"] = {"not a key!": "x"}
    assert applied(raw, f"{CM}/bad", bad, dryRun="All").code == 422
    assert raw("POST", f"{CM}?dryRun=All", bad).code == 422


def test_dry_run_create_update_and_patch_do_not_persist(raw: Call) -> None:
    raw("POST", CM, configmap("kept", a="1"))
    stored = raw("GET", f"{CM}/kept").body
    assert raw("POST", f"{CM}?dryRun=All", configmap("ghost", a="1")).code == 201
    assert raw("GET", f"{CM}/ghost").code == 404
    assert raw("PUT", f"{CM}/kept?dryRun=All", {**stored, "data": {"a": "2"}}).code == 200
    merge = "application/merge-patch+json"
    assert raw("PATCH", f"{CM}/kept?dryRun=All", {"data": {"a": "3"}}, content_type=merge).code == 200
    assert raw("GET", f"{CM}/kept").body == stored


def test_apply_of_a_kind_the_cluster_does_not_serve_is_404(raw: Call) -> None:
    path = "/apis/example.com/v1/namespaces/default/widgets/w"
    body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}}
    assert applied(raw, path, body, dryRun="All").code == 404
    assert applied(raw, path, body).code == 404


def test_a_later_plain_update_moves_the_changed_field_to_its_manager(raw: Call) -> None:
    applied(raw, f"{CM}/moved", configmap("moved", a="1", b="2"))
    merge = "application/merge-patch+json"
    raw("PATCH", f"{CM}/moved?fieldManager=editor", {"data": {"a": "9"}}, content_type=merge)
    fields = {e["manager"]: e["fieldsV1"] for e in raw("GET", f"{CM}/moved").body["metadata"]["managedFields"]}
    assert fields == {"snoreloc": {"f:data": {"f:b": {}}}, "editor": {"f:data": {"f:a": {}}}}


def test_a_dry_run_create_in_a_namespace_that_does_not_exist_is_404(raw: Call) -> None:
    body = configmap("lost")
    body["metadata"]["namespace"] = "no-such-namespace"
    path = "/api/v1/namespaces/no-such-namespace/configmaps"
    assert raw("POST", f"{path}?dryRun=All", body).code == 404
    assert applied(raw, f"{path}/lost", body, dryRun="All").code == 404


def test_a_crd_map_list_merges_by_its_keys_from_two_managers(raw: Call) -> None:
    # Ingress spec.componentRoutes: x-kubernetes-list-type map, keys namespace and name (the Ingress CRD).
    path = "/apis/config.openshift.io/v1/ingresses/keyed"
    base = {"apiVersion": "config.openshift.io/v1", "kind": "Ingress", "metadata": {"name": "keyed"}}

    def route(name: str, host: str) -> dict[str, Any]:
        return {"namespace": "openshift-console", "name": name, "hostname": host}

    one = {**base, "spec": {"domain": "apps.x.example.com", "componentRoutes": [route("console", "c.example.com")]}}
    two = {**base, "spec": {"componentRoutes": [route("downloads", "d.example.com")]}}
    assert applied(raw, path, one, manager="one").code == 201
    assert applied(raw, path, two, manager="two").code == 200
    routes = raw("GET", path).body["spec"]["componentRoutes"]
    assert [(r["name"], r["hostname"]) for r in routes] == [
        ("console", "c.example.com"),
        ("downloads", "d.example.com"),
    ]
    moved = {**base, "spec": {"componentRoutes": [route("console", "other.example.com")]}}
    reply = applied(raw, path, moved, manager="two")
    assert reply.code == 409
    assert reply.body["details"]["causes"][0]["field"].startswith(".spec.componentRoutes[")


def test_a_write_that_changes_nothing_of_an_object_without_entries_is_no_write(
    raw: Call, sim: simulator.Simulator
) -> None:
    stored = sim.cluster.store.create(sim.cluster.types["configmaps"], configmap("seeded", mode="factory"))
    reply = raw("PUT", f"{CM}/seeded", stored)
    assert reply.code == 200
    assert reply.body["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert "managedFields" not in reply.body["metadata"]

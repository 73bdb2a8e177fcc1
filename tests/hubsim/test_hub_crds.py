"""The hub starts as an empty plain Kubernetes API and serves CRDs created at run time, as kube-apiserver does."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import kubernetes
import yaml

from snoreloc_sim.hub.simulator import SYSTEM_NAMESPACES, HubSimulator

from .conftest import GROUP, PLURAL, VERSION, Call, widget, widget_crd

PATH = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"


def test_an_empty_hub_has_the_system_namespaces_and_no_openshift(kube: kubernetes.client.ApiClient, raw: Call) -> None:
    names = [ns.metadata.name for ns in kubernetes.client.CoreV1Api(kube).list_namespace().items]
    assert sorted(names) == sorted(SYSTEM_NAMESPACES)
    groups = [group["name"] for group in raw("GET", "/apis").body["groups"]]
    assert "config.openshift.io" not in groups
    assert {"apiextensions.k8s.io", "rbac.authorization.k8s.io", "events.k8s.io"} <= set(groups)
    assert raw("GET", "/version").body["gitVersion"].startswith("v1.")


def test_a_bad_token_is_401_and_no_token_is_an_anonymous_user(raw: Call) -> None:
    reply = raw("GET", "/api/v1/namespaces", token="not-a-token")
    assert reply.code == 401
    assert reply.body["reason"] == "Unauthorized"
    anonymous = raw("GET", "/api/v1/namespaces", token="")
    assert anonymous.code == 403
    assert anonymous.body["message"] == (
        'namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" '
        "at the cluster scope"
    )
    assert raw("GET", "/version", token="").code == 200  # system:public-info-viewer
    assert raw("GET", "/apis", token="").body["message"] == 'forbidden: User "system:anonymous" cannot get path "/apis"'


def test_a_crd_created_at_run_time_is_served_and_discovered(
    widgets: kubernetes.client.CustomObjectsApi, raw: Call
) -> None:
    crd = raw("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{PLURAL}.{GROUP}").body
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    document = raw("GET", f"/apis/{GROUP}/{VERSION}").body
    main, status = document["resources"]
    assert main["name"] == PLURAL and main["shortNames"] == ["wg"] and main["categories"] == ["gadgets"]
    assert {"watch", "list", "deletecollection", "patch"} <= set(main["verbs"])
    assert status["name"] == f"{PLURAL}/status" and status["verbs"] == ["get", "patch", "update"]
    assert any(g["name"] == GROUP for g in raw("GET", "/apis").body["groups"])


def test_custom_resources_are_validated_pruned_and_defaulted_by_the_crd_schema(
    widgets: kubernetes.client.CustomObjectsApi, raw: Call
) -> None:
    created = raw("POST", PATH, widget("w1") | {"spec": {"size": 2, "shape": "round"}})
    assert created.code == 201
    assert created.body["spec"] == {"size": 2, "color": "grey"}
    assert "unknown field 'spec.shape'" in created.headers["warning"]
    refused = raw("POST", PATH, widget("w2", size=0))
    assert refused.code == 422
    assert refused.body["reason"] == "Invalid"
    assert refused.body["details"]["causes"][0]["field"] == "spec.size"
    assert refused.body["message"].startswith('Widget.hubsim.example.com "w2" is invalid: spec.size')


def test_the_status_subresource_splits_spec_and_status_writes(widgets: kubernetes.client.CustomObjectsApi) -> None:
    args = (GROUP, VERSION, "default", PLURAL)
    made = widgets.create_namespaced_custom_object(*args, widget("w", status={"phase": "Sneaky"}))
    assert "status" not in made  # status is written through /status only
    status = widgets.patch_namespaced_custom_object_status(
        *args, "w", {"status": {"phase": "Ready"}, "spec": {"size": 9}}
    )
    assert status["status"] == {"phase": "Ready"} and status["spec"]["size"] == 1
    assert status["metadata"]["generation"] == 1  # a status write is not a new generation
    main = widgets.patch_namespaced_custom_object(*args, "w", {"spec": {"size": 3}, "status": {"phase": "Gone"}})
    assert main["status"] == {"phase": "Ready"} and main["spec"]["size"] == 3
    assert main["metadata"]["generation"] == 2
    labelled = widgets.patch_namespaced_custom_object(*args, "w", {"metadata": {"labels": {"a": "b"}}})
    assert labelled["metadata"]["generation"] == 2  # metadata is not spec


def test_a_cluster_scoped_crd_is_served_without_namespaces(kube: kubernetes.client.ApiClient, raw: Call) -> None:
    kubernetes.client.ApiextensionsV1Api(kube).create_custom_resource_definition(widget_crd("Cluster"))
    assert raw("POST", f"/apis/{GROUP}/{VERSION}/{PLURAL}", widget("global")).code == 201
    assert raw("GET", f"{PATH}/global").code == 404
    assert raw("GET", f"/apis/{GROUP}/{VERSION}/{PLURAL}/global").body["metadata"]["name"] == "global"


def test_an_invalid_crd_is_refused_with_the_fields_named(raw: Call) -> None:
    crd = widget_crd()
    crd["metadata"]["name"] = "wrong.example.com"
    crd["spec"]["versions"][0]["storage"] = False
    reply = raw("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert reply.code == 422
    fields = [cause["field"] for cause in reply.body["details"]["causes"]]
    assert fields == ["metadata.name", "spec.versions"]
    assert raw("GET", f"/apis/{GROUP}/{VERSION}").code == 404


def test_deleting_a_crd_deletes_its_objects_and_stops_serving_it(
    widgets: kubernetes.client.CustomObjectsApi, kube: kubernetes.client.ApiClient, raw: Call
) -> None:
    widgets.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("doomed"))
    kubernetes.client.ApiextensionsV1Api(kube).delete_custom_resource_definition(f"{PLURAL}.{GROUP}")
    assert raw("GET", PATH).code == 404
    assert raw("GET", f"/apis/{GROUP}/{VERSION}").code == 404
    kubernetes.client.ApiextensionsV1Api(kube).create_custom_resource_definition(widget_crd())
    assert raw("GET", PATH).body["items"] == []


def test_the_hub_fixture_gives_a_private_admin_kubeconfig(hub_sim: HubSimulator) -> None:
    assert hub_sim.kubeconfig_path.stat().st_mode & 0o777 == 0o600
    document = yaml.safe_load(hub_sim.kubeconfig_path.read_text())
    assert document["users"][0]["user"]["token"] == hub_sim.token
    assert document["clusters"][0]["cluster"]["server"] == hub_sim.api_url


def test_snoreloc_sim_serve_hub_serves_until_sigterm(tmp_path: Path) -> None:
    out = tmp_path / "hub.yaml"
    program = "import sys; from snoreloc.cli.main import main; sys.exit(main(sys.argv[1:]))"
    argv = [sys.executable, "-c", program, "sim", "serve", "--hub", "--kubeconfig-out", str(out)]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith(f"kubeconfig: {out}"), process.stderr.read() if process.stderr else first
        assert out.stat().st_mode & 0o777 == 0o600
        core = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(str(out)))
        assert sorted(ns.metadata.name for ns in core.list_namespace().items) == sorted(SYSTEM_NAMESPACES)
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=10)
    assert code == 0


def test_a_crds_cel_rules_are_enforced(kube: kubernetes.client.ApiClient, raw: Call) -> None:
    crd = widget_crd()
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["x-kubernetes-validations"] = [{"rule": "self.size <= 10", "message": "size is at most 10"}]
    kubernetes.client.ApiextensionsV1Api(kube).create_custom_resource_definition(crd)
    assert raw("POST", PATH, widget("small", size=10)).code == 201
    refused = raw("POST", PATH, widget("big", size=11))
    assert refused.code == 422
    assert refused.body["details"]["causes"][0]["field"] == "spec"
    assert "size is at most 10" in refused.body["message"]


def test_deployments_and_services_are_validated_and_stored_for_a_controllers_manifests(raw: Call) -> None:
    deployment = {
        "metadata": {"name": "controller"},
        "spec": {
            "selector": {"matchLabels": {"app": "c"}},
            "template": {"metadata": {"labels": {"app": "c"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
        },
    }
    assert raw("POST", "/apis/apps/v1/namespaces/default/deployments", deployment).code == 201
    service = {"metadata": {"name": "metrics"}, "spec": {"ports": [{"port": 8080}]}}
    assert raw("POST", "/api/v1/namespaces/default/services", service).code == 201
    assert raw("POST", "/api/v1/namespaces/default/services", {"metadata": {"name": "bad"}}).code == 422
    resources = {r["name"] for r in raw("GET", "/apis/apps/v1").body["resources"]}
    assert {"deployments", "deployments/status"} <= resources


def test_events_are_stored_in_both_apis(raw: Call) -> None:
    involved = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "name": "w1", "namespace": "default"}
    core = {"metadata": {"generateName": "w1-"}, "involvedObject": involved, "reason": "Reconciled", "type": "Normal"}
    assert raw("POST", "/api/v1/namespaces/default/events", core).code == 201
    newer = {"metadata": {"name": "w1.1"}, "regarding": involved, "reason": "Reported", "type": "Normal",
             "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "x", "reportingInstance": "y",
             "action": "Report"}  # fmt: skip
    assert raw("POST", "/apis/events.k8s.io/v1/namespaces/default/events", newer).code == 201
    listed = raw("GET", "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dw1").body["items"]
    assert [e["reason"] for e in listed] == ["Reconciled"]
    assert raw("GET", "/apis/events.k8s.io/v1/events").body["items"][0]["reason"] == "Reported"

"""What kube-apiserver answers where the agent uses newer API paths, pinned request by request (issue 27).

Each case names the request, the status, reason and resulting object a real kube-apiserver gives, and the source
the answer comes from. The cases run against the simulator, and unchanged against a real cluster when
`SNORELOC_TEST_KUBECONFIG` is set: they read nothing of the simulator, so they are the check that it answers as a
real server does. They work in their own namespace and delete it after.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import kubernetes
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from snoreloc import errors
from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube

APPLY = "application/apply-patch+yaml"
JSON_PATCH = "application/json-patch+json"
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


@pytest.fixture
def sim_options() -> dict[str, Any]:
    # Real time: a deleted namespace stays Terminating for seconds, as on a real cluster, not milliseconds.
    return {"speed": 1.0}


@dataclass(frozen=True)
class Answer:
    code: int
    body: Any

    @property
    def reason(self) -> str:
        return str(self.body.get("reason", "")) if isinstance(self.body, dict) else ""

    @property
    def message(self) -> str:
        return str(self.body.get("message", "")) if isinstance(self.body, dict) else ""

    def causes(self) -> list[tuple[str, str]]:
        details = self.body.get("details") or {} if isinstance(self.body, dict) else {}
        return [(str(c.get("reason", "")), str(c.get("field", ""))) for c in details.get("causes") or []]


class Wire:
    """Raw requests through the official client's transport (any status comes back, nothing is raised)."""

    def __init__(self, kubeconfig: str) -> None:
        self.api = kubernetes.config.new_client_from_config(kubeconfig)

    def __call__(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
        user_agent: str | None = None,
    ) -> Answer:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        self.api.user_agent = user_agent or "answers-test/1"
        serialized = self.api.param_serialize(
            method, path, query_params=list((query or {}).items()) or None, header_params=headers, body=body,
            auth_settings=["BearerToken"],
        )  # fmt: skip
        response = self.api.call_api(*serialized, _request_timeout=(5, 30))
        data = response.read()
        try:
            return Answer(response.status, json.loads(data) if data else {})
        except ValueError:
            return Answer(response.status, data.decode())

    def apply(self, path: str, obj: Any, manager: str = "site-tool", **query: str) -> Answer:
        return self("PATCH", path, json.dumps(obj), content_type=APPLY, query={"fieldManager": manager, **query})

    def gone(self, path: str, seconds: float = 60.0) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self("GET", path).code == 404:
                return True
            time.sleep(0.2)
        return False


@pytest.fixture
def wire(cluster_kubeconfig: str) -> Wire:
    return Wire(cluster_kubeconfig)


@pytest.fixture
def space(wire: Wire) -> Iterator[str]:
    """A namespace of the test's own, deleted after."""
    name = f"answers-{uuid.uuid4().hex[:8]}"
    assert wire("POST", "/api/v1/namespaces", {"metadata": {"name": name}}).code == 201
    yield name
    wire("DELETE", f"/api/v1/namespaces/{name}")


def configmap(namespace: str, name: str, data: Any, **extra: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data, **extra}


# ---- server-side apply: a body that does not fit the type is a 500 -------------------------------------------------
# k8s.io/apimachinery pkg/util/managedfields/internal/structuredmerge.go (Apply: "failed to create typed patch
# object (%v): %v"), sigs.k8s.io/structured-merge-diff typed validation, answered as a reason-less 500 by
# k8s.io/apiserver pkg/endpoints/handlers/responsewriters/status.go (ErrorToAPIStatus).

REFUSED_APPLIES = [
    ("wrong type", {"data": {"store": 412}}, {},
     ".data.store: expected string, got &value.valueUnstructured{Value:412}"),
    ("unknown field", {"data": {"a": "b"}, "dataa": {"c": "d"}}, {}, ".dataa: field not declared in schema"),
    ("unknown field, Strict", {"data": {"a": "b"}, "dataa": {"c": "d"}}, {"fieldValidation": "Strict"},
     ".dataa: field not declared in schema"),
    ("bad label", {"metadata": {"labels": {"on": True}}}, {}, ".metadata.labels.on: expected string"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "body", "query", "detail"), REFUSED_APPLIES, ids=[c[0] for c in REFUSED_APPLIES])
def test_an_apply_body_that_does_not_fit_its_type_is_a_500_and_stores_nothing(
    wire: Wire, space: str, case: str, body: dict[str, Any], query: dict[str, str], detail: str
) -> None:
    obj = configmap(space, "typo", {"ok": "yes"})
    obj.update({k: v for k, v in body.items() if k != "metadata"})
    obj["metadata"].update(body.get("metadata", {}))
    answer = wire.apply(f"/api/v1/namespaces/{space}/configmaps/typo", obj, **query)
    assert answer.code == 500, answer.body
    assert answer.reason == ""
    assert answer.message.startswith(f"failed to create typed patch object ({space}/typo; /v1, Kind=ConfigMap): ")
    assert detail in answer.message
    assert wire("GET", f"/api/v1/namespaces/{space}/configmaps/typo").code == 404


# ---- managedFields on create and update, and the conflict that names the manager -----------------------------------
# k8s.io/apimachinery pkg/util/managedfields/internal/fieldmanager.go (Update records every write), k8s.io/apiserver
# pkg/endpoints/handlers/rest.go (prefixFromUserAgent), internal/conflict.go (NewConflictError, printManager).


def test_a_create_records_its_manager_and_a_later_apply_conflicts_with_it_by_name(wire: Wire, space: str) -> None:
    path = f"/api/v1/namespaces/{space}/configmaps"
    made = wire("POST", path, configmap(space, "owned", {"site": "north"}), query={"fieldManager": "alice"})
    assert made.code == 201
    entries = [(e["manager"], e["operation"], e["apiVersion"]) for e in made.body["metadata"]["managedFields"]]
    assert entries == [("alice", "Update", "v1")]
    answer = wire.apply(f"{path}/owned", configmap(space, "owned", {"site": "south"}), manager="bob")
    assert answer.code == 409 and answer.reason == "Conflict"
    assert answer.message == 'Apply failed with 1 conflict: conflict with "alice" using v1: .data.site'
    assert answer.causes() == [("FieldManagerConflict", ".data.site")]
    forced = wire.apply(f"{path}/owned", configmap(space, "owned", {"site": "south"}), manager="bob", force="true")
    assert forced.code == 200 and forced.body["data"] == {"site": "south"}
    # alice's Update entry is emptied of .data.site but stays, owning the map it set a key in (its `.` member):
    # structured-merge-diff's field set of an Update has the map itself (`f:data: {.: {}, f:site: {}}`), and
    # kube-apiserver 1.36 answered `{"f:data": {}}` here (issue 34), where the simulator once dropped the entry
    entries = {e["manager"]: e for e in forced.body["metadata"]["managedFields"]}
    assert set(entries) == {"alice", "bob"}
    assert (entries["alice"]["operation"], entries["alice"]["fieldsV1"]) == ("Update", {"f:data": {}})


def test_without_a_field_manager_the_user_agent_names_the_manager(wire: Wire, space: str) -> None:
    path = f"/api/v1/namespaces/{space}/configmaps"
    made = wire("POST", path, configmap(space, "by-agent", {"a": "1"}), user_agent="site-tool/1.2 (linux)")
    assert made.code == 201
    assert [e["manager"] for e in made.body["metadata"]["managedFields"]] == ["site-tool"]
    patched = wire("PATCH", f"{path}/by-agent", [{"op": "add", "path": "/data/b", "value": "2"}],
                   content_type=JSON_PATCH, user_agent="other-tool/3")  # fmt: skip
    assert patched.code == 200
    assert {e["manager"] for e in patched.body["metadata"]["managedFields"]} == {"site-tool", "other-tool"}


# ---- namespaces ----------------------------------------------------------------------------------------------------
# pkg/registry/core/namespace/strategy.go (PrepareForCreate), pkg/apis/core/v1/defaults.go (SetDefaults_Namespace),
# pkg/registry/core/namespace/storage/storage.go (REST.Delete), k8s.io/apiserver pkg/admission/plugin/namespace/
# lifecycle/admission.go (Admit: NamespaceTerminating).


def test_a_namespace_is_created_active_labelled_and_with_the_kubernetes_finalizer(wire: Wire, space: str) -> None:
    found = wire("GET", f"/api/v1/namespaces/{space}").body
    assert found["metadata"]["labels"]["kubernetes.io/metadata.name"] == space
    assert found["spec"]["finalizers"] == ["kubernetes"]
    assert found["status"]["phase"] == "Active"


def test_a_deleted_namespace_terminates_refuses_new_content_and_goes_with_its_content(wire: Wire) -> None:
    name = f"answers-{uuid.uuid4().hex[:8]}"
    assert wire("POST", "/api/v1/namespaces", {"metadata": {"name": name}}).code == 201
    inside = f"/api/v1/namespaces/{name}/configmaps"
    assert wire("POST", inside, configmap(name, "content", {"a": "1"})).code == 201
    deleted = wire("DELETE", f"/api/v1/namespaces/{name}")
    assert deleted.code == 200
    assert (deleted.body["kind"], deleted.body["status"]["phase"]) == ("Namespace", "Terminating")
    assert deleted.body["metadata"]["deletionTimestamp"]
    refused = wire("POST", inside, configmap(name, "late", {"a": "1"}))
    assert refused.code == 403 and refused.reason == "Forbidden"
    assert f"unable to create new content in namespace {name} because it is being terminated" in refused.message
    assert refused.causes() == [("NamespaceTerminating", "metadata.namespace")]
    assert wire.gone(f"/api/v1/namespaces/{name}")
    assert wire("GET", f"{inside}/content").code == 404


# ---- JSON patch as the apiserver applies it (evanphx/json-patch patch.go; handlers/patch.go answers 422) ----------

JSON_PATCHES = [
    ("test null on a missing key", [{"op": "test", "path": "/data/absent", "value": None}], 200),
    ("test a value that differs", [{"op": "test", "path": "/data/a", "value": "2"}], 422),
    ("an unknown op", [{"op": "frobnicate", "path": "/data/a", "value": "2"}], 422),
]


@pytest.mark.parametrize(("case", "operations", "code"), JSON_PATCHES, ids=[c[0] for c in JSON_PATCHES])
def test_json_patch_answers(wire: Wire, space: str, case: str, operations: list[Any], code: int) -> None:
    path = f"/api/v1/namespaces/{space}/configmaps/patched"
    assert wire("POST", f"/api/v1/namespaces/{space}/configmaps", configmap(space, "patched", {"a": "1"})).code == 201
    assert wire("PATCH", path, operations, content_type=JSON_PATCH).code == code


# ---- generation only where the strategy sets it ---------------------------------------------------------------------
# pkg/registry/core/configmap, secret, certificates strategies set none; apps/deployment's PrepareForCreate sets 1.


def test_generation_is_set_only_where_the_real_strategy_sets_it(wire: Wire, space: str) -> None:
    cm = wire("POST", f"/api/v1/namespaces/{space}/configmaps", configmap(space, "plain", {"a": "1"})).body
    secret = wire("POST", f"/api/v1/namespaces/{space}/secrets",
                  {"metadata": {"name": "plain"}, "stringData": {"k": "v"}}).body  # fmt: skip
    deployment = wire("POST", f"/apis/apps/v1/namespaces/{space}/deployments", _deployment("web")).body
    assert "generation" not in cm["metadata"]
    assert "generation" not in secret["metadata"]
    assert deployment["metadata"]["generation"] == 1


# ---- built-in kinds a site manifest carries ------------------------------------------------------------------------
# pkg/apis/core/validation/validation.go (ValidateService, ValidatePersistentVolumeClaimSpec), pkg/apis/apps/validation
# (selector against the template), pkg/apis/rbac/validation (ValidatePolicyRule, roleRef), pkg/apis/networking/
# validation (policyTypes).


def _deployment(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    pod = {
        "metadata": {"labels": labels or {"app": name}},
        "spec": {"containers": [{"name": "web", "image": "registry.example.com/web:1"}]},
    }
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": pod}}  # fmt: skip


def _service(ports: list[Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "site-svc"},
            "spec": {"selector": {"app": "web"}, "ports": ports}}  # fmt: skip


BUILTIN_REFUSALS: list[tuple[str, str, Callable[[str], Any], str, str]] = [
    ("service without ports", "/api/v1/namespaces/{ns}/services", lambda ns: _service([]),
     "FieldValueRequired", "spec.ports"),
    ("service port out of range", "/api/v1/namespaces/{ns}/services", lambda ns: _service([{"port": 70000}]),
     "FieldValueInvalid", "spec.ports[0].port"),
    ("deployment selector not matching", "/apis/apps/v1/namespaces/{ns}/deployments",
     lambda ns: _deployment("web", {"app": "other"}), "FieldValueInvalid", "spec.template.metadata.labels"),
    ("role without verbs", "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
     lambda ns: {"metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["pods"]}]},
     "FieldValueRequired", "rules[0].verbs"),
    ("rolebinding to an unknown kind", "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
     lambda ns: {"metadata": {"name": "b"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Robot",
                                                        "name": "r"}},
     "FieldValueNotSupported", "roleRef.kind"),
    ("network policy type", "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
     lambda ns: {"metadata": {"name": "n"}, "spec": {"podSelector": {}, "policyTypes": ["Sideways"]}},
     "FieldValueNotSupported", "spec.policyTypes[0]"),
    ("claim without access modes", "/api/v1/namespaces/{ns}/persistentvolumeclaims",
     lambda ns: {"metadata": {"name": "c"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}},
     "FieldValueRequired", "spec.accessModes"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "path", "make", "reason", "field"), BUILTIN_REFUSALS, ids=[c[0] for c in BUILTIN_REFUSALS]
)
def test_builtin_kinds_refuse_what_a_real_cluster_refuses(
    wire: Wire, space: str, case: str, path: str, make: Callable[[str], Any], reason: str, field: str
) -> None:
    answer = wire("POST", path.format(ns=space), make(space), query={"dryRun": "All"})
    assert answer.code == 422 and answer.reason == "Invalid", answer.body
    assert (reason, field) in answer.causes()


def test_builtin_kinds_a_site_brings_are_served_and_defaulted(wire: Wire, space: str) -> None:
    service = wire("POST", f"/api/v1/namespaces/{space}/services", _service([{"port": 8080}])).body
    assert service["spec"]["type"] == "ClusterIP" and service["spec"]["clusterIP"]
    assert service["spec"]["ports"][0]["protocol"] == "TCP" and service["spec"]["ports"][0]["targetPort"] == 8080
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    made = [
        wire("POST", f"/api/v1/namespaces/{space}/serviceaccounts", {"metadata": {"name": "site-sa"}}),
        wire("POST", f"{rbac}/namespaces/{space}/roles",
             {"metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
        wire("POST", f"{rbac}/namespaces/{space}/rolebindings",
             {"metadata": {"name": "b"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                     "name": "r"},
              "subjects": [{"kind": "ServiceAccount", "name": "site-sa", "namespace": space}]}),
        wire("POST", f"/apis/apps/v1/namespaces/{space}/daemonsets", {**_deployment("agent"), "kind": "DaemonSet"}),
        wire("POST", f"/apis/networking.k8s.io/v1/namespaces/{space}/networkpolicies",
             {"metadata": {"name": "deny"}, "spec": {"podSelector": {}}}),
        wire("POST", f"/api/v1/namespaces/{space}/persistentvolumeclaims",
             {"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                  "resources": {"requests": {"storage": "1Gi"}}}}),
    ]  # fmt: skip
    assert [answer.code for answer in made] == [201] * len(made), [a.body for a in made if a.code != 201]
    changed = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}
    answer = wire("PATCH", f"{rbac}/namespaces/{space}/rolebindings/b", {"roleRef": changed},
                  content_type="application/merge-patch+json")  # fmt: skip
    assert answer.code == 422 and "cannot change roleRef" in answer.message


# ---- CSR approval (pkg/apis/certificates/validation/validation.go; registry strategy PrepareForCreate) --------------


def _csr_request() -> str:
    import base64  # noqa: PLC0415

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "answers-client")])
    csr = x509.CertificateSigningRequestBuilder().subject_name(name).sign(key, hashes.SHA256())
    return base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()


def test_csr_approval_causes_carry_the_real_reasons(wire: Wire) -> None:
    name = f"answers-{uuid.uuid4().hex[:8]}"
    body = {"metadata": {"name": name},
            "spec": {"request": _csr_request(), "signerName": "kubernetes.io/kube-apiserver-client",
                     "usages": ["client auth"], "uid": "forged"}}  # fmt: skip
    made = wire("POST", CSRS, body)
    try:
        assert made.code == 201
        assert made.body["spec"].get("uid") != "forged"
        assert "generation" not in made.body["metadata"]
        approved = {"type": "Approved", "status": "True", "reason": "Test", "message": "test"}
        twice = {**made.body, "status": {"conditions": [approved, approved]}}
        answer = wire("PUT", f"{CSRS}/{name}/approval", twice)
        assert answer.code == 422
        assert ("FieldValueDuplicate", "status.conditions[1].type") in answer.causes()
        removed = wire("PUT", f"{CSRS}/{name}/approval", {**made.body, "status": {"conditions": [approved]}})
        assert removed.code == 200
        dropped = wire("PUT", f"{CSRS}/{name}/approval", {**removed.body, "status": {"conditions": []}})
        assert dropped.code == 422
        assert ("FieldValueForbidden", "status.conditions") in dropped.causes()
    finally:
        wire("DELETE", f"{CSRS}/{name}")


def test_a_service_applied_without_port_protocols_is_taken_and_defaulted(wire: Wire, space: str) -> None:
    """The ports list is keyed by port and protocol; protocol's default makes a port without it a whole key
    (structured-merge-diff's defaulted list-map keys), so a manifest that omits it applies, as kubectl's users see."""
    service = {**_service([{"name": "web", "port": 8080}, {"name": "metrics", "port": 9090}]),
               "metadata": {"name": "site-svc", "namespace": space}}  # fmt: skip
    answer = wire.apply(f"/api/v1/namespaces/{space}/services/site-svc", service)
    assert answer.code == 201, answer.body
    assert [port["protocol"] for port in answer.body["spec"]["ports"]] == ["TCP", "TCP"]


def test_a_create_in_a_terminating_namespace_is_temporary_not_a_lack_of_rights(
    cluster_kubeconfig: str,
) -> None:
    """The agent reads NamespaceLifecycle's 403 by its cause, NamespaceTerminating: exit 75 (run again once the
    namespace is gone), not 77 (no rights), and not retried."""
    client = kube.Client.from_kubeconfig(cluster_kubeconfig, clock=clock_mod.SystemClock())
    name = f"meaning-{uuid.uuid4().hex[:8]}"
    namespace = kube.Ref(kube.Resource("", "v1", "namespaces", "Namespace", False), name)
    try:
        client.create(namespace.resource, {"metadata": {"name": name}})
        client.create(kube.CONFIGMAPS, {"metadata": {"name": "content", "namespace": name}, "data": {"a": "1"}})
        client.delete(namespace)
        with pytest.raises(kube.NamespaceTerminating) as caught:
            client.create(kube.CONFIGMAPS, {"metadata": {"name": "late", "namespace": name}, "data": {"a": "1"}})
        assert caught.value.exit_code == errors.ExitCode.TEMPORARY
        assert client.requests == 4, "not retried"
    finally:
        client.close()

"""The factory SNO seed: schema-valid, internally consistent, working key pairs, and fast to load at scale."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from kubernetes import client, config

from snoreloc_sim.kube import certs, model, registry, validation
from snoreloc_sim.openshift import crds, seeds, simulator

from .conftest import Call

CO = "clusteroperators.config.openshift.io"
ROUTES = "routes.route.openshift.io"


ICSPS = "imagecontentsourcepolicies.operator.openshift.io"
IDMS = "imagedigestmirrorsets.config.openshift.io"
ITMS = "imagetagmirrorsets.config.openshift.io"


def seeded(version: str = "4.16", **options: Any) -> tuple[model.Cluster, seeds.SeedFacts]:
    """A seeded cluster whose types are what that version's API server serves (as the Simulator builds it)."""
    served = registry.load(crds.DIR).without(seeds.unserved(version))
    cluster = model.Cluster(store=model.Store(), timeline=model.Timeline(1000.0), types=dict(served.types))
    return cluster, seeds.load(cluster, version=version, **options)


@pytest.fixture(params=["4.12", "4.14", "4.16"])
def cluster(request: pytest.FixtureRequest) -> Iterator[tuple[model.Cluster, seeds.SeedFacts]]:
    found = seeded(request.param, routes=6)
    yield found
    found[0].timeline.close()


def get(cluster: model.Cluster, key: str, name: str, namespace: str = "") -> dict[str, Any]:
    return cluster.store.get(cluster.types[key], name, namespace)


def secret_bytes(cluster: model.Cluster, namespace: str, name: str, key: str) -> bytes:
    return base64.b64decode(get(cluster, "secrets", name, namespace)["data"][key])


def test_every_seeded_object_passes_the_crd_schemas(cluster: tuple[model.Cluster, seeds.SeedFacts]) -> None:
    store, validator = cluster[0].store, validation.Validator(crds.DIR)
    checked = 0
    for rtype in cluster[0].types.values():
        for obj in store.list(rtype):
            _, warnings = validator.admit(rtype, obj, None)
            assert warnings == [], (rtype.key, obj["metadata"]["name"], warnings)
            if "status" in obj:
                _, warnings = validator.admit(rtype, obj, obj, subresource="status")
                assert warnings == [], (rtype.key, obj["metadata"]["name"], warnings)
            checked += 1
    assert checked > 90


def test_cluster_identity_is_consistent_across_objects(cluster: tuple[model.Cluster, seeds.SeedFacts]) -> None:
    c, facts = cluster
    infra = get(c, "infrastructures.config.openshift.io", "cluster")["status"]
    assert infra["apiServerURL"] == f"https://api.{facts.cluster_name}.{facts.base_domain}:6443"
    assert infra["apiServerInternalURI"] == f"https://api-int.{facts.domain}:6443"
    assert infra["controlPlaneTopology"] == infra["infrastructureTopology"] == "SingleReplica"
    assert get(c, "dnses.config.openshift.io", "cluster")["spec"]["baseDomain"] == facts.domain
    assert get(c, "ingresses.config.openshift.io", "cluster")["spec"]["domain"] == f"apps.{facts.domain}"
    controller = get(c, "ingresscontrollers.operator.openshift.io", "default", "openshift-ingress-operator")
    assert controller["status"]["domain"] == facts.apps_domain
    version = get(c, "clusterversions.config.openshift.io", "version")
    assert version["spec"]["clusterID"] == facts.cluster_id
    assert version["status"]["desired"]["version"] == facts.version
    assert version["status"]["history"][0]["state"] == "Completed"
    assert facts.version.startswith(facts.minor + ".")


def test_the_factory_mirror_matches_the_era(cluster: tuple[model.Cluster, seeds.SeedFacts]) -> None:
    c, facts = cluster
    expected = {"4.12": ICSPS, "4.14": ICSPS, "4.16": IDMS}
    assert facts.mirror_kind == expected[facts.minor]
    mirror = get(c, facts.mirror_kind, "factory-mirror")
    field = "repositoryDigestMirrors" if facts.mirror_kind == ICSPS else "imageDigestMirrors"
    assert list(mirror["spec"]) == [field]
    entries = mirror["spec"][field]
    assert [e["source"] for e in entries] == [
        "quay.io/openshift-release-dev/ocp-release",
        "quay.io/openshift-release-dev/ocp-v4.0-art-dev",
    ]
    assert all(m.startswith(seeds.FACTORY_REGISTRY) for e in entries for m in e["mirrors"])
    for key in {ICSPS, IDMS, ITMS} - {facts.mirror_kind}:
        assert key not in c.types or c.store.list(c.types[key]) == []


def test_mirror_set_types_are_served_from_4_13() -> None:
    assert seeds.unserved("4.12") == {IDMS, ITMS}
    assert seeds.unserved("4.14") == seeds.unserved("4.16") == frozenset()
    assert seeds.unserved("9.99") == frozenset()  # seeds.load refuses an unknown version, not this lookup


def test_registry_without_drops_types_from_lookup_and_discovery() -> None:
    every = registry.load(crds.DIR)
    older = every.without(frozenset({IDMS, ITMS}))
    assert older.lookup("config.openshift.io", "v1", "imagedigestmirrorsets") is None
    assert older.lookup("config.openshift.io", "v1", "imagetagmirrorsets") is None
    assert older.lookup("operator.openshift.io", "v1alpha1", "imagecontentsourcepolicies") is not None
    listed = registry.api_resource_list(older, "config.openshift.io", "v1")
    assert listed is not None
    names = {r["name"] for r in listed["resources"]}
    assert "clusterversions" in names and not names & {"imagedigestmirrorsets", "imagetagmirrorsets"}
    assert set(every.types) - set(older.types) == {IDMS, ITMS}
    assert older.builtin == every.builtin
    without_builtin = every.without(frozenset({"secrets"}))
    assert "secrets" not in without_builtin.builtin and without_builtin.lookup("", "v1", "secrets") is None


def test_the_4_12_node_reports_its_release() -> None:
    c, facts = seeded("4.12")
    try:
        info = get(c, "nodes", facts.node_name)["status"]["nodeInfo"]
    finally:
        c.timeline.close()
    assert (facts.version, facts.kube_version) == ("4.12.0", "v1.25.4+77bec7a")
    assert info["kubeletVersion"] == info["kubeProxyVersion"] == "v1.25.4+77bec7a"
    assert info["osImage"].startswith("Red Hat Enterprise Linux CoreOS 412.")
    assert "rhaos4.12" in info["containerRuntimeVersion"] and "el8" in info["kernelVersion"]


def test_cluster_operators_are_the_sno_set_and_healthy(cluster: tuple[model.Cluster, seeds.SeedFacts]) -> None:
    c, facts = cluster
    operators = c.store.list(c.types[CO])
    assert sorted(o["metadata"]["name"] for o in operators) == sorted(seeds.CLUSTER_OPERATORS)
    assert len(operators) >= 30
    for operator in operators:
        states = {cond["type"]: cond["status"] for cond in operator["status"]["conditions"]}
        assert states == {"Available": "True", "Progressing": "False", "Degraded": "False", "Upgradeable": "True"}
        assert operator["status"]["versions"] == [{"name": "operator", "version": facts.version}]


def test_node_and_pool_are_settled(cluster: tuple[model.Cluster, seeds.SeedFacts]) -> None:
    c, facts = cluster
    node = get(c, "nodes", facts.node_name)
    assert {"type": "InternalIP", "address": seeds.INTERNAL_IP} in node["status"]["addresses"]
    ready = next(cond for cond in node["status"]["conditions"] if cond["type"] == "Ready")
    assert ready["status"] == "True"
    pool = get(c, "machineconfigpools.machineconfiguration.openshift.io", "master")["status"]
    assert pool["updatedMachineCount"] == pool["machineCount"] == 1
    updated = next(cond for cond in pool["conditions"] if cond["type"] == "Updated")
    assert updated["status"] == "True"
    assert (
        node["metadata"]["annotations"]["machineconfiguration.openshift.io/currentConfig"]
        == pool["configuration"]["name"]
    )


def _is_ca(pem: bytes) -> bool:
    return bool(x509.load_pem_x509_certificate(pem).extensions.get_extension_for_class(x509.BasicConstraints).value.ca)


def test_signers_are_working_ca_key_pairs(cluster: tuple[model.Cluster, seeds.SeedFacts]) -> None:
    c, facts = cluster
    for namespace, name in (
        ("openshift-kube-apiserver-operator", "loadbalancer-serving-signer"),
        ("openshift-ingress-operator", "router-ca"),
    ):
        cert, key = secret_bytes(c, namespace, name, "tls.crt"), secret_bytes(c, namespace, name, "tls.key")
        assert get(c, "secrets", name, namespace)["type"] == "kubernetes.io/tls"
        assert certs.is_valid_pair(cert, key) and _is_ca(cert)
    lb = x509.load_pem_x509_certificate(facts.lb_signer_pem)
    assert lb.subject.rfc4514_string() == "CN=kube-apiserver-lb-signer"
    router_ca = x509.load_pem_x509_certificate(facts.router_ca_pem)
    assert router_ca.subject.rfc4514_string().startswith("CN=ingress-operator@")

    router = x509.load_pem_x509_certificate(secret_bytes(c, "openshift-ingress", "router-certs-default", "tls.crt"))
    router.verify_directly_issued_by(router_ca)
    assert f"*.{facts.apps_domain}" in certs.first_cert_names(router.public_bytes(serialization.Encoding.PEM))
    bundle = get(c, "configmaps", "default-ingress-cert", "openshift-config-managed")["data"]["ca-bundle.crt"]
    assert bundle.encode() == facts.router_ca_pem


def test_initial_serving_certificates(cluster: tuple[model.Cluster, seeds.SeedFacts]) -> None:
    c, facts = cluster
    api = c.serving.lookup("api", facts.api_host)
    assert api is not None and certs.is_valid_pair(api.cert_pem, api.key_pem)
    x509.load_pem_x509_certificate(api.cert_pem).verify_directly_issued_by(
        x509.load_pem_x509_certificate(facts.lb_signer_pem)
    )
    assert certs.first_cert_names(api.cert_pem) == [facts.api_host]
    router = c.serving.lookup("router", f"console-openshift-console.{facts.apps_domain}")
    assert router is not None
    assert router.cert_pem == secret_bytes(c, "openshift-ingress", "router-certs-default", "tls.crt")


def test_routes_cover_operator_user_and_unrelated_hosts(cluster: tuple[model.Cluster, seeds.SeedFacts]) -> None:
    c, facts = cluster
    by_key = {(r["metadata"]["namespace"], r["metadata"]["name"]): r for r in c.store.list(c.types[ROUTES])}
    generated = {
        key for key, r in by_key.items() if (r["metadata"].get("annotations") or {}).get("openshift.io/host.generated")
    }
    assert {("openshift-ingress-canary", "canary"), ("openshift-monitoring", "prometheus-k8s")} <= generated
    assert ("edge-app", "api-gateway") in generated and ("openshift-console", "console") not in generated
    assert by_key[("openshift-console", "console")]["spec"]["host"] == f"console-openshift-console.{facts.apps_domain}"
    assert by_key[("edge-data", "legacy")]["spec"]["host"] == seeds.UNRELATED_HOST
    terminations = {r["spec"].get("tls", {}).get("termination") for r in by_key.values()}
    assert {"edge", "passthrough", "reencrypt", None} <= terminations
    shop = by_key[("edge-app", "shop")]["spec"]["tls"]
    assert certs.is_valid_pair(shop["certificate"].encode(), shop["key"].encode())
    for route in by_key.values():
        entry = route["status"]["ingress"][0]
        assert entry["host"] == route["spec"]["host"] and entry["conditions"][0]["status"] == "True"
    assert len([key for key in by_key if key[0] == "edge-data" and key[1].startswith("app-")]) == 6


def test_pull_secret_is_a_dockerconfigjson_with_fake_auths(cluster: tuple[model.Cluster, seeds.SeedFacts]) -> None:
    c, _ = cluster
    secret = get(c, "secrets", "pull-secret", "openshift-config")
    assert secret["type"] == "kubernetes.io/dockerconfigjson"
    auths = json.loads(base64.b64decode(secret["data"][".dockerconfigjson"]))["auths"]
    assert {"quay.io", "registry.redhat.io", seeds.FACTORY_REGISTRY} <= set(auths)
    for entry in auths.values():
        user, _, token = base64.b64decode(entry["auth"]).decode().partition(":")
        assert user == "factory-bot" and len(token) >= 16


def test_five_thousand_routes_load_in_a_couple_of_seconds() -> None:
    began = time.monotonic()
    c, _ = seeded(routes=5000)
    elapsed = time.monotonic() - began
    c.timeline.close()
    routes = c.store.list(c.types[ROUTES])
    assert len([r for r in routes if r["metadata"]["name"].startswith("app-")]) == 5000
    print(f"seed with 5000 routes loaded in {elapsed:.2f}s")
    assert elapsed < 5.0


def test_expired_kubelet_cert_leaves_the_node_not_ready() -> None:
    c, facts = seeded(expired_kubelet_cert=True)
    try:
        node = get(c, "nodes", facts.node_name)
        ready = next(cond for cond in node["status"]["conditions"] if cond["type"] == "Ready")
        assert ready["status"] == "Unknown" and facts.expired_kubelet_cert
    finally:
        c.timeline.close()


def test_unknown_version_is_refused() -> None:
    c = model.Cluster(store=model.Store(), timeline=model.Timeline(1.0), types=dict(registry.load(crds.DIR).types))
    try:
        with pytest.raises(ValueError, match=r"4\.15"):
            seeds.load(c, version="4.15")
    finally:
        c.timeline.close()


@pytest.mark.simonly  # the simulator's seeds of several releases; a real cluster has one
@pytest.mark.parametrize("sim", [{"seed": "4.12"}, {"seed": "4.14"}, {"seed": "4.16"}], indirect=True)
def test_typed_client_reads_the_seeded_builtins(sim: simulator.Simulator) -> None:
    """The official client's typed models are strict: every built-in object must deserialize."""
    with config.new_client_from_config(str(sim.kubeconfig_path)) as api:
        core = client.CoreV1Api(api)
        assert core.read_node(sim.seed_facts.node_name).status.node_info.kubelet_version.startswith("v1.")
        assert len(core.list_namespace().items) == len(seeds.NAMESPACES)
        assert core.read_namespaced_secret("pull-secret", "openshift-config").type == "kubernetes.io/dockerconfigjson"
        assert core.list_config_map_for_all_namespaces().items
        version = client.VersionApi(api).get_code()
        assert version.git_version.startswith(sim.seed_facts.kube_version.split("+")[0][:5])


MIRROR_SET_PATHS = (
    "/apis/config.openshift.io/v1/imagedigestmirrorsets",
    "/apis/config.openshift.io/v1/imagetagmirrorsets",
)


@pytest.mark.simonly  # the simulator's seeds of several releases; a real cluster has one
@pytest.mark.parametrize("sim", [{"seed": "4.12"}], indirect=True)
def test_4_12_serves_only_image_content_source_policies(sim: simulator.Simulator, raw: Call) -> None:
    """As on a real 4.12 API server: discovery does not list IDMS/ITMS and every request for them is a 404."""
    config_v1 = {r["name"] for r in raw("GET", "/apis/config.openshift.io/v1").body["resources"]}
    assert "clusterversions" in config_v1
    assert not config_v1 & {"imagedigestmirrorsets", "imagetagmirrorsets"}
    operator = {r["name"] for r in raw("GET", "/apis/operator.openshift.io/v1alpha1").body["resources"]}
    assert "imagecontentsourcepolicies" in operator
    body = {"apiVersion": "config.openshift.io/v1", "kind": "ImageDigestMirrorSet", "metadata": {"name": "x"}}
    for path in MIRROR_SET_PATHS:
        for method, target, sent in (("GET", path, None), ("POST", path, body), ("GET", f"{path}/x", None)):
            reply = raw(method, target, sent)
            assert (reply.code, reply.body["reason"]) == (404, "NotFound"), (method, target)
    icsps = raw("GET", "/apis/operator.openshift.io/v1alpha1/imagecontentsourcepolicies").body["items"]
    assert [i["metadata"]["name"] for i in icsps] == ["factory-mirror"]
    assert icsps[0]["spec"]["repositoryDigestMirrors"][0]["mirrors"][0].startswith(seeds.FACTORY_REGISTRY)
    version = raw("GET", "/apis/config.openshift.io/v1/clusterversions/version").body
    assert version["status"]["desired"]["version"] == "4.12.0"
    assert raw("GET", "/version").body["minor"] == "25"


@pytest.mark.simonly  # the simulator's seeds of several releases; a real cluster has one
@pytest.mark.parametrize("sim", [{"seed": "4.14"}, {"seed": "4.16"}], indirect=True)
def test_later_seeds_serve_the_mirror_sets(sim: simulator.Simulator, raw: Call) -> None:
    config_v1 = {r["name"] for r in raw("GET", "/apis/config.openshift.io/v1").body["resources"]}
    assert {"imagedigestmirrorsets", "imagetagmirrorsets"} <= config_v1
    for path in MIRROR_SET_PATHS:
        assert raw("GET", path).code == 200

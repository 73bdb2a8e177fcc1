"""The simulated operators, driven as the agent drives them: official kubernetes client over HTTPS, TLS dials.

Speed 200 keeps each rollout well under two seconds of wall time while leaving transient states (Progressing=True,
an outage window) long enough to observe by polling.
"""

from __future__ import annotations

import base64
import json
import socket
import ssl
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from kubernetes import client, config

from snoreloc_sim.kube import certs, model, registry, validation
from snoreloc_sim.openshift import crds, operators, seeds, simulator

pytestmark = pytest.mark.simonly  # the simulator's operators, driven through its store and clock

T = TypeVar("T")
CONFIG = ("config.openshift.io", "v1")
CSRS = "certificatesigningrequests.certificates.k8s.io"
NEW_DOMAIN = "edge1.site.example.net"
NEW_APPS = f"apps.{NEW_DOMAIN}"


@pytest.fixture
def sim_options() -> dict[str, Any]:
    return {"speed": 200.0}


@pytest.fixture
def api(sim: simulator.Simulator) -> Iterator[client.ApiClient]:
    """A client that reports an outage at once (no urllib3 retries with backoff), so polling sees it."""
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(sim.kubeconfig_path), client_configuration=configuration)
    configuration.retries = 0
    with client.ApiClient(configuration) as api_client:
        yield api_client


@pytest.fixture
def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


def wait_for(probe: Callable[[], T | None], what: str, timeout: float = 15.0) -> T:
    """Poll `probe` until it returns something truthy; API errors (outages) count as not yet."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = probe()
        except Exception:
            value = None
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def operator_condition(custom: client.CustomObjectsApi, name: str, kind: str) -> dict[str, Any]:
    co = custom.get_cluster_custom_object(*CONFIG, "clusteroperators", name)
    return next(c for c in co["status"]["conditions"] if c["type"] == kind)


def condition_is(custom: client.CustomObjectsApi, name: str, kind: str, status: str) -> Callable[[], Any]:
    def probe() -> dict[str, Any] | None:
        found = operator_condition(custom, name, kind)
        return found if found["status"] == status else None

    return probe


def tls_secret_body(namespace: str, name: str, pair: certs.KeyPair) -> dict[str, Any]:
    data = {"tls.crt": base64.b64encode(pair.cert_pem).decode(), "tls.key": base64.b64encode(pair.key_pem).decode()}
    return {"metadata": {"name": name, "namespace": namespace}, "type": "kubernetes.io/tls", "data": data}


def presented(address: tuple[str, int], sni: str) -> bytes:
    """The DER certificate a TLS server presents for `sni`."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection(address, timeout=5) as raw, context.wrap_socket(raw, server_hostname=sni) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return der


def der(pem: bytes) -> bytes:
    return x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)


def api_address(sim: simulator.Simulator) -> tuple[str, int]:
    parsed = urllib.parse.urlsplit(sim.api_url)
    assert parsed.hostname is not None and parsed.port is not None
    return parsed.hostname, parsed.port


GENERATED = "openshift.io/host.generated"


def rollouts(sim: simulator.Simulator, operator: str) -> list[Any]:
    return [r for r in sim.cluster.recorder.rollouts if r.operator == operator]


def new_route(name: str, host: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"to": {"kind": "Service", "name": name}}
    if host:
        spec["host"] = host
    return {"apiVersion": "route.openshift.io/v1", "kind": "Route", "metadata": {"name": name}, "spec": spec}


def create_route(custom: client.CustomObjectsApi, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = custom.create_namespaced_custom_object(
        "route.openshift.io", "v1", namespace, "routes", body
    )
    return result


def get_route(custom: client.CustomObjectsApi, namespace: str, name: str) -> dict[str, Any]:
    result: dict[str, Any] = custom.get_namespaced_custom_object("route.openshift.io", "v1", namespace, "routes", name)
    return result


# routes


def test_route_without_host_gets_generated_host_and_router_admission(
    sim: simulator.Simulator, custom: client.CustomObjectsApi
) -> None:
    apps = sim.seed_facts.apps_domain
    created = create_route(custom, "edge-app", new_route("catalog"))
    assert created["spec"]["host"] == f"catalog-edge-app.{apps}"
    assert created["metadata"]["annotations"]["openshift.io/host.generated"] == "true"

    def admitted() -> dict[str, Any] | None:
        ingress = get_route(custom, "edge-app", "catalog").get("status", {}).get("ingress") or []
        return ingress[0] if ingress else None

    entry = wait_for(admitted, "router admission of the new route")
    assert entry["host"] == f"catalog-edge-app.{apps}"
    assert entry["routerCanonicalHostname"] == f"router-default.{apps}"
    assert entry["conditions"][0]["type"] == "Admitted" and entry["conditions"][0]["status"] == "True"


def test_route_with_explicit_host_is_not_marked_generated(
    sim: simulator.Simulator, custom: client.CustomObjectsApi
) -> None:
    created = create_route(custom, "edge-app", new_route("named", f"named.{sim.seed_facts.apps_domain}"))
    assert created["spec"]["host"] == f"named.{sim.seed_facts.apps_domain}"
    assert "openshift.io/host.generated" not in (created["metadata"].get("annotations") or {})


def test_a_generated_route_keeps_its_marker_when_its_host_changes_or_is_cleared(
    sim: simulator.Simulator, custom: client.CustomObjectsApi
) -> None:
    """openshift-apiserver never removes `openshift.io/host.generated`, and an update clearing the host keeps it."""
    created = create_route(custom, "edge-app", new_route("moved"))
    other = f"moved.other.{sim.seed_facts.apps_domain}"
    patch = {"spec": {"host": other}}
    custom.patch_namespaced_custom_object("route.openshift.io", "v1", "edge-app", "routes", "moved", patch)
    changed = get_route(custom, "edge-app", "moved")
    assert changed["spec"]["host"] == other
    assert changed["metadata"]["annotations"] == created["metadata"]["annotations"] == {GENERATED: "true"}
    for _attempt in range(5):  # the router's status writes may move the resourceVersion meanwhile
        cleared = get_route(custom, "edge-app", "moved")
        cleared["spec"].pop("host")
        try:
            custom.replace_namespaced_custom_object("route.openshift.io", "v1", "edge-app", "routes", "moved", cleared)
            break
        except client.ApiException as exc:
            assert exc.status == 409
    assert get_route(custom, "edge-app", "moved")["spec"]["host"] == other


def test_apps_domain_switches_after_openshift_apiserver_rollout(
    sim: simulator.Simulator, custom: client.CustomObjectsApi
) -> None:
    old_apps = sim.seed_facts.apps_domain
    before = operator_condition(custom, "openshift-apiserver", "Progressing")
    custom.patch_cluster_custom_object(*CONFIG, "ingresses", "cluster", {"spec": {"appsDomain": NEW_APPS}})
    progressing = wait_for(condition_is(custom, "openshift-apiserver", "Progressing", "True"), "rollout start")
    assert progressing["reason"] == "APIServerDeployment_NewGeneration"
    early = create_route(custom, "edge-app", new_route("early"))
    assert early["spec"]["host"].endswith(f".{old_apps}"), "the subdomain must not switch before the rollout ends"

    settled = wait_for(condition_is(custom, "openshift-apiserver", "Progressing", "False"), "rollout end")
    assert settled["lastTransitionTime"] > before["lastTransitionTime"]
    late = create_route(custom, "edge-app", new_route("late"))
    assert late["spec"]["host"] == f"late-edge-app.{NEW_APPS}"

    def canary_moved() -> bool:
        return bool(get_route(custom, "openshift-ingress-canary", "canary")["spec"]["host"].endswith(NEW_APPS))

    wait_for(canary_moved, "the canary route's owner to regenerate its host")
    assert get_route(custom, "edge-app", "shop")["spec"]["host"] == f"shop.{old_apps}"
    assert get_route(custom, "edge-app", "api-gateway")["spec"]["host"] == f"api-gateway-edge-app.{old_apps}"
    assert get_route(custom, "edge-data", "legacy")["spec"]["host"] == sim.seed_facts.unrelated_host
    assert len(rollouts(sim, "openshift-apiserver")) == 1


# kube-apiserver


def _probe_outage(core: client.CoreV1Api, until: Callable[[], bool], timeout: float = 15.0) -> int:
    """Call the API until `until()`; count the calls that failed (refused or 503)."""
    failures, deadline = 0, time.monotonic() + timeout
    while not until() and time.monotonic() < deadline:
        try:
            core.list_namespace(_request_timeout=2)
        except Exception:
            failures += 1
        time.sleep(0.005)
    return failures


def test_named_certificate_rollout_has_outage_then_serves_new_cert(
    sim: simulator.Simulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    host = f"api.{NEW_DOMAIN}"
    pair = certs.issue(certs.make_ca("site-ca"), [host])
    core.create_namespaced_secret("openshift-config", tls_secret_body("openshift-config", "api-site", pair))
    named = [{"names": [host], "servingCertificate": {"name": "api-site"}}]
    body = {"spec": {"servingCerts": {"namedCertificates": named}}}
    custom.patch_cluster_custom_object(*CONFIG, "apiservers", "cluster", body)

    progressing = wait_for(condition_is(custom, "kube-apiserver", "Progressing", "True"), "revision start")
    assert progressing["reason"] == "NodeInstaller"
    assert "0 nodes have achieved new revision" in progressing["message"]
    failures = _probe_outage(core, lambda: bool(rollouts(sim, "kube-apiserver")))
    assert failures > 0, "the revision must take the API down for a while"

    wait_for(condition_is(custom, "kube-apiserver", "Progressing", "False"), "revision end")
    assert presented(api_address(sim), host) == der(pair.cert_pem)
    lb_signed = presented(api_address(sim), sim.seed_facts.api_host)
    assert x509.load_der_x509_certificate(lb_signed).issuer.rfc4514_string() == "CN=kube-apiserver-lb-signer"


def test_named_certificate_with_missing_secret_degrades_then_recovers(
    sim: simulator.Simulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    host = f"api.{NEW_DOMAIN}"
    named = [{"names": [host], "servingCertificate": {"name": "api-typo"}}]
    custom.patch_cluster_custom_object(
        *CONFIG, "apiservers", "cluster", {"spec": {"servingCerts": {"namedCertificates": named}}}
    )
    degraded = wait_for(condition_is(custom, "kube-apiserver", "Degraded", "True"), "crash-loop degradation")
    assert "failed to load SNI cert and key" in degraded["message"] and "api-typo" in degraded["message"]
    assert degraded["reason"] == "StaticPods_Error"
    wait_for(lambda: presented(api_address(sim), host), "the API to come back on the last good revision")
    assert presented(api_address(sim), host) == presented(api_address(sim), "unknown.example.net"), "no SNI match"

    pair = certs.issue(certs.make_ca("site-ca"), [host])
    core.create_namespaced_secret("openshift-config", tls_secret_body("openshift-config", "api-typo", pair))
    wait_for(condition_is(custom, "kube-apiserver", "Degraded", "False"), "recovery after the secret appears")
    wait_for(condition_is(custom, "kube-apiserver", "Progressing", "False"), "the recovering revision to finish")
    assert presented(api_address(sim), host) == der(pair.cert_pem)


def _cors(custom: client.CustomObjectsApi, origin: str) -> None:
    patch = {"spec": {"additionalCORSAllowedOrigins": [origin]}}
    wait_for(lambda: custom.patch_cluster_custom_object(*CONFIG, "apiservers", "cluster", patch), "patch")


def test_changes_during_the_installer_move_the_node_straight_to_the_newest_revision(
    sim: simulator.Simulator, custom: client.CustomObjectsApi
) -> None:
    for index, origin in enumerate(("https://a.example.net", "https://b.example.net", "https://c.example.net")):
        _cors(custom, origin)
        if index == 0:
            wait_for(condition_is(custom, "kube-apiserver", "Progressing", "True"), "the first revision to start")
    wait_for(sim.cluster.timeline.idle, "the cluster to go quiet", timeout=20)
    assert len(rollouts(sim, "kube-apiserver")) == 1  # one restart
    assert sim.cluster.recorder.revisions == {"kube-apiserver": 3}  # the counter benchmarks and tests read


def test_a_change_after_the_old_server_stopped_is_a_rollout_of_its_own(
    sim: simulator.Simulator, custom: client.CustomObjectsApi
) -> None:
    _cors(custom, "https://a.example.net")
    wait_for(lambda: sim.cluster.availability.down() is not None, "the old server to stop", timeout=20)
    _cors(custom, "https://b.example.net")
    wait_for(sim.cluster.timeline.idle, "the cluster to go quiet", timeout=20)
    assert len(rollouts(sim, "kube-apiserver")) == 2
    assert sim.cluster.recorder.revisions == {"kube-apiserver": 2}


# ingress operator


def test_default_certificate_rolls_out_router_and_publishes_bundle(
    sim: simulator.Simulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    pair = certs.issue(certs.make_ca("site-ingress-ca"), [f"*.{NEW_APPS}", NEW_APPS])
    core.create_namespaced_secret("openshift-ingress", tls_secret_body("openshift-ingress", "apps-site", pair))
    body = {"spec": {"defaultCertificate": {"name": "apps-site"}}}
    custom.patch_namespaced_custom_object(
        "operator.openshift.io", "v1", "openshift-ingress-operator", "ingresscontrollers", "default", body
    )
    wait_for(condition_is(custom, "ingress", "Progressing", "True"), "ingress rollout start")
    wait_for(condition_is(custom, "ingress", "Progressing", "False"), "ingress rollout end")
    assert presented(sim.router_address, f"anything.{NEW_APPS}") == der(pair.cert_pem)
    bundle = core.read_namespaced_config_map("default-ingress-cert", "openshift-config-managed").data["ca-bundle.crt"]
    assert bundle == pair.cert_pem.decode()
    controller = custom.get_namespaced_custom_object(
        "operator.openshift.io", "v1", "openshift-ingress-operator", "ingresscontrollers", "default"
    )
    states = {c["type"]: c["status"] for c in controller["status"]["conditions"]}
    assert states["Available"] == "True" and states["Progressing"] == "False" and states["Degraded"] == "False"


def test_default_certificate_missing_secret_degrades_ingress(
    sim: simulator.Simulator, custom: client.CustomObjectsApi
) -> None:
    before = presented(sim.router_address, f"x.{sim.seed_facts.apps_domain}")
    body = {"spec": {"defaultCertificate": {"name": "no-such-secret"}}}
    custom.patch_namespaced_custom_object(
        "operator.openshift.io", "v1", "openshift-ingress-operator", "ingresscontrollers", "default", body
    )
    degraded = wait_for(condition_is(custom, "ingress", "Degraded", "True"), "ingress degradation")
    assert "no-such-secret" in degraded["message"]
    assert presented(sim.router_address, f"x.{sim.seed_facts.apps_domain}") == before


# console and authentication


def _component_routes(secret: str) -> dict[str, Any]:
    entries = [
        {"namespace": "openshift-console", "name": "console", "hostname": f"console.{NEW_APPS}"},
        {"namespace": "openshift-authentication", "name": "oauth-openshift", "hostname": f"oauth.{NEW_APPS}"},
    ]
    for entry in entries:
        entry["servingCertKeyPairSecret"] = {"name": secret}
    return {"spec": {"componentRoutes": entries}}


def test_component_routes_give_console_and_oauth_custom_hosts(
    sim: simulator.Simulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    pair = certs.issue(certs.make_ca("site-ingress-ca"), [f"console.{NEW_APPS}", f"oauth.{NEW_APPS}"])
    core.create_namespaced_secret("openshift-config", tls_secret_body("openshift-config", "apps-site", pair))
    custom.patch_cluster_custom_object(*CONFIG, "ingresses", "cluster", _component_routes("apps-site"))
    wait_for(condition_is(custom, "console", "Progressing", "True"), "console rollout start")
    wait_for(condition_is(custom, "console", "Progressing", "False"), "console rollout end")
    wait_for(condition_is(custom, "authentication", "Progressing", "False"), "authentication rollout end")
    wait_for(sim.cluster.timeline.idle, "the kube-apiserver revision for the new oauth metadata")

    custom_route = get_route(custom, "openshift-console", "console-custom")
    assert custom_route["spec"]["host"] == f"console.{NEW_APPS}"
    assert get_route(custom, "openshift-authentication", "oauth-openshift")["spec"]["host"] == f"oauth.{NEW_APPS}"
    status = custom.get_cluster_custom_object(*CONFIG, "ingresses", "cluster")["status"]["componentRoutes"]
    current = {(e["namespace"], e["name"]): e["currentHostnames"] for e in status}
    assert current[("openshift-console", "console")] == [f"console.{NEW_APPS}"]
    assert current[("openshift-authentication", "oauth-openshift")] == [f"oauth.{NEW_APPS}"]
    wait_for(lambda: presented(sim.router_address, f"console.{NEW_APPS}") == der(pair.cert_pem), "console cert")
    assert presented(sim.router_address, f"oauth.{NEW_APPS}") == der(pair.cert_pem)
    console = custom.get_cluster_custom_object(*CONFIG, "consoles", "cluster")
    assert console["status"]["consoleURL"] == f"https://console.{NEW_APPS}"

    custom.patch_cluster_custom_object(*CONFIG, "ingresses", "cluster", {"spec": {"componentRoutes": None}})
    default_oauth = f"oauth-openshift.{sim.seed_facts.apps_domain}"

    def reverted() -> bool:
        route = get_route(custom, "openshift-authentication", "oauth-openshift")
        return bool(route["spec"]["host"] == default_oauth)

    wait_for(reverted, "the oauth route to return to its default host")
    wait_for(condition_is(custom, "console", "Progressing", "False"), "console revert")
    wait_for(lambda: _gone(custom), "console-custom to be removed")


def _gone(custom: client.CustomObjectsApi) -> bool:
    try:
        get_route(custom, "openshift-console", "console-custom")
    except client.ApiException as exc:
        return exc.status == 404
    return False


def test_component_route_with_non_tls_secret_degrades_console(
    custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    body = {"metadata": {"name": "not-tls", "namespace": "openshift-config"}, "data": {"x": "eQ=="}}
    core.create_namespaced_secret("openshift-config", body)
    custom.patch_cluster_custom_object(*CONFIG, "ingresses", "cluster", _component_routes("not-tls"))
    degraded = wait_for(condition_is(custom, "console", "Degraded", "True"), "console degradation")
    assert "not-tls" in degraded["message"]
    wait_for(condition_is(custom, "authentication", "Degraded", "True"), "authentication degradation")


# machine-config


def _pool(custom: client.CustomObjectsApi) -> dict[str, Any]:
    result: dict[str, Any] = custom.get_cluster_custom_object(
        "machineconfiguration.openshift.io", "v1", "machineconfigpools", "master"
    )
    return result


def pool_is(custom: client.CustomObjectsApi, kind: str) -> Callable[[], bool]:
    def probe() -> bool:
        return any(c["type"] == kind and c["status"] == "True" for c in _pool(custom)["status"]["conditions"])

    return probe


def _new_pull_secret(core: client.CoreV1Api, registry: str) -> None:
    auths = {registry: {"auth": base64.b64encode(b"site-bot:not-a-real-token").decode()}}
    data = {".dockerconfigjson": base64.b64encode(json.dumps({"auths": auths}).encode()).decode()}
    core.patch_namespaced_secret("pull-secret", "openshift-config", {"data": data})


def test_pull_secret_change_updates_the_pool_without_reboot(
    sim: simulator.Simulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    _new_pull_secret(core, "registry.site.example.net")
    wait_for(pool_is(custom, "Updating"), "pool update start")
    pool = _pool(custom)["status"]
    assert pool["updatedMachineCount"] == 0 and pool["machineCount"] == 1
    wait_for(pool_is(custom, "Updated"), "pool update end")
    assert _pool(custom)["status"]["updatedMachineCount"] == 1
    assert core.list_namespace(_request_timeout=2).items, "no reboot: the API stayed up"
    assert len(rollouts(sim, "machine-config")) == 1


@pytest.fixture
def bare() -> Iterator[model.Cluster]:
    """A seeded cluster with its operators and no HTTP in front: for timing rules finer than a request takes."""
    cluster = model.Cluster(
        store=model.Store(), timeline=model.Timeline(100.0), types=dict(registry.load(crds.DIR).types)
    )
    seeds.load(cluster)
    operators.start(cluster)
    yield cluster
    cluster.timeline.close()


def test_two_changes_a_second_apart_give_one_pool_update(bare: model.Cluster) -> None:
    secrets = bare.types["secrets"]
    pull = bare.store.get(secrets, "pull-secret", "openshift-config")
    pull["data"] = {".dockerconfigjson": base64.b64encode(b'{"auths": {}}').decode()}
    bare.store.update(secrets, pull)
    time.sleep(bare.timeline.scaled(1.0))
    bare.store.delete(bare.types["imagedigestmirrorsets.config.openshift.io"], "factory-mirror")
    wait_for(lambda: [r for r in bare.recorder.rollouts if r.operator == "machine-config"], "the pool update")
    wait_for(bare.timeline.idle, "the cluster to go quiet")
    updates = [r for r in bare.recorder.rollouts if r.operator == "machine-config"]
    assert len(updates) == 1
    assert "pull-secret" in updates[0].trigger and "factory-mirror" in updates[0].trigger


def test_a_change_during_a_pool_update_queues_one_follow_up(bare: model.Cluster) -> None:
    configmaps, images = bare.types["configmaps"], bare.types["images.config.openshift.io"]
    body = {"metadata": {"name": "registry-cas", "namespace": "openshift-config"}, "data": {"r.example..5000": "x"}}
    bare.store.create(configmaps, body)
    image = bare.store.get(images, "cluster")
    image["spec"]["additionalTrustedCA"] = {"name": "registry-cas"}
    bare.store.update(images, image)
    wait_for(lambda: _pool_state(bare) == "Updating", "the first update to start")
    for value in ("y", "z"):
        cm = bare.store.get(configmaps, "registry-cas", "openshift-config")
        cm["data"] = {"r.example..5000": value}
        bare.store.update(configmaps, cm)
    wait_for(lambda: len([r for r in bare.recorder.rollouts if r.operator == "machine-config"]) == 2, "follow-up")
    wait_for(bare.timeline.idle, "the cluster to go quiet")
    updates = [r for r in bare.recorder.rollouts if r.operator == "machine-config"]
    assert len(updates) == 2 and updates[1].trigger == "configmap openshift-config/registry-cas"
    assert updates[1].started >= updates[0].finished


def _pool_state(cluster: model.Cluster) -> str:
    pool = cluster.store.get(cluster.types["machineconfigpools.machineconfiguration.openshift.io"], "master")
    return next(
        c["type"] for c in pool["status"]["conditions"] if c["status"] == "True" and c["type"].startswith("Updat")
    )


def test_machine_config_change_reboots_the_node(
    sim: simulator.Simulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    body = {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": "99-master-site", "labels": {"machineconfiguration.openshift.io/role": "master"}},
        "spec": {"config": {"ignition": {"version": "3.2.0"}}, "kernelArguments": ["nosmt"]},
    }
    custom.create_cluster_custom_object("machineconfiguration.openshift.io", "v1", "machineconfigs", body)
    wait_for(pool_is(custom, "Updating"), "pool update start")
    failures = _probe_outage(core, lambda: bool(rollouts(sim, "machine-config")))
    assert failures > 0, "a MachineConfig change reboots the node: the API must go away"
    wait_for(pool_is(custom, "Updated"), "pool update end")


def test_a_chrony_machine_config_reboots_the_node(
    sim: simulator.Simulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    """/etc/chrony.conf is not among the files the daemon applies without a reboot (MCO `pkg/daemon/update.go`)."""
    files = [{"path": "/etc/chrony.conf", "mode": 420, "overwrite": True, "contents": {"source": "data:,server%20x"}}]
    body = {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": "99-master-chrony", "labels": {"machineconfiguration.openshift.io/role": "master"}},
        "spec": {"config": {"ignition": {"version": "3.2.0"}, "storage": {"files": files}}},
    }
    reboots = sim.cluster.recorder.reboots
    custom.create_cluster_custom_object("machineconfiguration.openshift.io", "v1", "machineconfigs", body)
    wait_for(pool_is(custom, "Updating"), "pool update start")
    failures = _probe_outage(core, lambda: bool(rollouts(sim, "machine-config")))
    assert failures > 0, "a chrony MachineConfig reboots the node: the API must go away"
    wait_for(pool_is(custom, "Updated"), "pool update end")
    assert sim.cluster.recorder.reboots == reboots + 1


def test_an_ssh_key_change_updates_the_pool_without_reboot(
    sim: simulator.Simulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    group = ("machineconfiguration.openshift.io", "v1", "machineconfigs")
    users = [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEdge site"]}]
    patch = {"spec": {"config": {"passwd": {"users": users}}}}
    custom.patch_cluster_custom_object(*group, "99-master-ssh", patch)
    wait_for(pool_is(custom, "Updating"), "pool update start")
    failures = _probe_outage(core, lambda: bool(rollouts(sim, "machine-config")))
    assert failures == 0, "an SSH key change is applied without a reboot: the API stays up"
    wait_for(pool_is(custom, "Updated"), "pool update end")


PROXY = ("config.openshift.io", "v1", "proxies", "cluster")


def test_a_no_proxy_change_reboots_the_node(
    sim: simulator.Simulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    custom.patch_cluster_custom_object(*PROXY, {"spec": {"noProxy": ".site.example.net"}})
    wait_for(pool_is(custom, "Updating"), "pool update start")
    failures = _probe_outage(core, lambda: bool(rollouts(sim, "machine-config")))
    assert failures > 0, "a proxy URL or noProxy change reboots the node: the API must go away"
    wait_for(pool_is(custom, "Updated"), "pool update end")


def test_a_proxy_trusted_ca_alone_updates_the_pool_without_reboot(
    sim: simulator.Simulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    body = {"metadata": {"name": "proxy-ca", "namespace": "openshift-config"}, "data": {"ca-bundle.crt": "x"}}
    core.create_namespaced_config_map("openshift-config", body)
    custom.patch_cluster_custom_object(*PROXY, {"spec": {"trustedCA": {"name": "proxy-ca"}}})
    wait_for(pool_is(custom, "Updating"), "pool update start")
    failures = _probe_outage(core, lambda: bool(rollouts(sim, "machine-config")))
    assert failures == 0, "a trusted CA alone is applied without a reboot: the API stays up"
    wait_for(pool_is(custom, "Updated"), "pool update end")


# kubelet certificates


@pytest.mark.parametrize("sim", [{"speed": 200.0, "expired_kubelet_cert": True}], indirect=True)
def test_expired_kubelet_cert_yields_pending_csrs_and_approval_signs(
    sim: simulator.Simulator, api: client.ApiClient
) -> None:
    csr_api = client.CertificatesV1Api(api)
    node = sim.seed_facts.node_name
    pending = wait_for(lambda: csr_api.list_certificate_signing_request().items, "the kubelet's CSRs")
    assert len(pending) == 3 and all(not (c.status and c.status.conditions) for c in pending)
    ours = [c for c in pending if c.spec.username == f"system:node:{node}"]
    decoys = [c for c in pending if c.spec.username != f"system:node:{node}"]
    assert {c.spec.signer_name for c in ours} == {
        "kubernetes.io/kube-apiserver-client-kubelet",
        "kubernetes.io/kubelet-serving",
    }
    assert all("system:nodes" in c.spec.groups for c in ours) and len(decoys) == 1
    serving = next(c for c in ours if c.spec.signer_name == "kubernetes.io/kubelet-serving")
    request = x509.load_pem_x509_csr(base64.b64decode(serving.spec.request))
    sans = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert node in sans.get_values_for_type(x509.DNSName)
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == [sim.seed_facts.internal_ip]

    for csr in ours:
        approved = {"type": "Approved", "status": "True", "reason": "Test", "message": "approved by the test"}
        csr.status = client.V1CertificateSigningRequestStatus(conditions=[approved])
        csr_api.replace_certificate_signing_request_approval(csr.metadata.name, csr)

    def signed() -> list[Any]:
        items = csr_api.list_certificate_signing_request().items
        return [c for c in items if c.status and c.status.certificate]

    issued = wait_for(lambda: len(signed()) == 2 and signed(), "the signer to issue both certificates")
    assert {c.metadata.name for c in issued} == {c.metadata.name for c in ours}
    for csr in issued:
        cert = x509.load_pem_x509_certificate(base64.b64decode(csr.status.certificate))
        assert cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value == f"system:node:{node}"
    decoy = csr_api.read_certificate_signing_request(decoys[0].metadata.name)
    assert not (decoy.status and (decoy.status.certificate or decoy.status.conditions))

    def ready() -> bool:
        conditions = client.CoreV1Api(api).read_node(node).status.conditions
        return any(c.type == "Ready" and c.status == "True" for c in conditions)

    wait_for(ready, "the node to report Ready with its new client certificate")


@pytest.mark.parametrize("sim", [{"speed": 200.0, "seed": "4.14"}], indirect=True)
def test_removing_the_icsp_on_4_14_updates_the_pool_without_reboot(
    sim: simulator.Simulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    custom.delete_cluster_custom_object(
        "operator.openshift.io", "v1alpha1", "imagecontentsourcepolicies", "factory-mirror"
    )
    wait_for(pool_is(custom, "Updating"), "pool update start")
    failures = _probe_outage(core, lambda: bool(rollouts(sim, "machine-config")))
    assert failures == 0, "mirror changes are applied live (no reboot)"
    pool = _pool(custom)
    assert next(c for c in pool["status"]["conditions"] if c["type"] == "Updated")["status"] == "True"
    node = core.read_node(sim.seed_facts.node_name)
    annotations = node.metadata.annotations
    assert annotations["machineconfiguration.openshift.io/currentConfig"] == pool["status"]["configuration"]["name"]
    assert annotations["machineconfiguration.openshift.io/state"] == "Done"


def test_router_presents_a_user_routes_own_certificate(
    sim: simulator.Simulator, custom: client.CustomObjectsApi
) -> None:
    shop = get_route(custom, "edge-app", "shop")
    assert presented(sim.router_address, shop["spec"]["host"]) == der(shop["spec"]["tls"]["certificate"].encode())
    assert presented(sim.router_address, f"other.{sim.seed_facts.apps_domain}") != der(
        shop["spec"]["tls"]["certificate"].encode()
    )


def test_every_operator_write_is_schema_valid() -> None:
    """Drive every operator once at model level, then check all objects (main and status) against the CRDs."""
    cluster = model.Cluster(
        store=model.Store(), timeline=model.Timeline(1000.0), types=dict(registry.load(crds.DIR).types)
    )
    facts = seeds.load(cluster, expired_kubelet_cert=True)
    operators.start(cluster)
    try:
        _drive_every_operator(cluster, facts)
        expected = {"kube-apiserver", "openshift-apiserver", "ingress", "console", "authentication", "machine-config"}
        wait_for(lambda: {r.operator for r in cluster.recorder.rollouts} == expected, "every operator to roll out")

        def signed() -> list[Any]:
            return [c for c in cluster.store.list(cluster.types[CSRS]) if c.get("status", {}).get("certificate")]

        wait_for(lambda: len(signed()) == 2, "the two node CSRs to be signed")
        wait_for(cluster.timeline.idle, "the cluster to go quiet")
        validator, checked = validation.Validator(crds.DIR), 0
        for rtype in cluster.types.values():
            for obj in cluster.store.list(rtype):
                validator.admit(rtype, obj, None)
                if "status" in obj:
                    validator.admit(rtype, obj, obj, subresource="status")
                checked += 1
        assert checked > 90
    finally:
        cluster.timeline.close()


def _drive_every_operator(cluster: model.Cluster, facts: seeds.SeedFacts) -> None:
    store, types = cluster.store, cluster.types
    pair = certs.issue(certs.make_ca("site-ca"), [f"api.{NEW_DOMAIN}", f"*.{NEW_APPS}"])
    for namespace in ("openshift-config", "openshift-ingress"):
        store.create(types["secrets"], tls_secret_body(namespace, "site", pair))

    def edit(key: str, name: str, spec: dict[str, Any], namespace: str = "") -> None:
        obj = store.get(types[key], name, namespace)
        obj["spec"].update(spec)
        store.update(types[key], obj)

    named = [{"names": [f"api.{NEW_DOMAIN}"], "servingCertificate": {"name": "site"}}]
    edit("apiservers.config.openshift.io", "cluster", {"servingCerts": {"namedCertificates": named}})
    ingress = _component_routes("site")["spec"] | {"appsDomain": NEW_APPS}
    edit("ingresses.config.openshift.io", "cluster", ingress)
    edit(
        "ingresscontrollers.operator.openshift.io",
        "default",
        {"defaultCertificate": {"name": "site"}},
        "openshift-ingress-operator",
    )
    mc = {"metadata": {"name": "99-master-site"}, "spec": {"config": {"ignition": {"version": "3.2.0"}}}}
    store.create(types["machineconfigs.machineconfiguration.openshift.io"], mc)
    route = {"metadata": {"name": "fresh", "namespace": "edge-app"}, "spec": {"to": {"kind": "Service", "name": "x"}}}
    for hook in cluster.admission:
        hook(types["routes.route.openshift.io"], route, None)
    store.create(types["routes.route.openshift.io"], route)
    csrs = types["certificatesigningrequests.certificates.k8s.io"]
    for csr in wait_for(lambda: store.list(csrs), "the kubelet's CSRs"):
        if csr["spec"]["username"] == f"system:node:{facts.node_name}":
            csr["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "Test", "message": ""}]}
            store.update(csrs, csr, status_only=True)

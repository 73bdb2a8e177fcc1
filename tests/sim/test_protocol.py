"""The simulator speaks the kube API as the official client and kubectl expect: TLS, tokens, discovery, Status."""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

import kubernetes
import pytest
import yaml
from kubernetes.client import exceptions
from kubernetes.dynamic import DynamicClient

from snoreloc_sim import cli
from snoreloc_sim.kube import certs, model
from snoreloc_sim.openshift import simulator

from .conftest import Call, api_client

# The simulator's own HTTP layer (dropped connections, its token, its listener); see test_real_answers.py for
# the answers checked against a real cluster too.
pytestmark = pytest.mark.simonly

KUBECTL = shutil.which("kubectl")


def _configmap(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_kubeconfig_is_private_and_names_the_sim_context(sim: simulator.Simulator) -> None:
    assert sim.kubeconfig_path.stat().st_mode & 0o777 == 0o600
    config = yaml.safe_load(sim.kubeconfig_path.read_text())
    assert config["current-context"] == "sim"
    assert config["clusters"][0]["cluster"]["server"] == sim.api_url
    assert config["users"][0]["user"]["token"] == sim.token


def test_server_certificate_is_trusted_only_through_the_sim_ca(sim: simulator.Simulator, raw: Call) -> None:
    with socket.create_connection(("127.0.0.1", sim.running.api.port), timeout=5) as plain:
        with pytest.raises(ssl.SSLCertVerificationError):
            ssl.create_default_context().wrap_socket(plain, server_hostname="127.0.0.1")
    reply = raw("GET", "/readyz")
    assert (reply.code, reply.body) == (200, "ok")


@pytest.mark.parametrize("token", ["", "wrong-token"])
def test_missing_or_wrong_token_is_unauthorized(sim: simulator.Simulator, token: str, raw: Call) -> None:
    reply = raw("GET", "/api/v1/namespaces", token=token)
    assert reply.code == 401
    assert reply.body["kind"] == "Status"
    assert reply.body["reason"] == "Unauthorized"


def test_wrong_token_through_the_official_client(sim: simulator.Simulator, tmp_path: Path) -> None:
    config = yaml.safe_load(sim.kubeconfig_path.read_text())
    config["users"][0]["user"]["token"] = "not-the-token"
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(config))
    client = kubernetes.config.new_client_from_config(str(tmp_path / "kubeconfig"))
    with pytest.raises(exceptions.ApiException) as caught:
        kubernetes.client.CoreV1Api(client).list_namespace()
    assert caught.value.status == 401


@pytest.mark.parametrize("path", ["/readyz", "/livez", "/healthz"])
def test_health_endpoints_need_no_token(sim: simulator.Simulator, path: str, raw: Call) -> None:
    assert raw("GET", path, token="").code == 200


@pytest.mark.parametrize(("sim", "minor"), [({"seed": "4.14"}, "27"), ({"seed": "4.16"}, "29")], indirect=["sim"])
def test_version_matches_the_seeded_openshift(sim: simulator.Simulator, minor: str) -> None:
    info = kubernetes.client.VersionApi(api_client(sim)).get_code()
    assert (info.major, info.minor) == ("1", minor)
    assert info.git_version.startswith(f"v1.{minor}.")


def test_discovery_lists_the_openshift_groups(sim: simulator.Simulator) -> None:
    client = api_client(sim)
    groups = {g.name for g in kubernetes.client.ApisApi(client).get_api_versions().groups}
    expected = {"config.openshift.io", "operator.openshift.io", "route.openshift.io", "certificates.k8s.io"}
    assert expected | {"machineconfiguration.openshift.io"} <= groups
    core = {r.name for r in kubernetes.client.CoreV1Api(client).get_api_resources().resources}
    assert {"namespaces", "secrets", "configmaps", "nodes", "pods", "namespaces/status"} <= core


def test_resource_lists_carry_verbs_scope_and_subresources(sim: simulator.Simulator, raw: Call) -> None:
    routes = raw("GET", "/apis/route.openshift.io/v1").body
    by_name = {r["name"]: r for r in routes["resources"]}
    assert by_name["routes"]["namespaced"] is True
    assert by_name["routes"]["kind"] == "Route"
    assert {"create", "delete", "get", "list", "patch", "update"} <= set(by_name["routes"]["verbs"])
    assert by_name["routes/status"]["verbs"] == ["get", "patch", "update"]
    csr = raw("GET", "/apis/certificates.k8s.io/v1").body
    names = {r["name"] for r in csr["resources"]}
    assert {"certificatesigningrequests/approval", "certificatesigningrequests/status"} <= names
    config = raw("GET", "/apis/config.openshift.io/v1").body
    operators = next(r for r in config["resources"] if r["name"] == "clusteroperators")
    assert operators["namespaced"] is False
    assert "co" in operators.get("shortNames", [])


def test_dynamic_client_finds_and_lists_cluster_operators(sim: simulator.Simulator) -> None:
    dynamic = DynamicClient(api_client(sim))
    operators = dynamic.resources.get(api_version="config.openshift.io/v1", kind="ClusterOperator")
    listed = operators.get()
    assert listed.kind == "ClusterOperatorList"
    assert any(item.metadata.name == "kube-apiserver" for item in listed.items)


def test_unknown_paths_and_types_are_404_status(sim: simulator.Simulator, raw: Call) -> None:
    for path in ("/apis/nope.example.com/v1", "/apis/route.openshift.io/v1/widgets", "/api/v2"):
        reply = raw("GET", path)
        assert reply.code == 404, path
        assert reply.body["kind"] == "Status"


def test_create_twice_is_409_already_exists(sim: simulator.Simulator) -> None:
    core = kubernetes.client.CoreV1Api(api_client(sim))
    core.create_namespaced_config_map("default", _configmap("twice", a="1"))
    with pytest.raises(exceptions.ApiException) as caught:
        core.create_namespaced_config_map("default", _configmap("twice", a="2"))
    assert caught.value.status == 409
    status = yaml.safe_load(caught.value.body)
    assert status["reason"] == "AlreadyExists"
    assert status["details"] == {"name": "twice", "group": "", "kind": "configmaps"}


def test_missing_object_and_missing_namespace_are_404(sim: simulator.Simulator) -> None:
    core = kubernetes.client.CoreV1Api(api_client(sim))
    with pytest.raises(exceptions.ApiException) as missing:
        core.read_namespaced_config_map("absent", "default")
    assert missing.value.status == 404
    assert yaml.safe_load(missing.value.body)["message"] == 'configmaps "absent" not found'
    with pytest.raises(exceptions.ApiException) as no_namespace:
        core.create_namespaced_config_map("no-such-namespace", _configmap("x"))
    assert no_namespace.value.status == 404
    assert "no-such-namespace" in yaml.safe_load(no_namespace.value.body)["message"]


def test_namespace_mismatch_between_url_and_body_is_400(sim: simulator.Simulator, raw: Call) -> None:
    body = _configmap("mismatch")
    body["metadata"]["namespace"] = "openshift-config"
    reply = raw("POST", "/api/v1/namespaces/default/configmaps", body)
    assert reply.code == 400
    assert reply.body["reason"] == "BadRequest"


def test_generate_name_creates_a_unique_name(sim: simulator.Simulator) -> None:
    core = kubernetes.client.CoreV1Api(api_client(sim))
    body = {"metadata": {"generateName": "gen-"}, "data": {}}
    first = core.create_namespaced_config_map("default", body)
    second = core.create_namespaced_config_map("default", body)
    assert first.metadata.name.startswith("gen-")
    assert first.metadata.name != second.metadata.name


def test_table_requests_get_plain_json(sim: simulator.Simulator, raw: Call) -> None:
    connection_reply = raw("GET", "/apis/config.openshift.io/v1/clusteroperators")
    assert connection_reply.body["kind"] == "ClusterOperatorList"
    assert connection_reply.headers["content-type"] == "application/json"


def test_dry_run_validates_but_does_not_store(sim: simulator.Simulator, raw: Call) -> None:
    reply = raw("POST", "/api/v1/namespaces/default/configmaps?dryRun=All", _configmap("dry", a="1"))
    assert reply.code == 201
    assert reply.body["metadata"]["name"] == "dry"
    assert raw("GET", "/api/v1/namespaces/default/configmaps/dry").code == 404


def test_field_validation_strict_refuses_and_warn_warns(sim: simulator.Simulator, raw: Call) -> None:
    body = {
        "apiVersion": "config.openshift.io/v1",
        "kind": "ClusterOperator",
        "metadata": {"name": "strictness"},
        "spec": {"bogus": 1},
    }
    path = "/apis/config.openshift.io/v1/clusteroperators"
    strict = raw("POST", f"{path}?fieldValidation=Strict", body)
    assert strict.code == 400
    assert 'unknown field "spec.bogus"' in strict.body["message"]
    warned = raw("POST", f"{path}?fieldValidation=Warn", body)
    assert warned.code == 201
    assert "spec.bogus" in warned.headers.get("warning", "")
    assert "bogus" not in warned.body["spec"]


def test_schema_violations_come_back_as_422_with_causes(sim: simulator.Simulator, raw: Call) -> None:
    route = {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": "no-target"},
        "spec": {"host": "x.example.com"},
    }
    reply = raw("POST", "/apis/route.openshift.io/v1/namespaces/default/routes", route)
    assert reply.code == 422
    assert reply.body["reason"] == "Invalid"
    assert any(cause["field"].startswith("spec.to") for cause in reply.body["details"]["causes"])


def test_watch_streams_changes_until_its_timeout(sim: simulator.Simulator) -> None:
    core = kubernetes.client.CoreV1Api(api_client(sim))

    def later() -> None:
        time.sleep(0.3)
        core.create_namespaced_config_map("default", _configmap("watched", a="1"))

    writer = threading.Thread(target=later)
    writer.start()
    watch = kubernetes.watch.Watch()
    seen = []
    began = time.monotonic()
    for event in watch.stream(core.list_namespaced_config_map, "default", timeout_seconds=2):
        seen.append((event["type"], event["object"].metadata.name))
        if event["object"].metadata.name == "watched":
            watch.stop()
    writer.join()
    assert ("ADDED", "watched") in seen
    assert time.monotonic() - began < 5


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
@pytest.mark.parametrize(
    "args", [["get", "clusteroperators"], ["get", "routes", "-A"], ["get", "co", "dns", "-o", "json"]]
)
def test_kubectl_works_unmodified(sim: simulator.Simulator, args: list[str]) -> None:
    assert KUBECTL is not None
    result = subprocess.run(
        [KUBECTL, "--kubeconfig", str(sim.kubeconfig_path), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    if args[1] == "clusteroperators":
        assert "kube-apiserver" in result.stdout
    if args[1] == "routes":
        assert "openshift-console" in result.stdout


def _serve_command(*extra: str) -> list[str]:
    program = (
        "import argparse, sys\n"
        "from snoreloc_sim import cli\n"
        "parser = argparse.ArgumentParser()\n"
        "cli.add_arguments(parser)\n"
        "sys.exit(cli.run(parser.parse_args(sys.argv[1:])))\n"
    )
    return [sys.executable, "-c", program, "serve", *extra]


def test_sim_serve_starts_fast_serves_and_stops_on_sigterm(tmp_path: Path) -> None:
    out = tmp_path / "kc"
    began = time.monotonic()
    process = subprocess.Popen(
        _serve_command("--kubeconfig-out", str(out), "--speed", "100"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(3)]
        ready = time.monotonic() - began
        print(f"snoreloc sim serve: ready in {ready:.2f}s (process start included)")
        assert lines[0].startswith(f"kubeconfig: {out}")
        assert ready < 5.0
        assert out.stat().st_mode & 0o777 == 0o600
        core = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(str(out)))
        assert any(ns.metadata.name == "openshift-config" for ns in core.list_namespace().items)
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=10)
    assert code == 0


def _presented(address: tuple[str, int], sni: str | None) -> bytes:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(address, timeout=5) as plain, context.wrap_socket(plain, server_hostname=sni) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return ssl.DER_cert_to_PEM_cert(der).encode()


def _first(pem: bytes) -> bytes:
    return pem.split(b"-----END CERTIFICATE-----")[0].strip()


def test_listeners_present_the_certificate_served_for_the_sni_name(sim: simulator.Simulator) -> None:
    ca = certs.make_ca("test-signer")
    console = certs.issue(ca, ["console.apps.example.test"])
    sim.cluster.serving.set("router", "console.apps.example.test", model.ServedCert(console.cert_pem, console.key_pem))
    presented = _presented(sim.router_address, "console.apps.example.test")
    assert _first(presented) == _first(console.cert_pem)
    assert _first(_presented(sim.router_address, "other.example.test")) != _first(console.cert_pem)
    api = certs.issue(ca, ["api.example.test"])
    sim.cluster.serving.set("api", "api.example.test", model.ServedCert(api.cert_pem, api.key_pem))
    assert _first(_presented(("127.0.0.1", sim.running.api.port), "api.example.test")) == _first(api.cert_pem)
    assert _first(_presented(("127.0.0.1", sim.running.api.port), None)) != _first(api.cert_pem)


def test_router_answers_any_request_with_200(sim: simulator.Simulator) -> None:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    connection = http.client.HTTPSConnection(*sim.router_address, context=context, timeout=5)
    connection.request("GET", "/anything")
    assert connection.getresponse().status == 200
    connection.close()


def test_cel_report_prints_the_counts(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    assert cli.run(parser.parse_args(["cel-report"])) == 0
    assert "CEL rules" in capsys.readouterr().out

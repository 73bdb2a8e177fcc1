"""Rollback, faults, CSRs, many routes and a killed run: the relocation under the conditions of the field.

Tests that need the simulator's faults or seeds are `simonly`; the rest also run against a real cluster."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc.engine import pipeline
from snoreloc_sim.pytest_plugin import ClusterTarget

from .conftest import (
    NEW_DOMAIN,
    WATCHED,
    Relocation,
    add_legacy_named_certificate,
    contains,
    make_client,
    real_seconds,
    spec_of,
)


def snapshot(r: Relocation) -> dict[str, Any]:
    watched = {str(ref): spec_of(r.get(ref)) for ref in WATCHED}
    watched["routes"] = {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o["spec"] for o in r.client.list(kube.ROUTES)
    }
    watched["mirrors"] = sorted(o["metadata"]["name"] for o in r.client.list(kube.IDMS))
    return watched


def test_rollback_restores_every_original_exactly(relocation: Relocation) -> None:
    add_legacy_named_certificate(relocation)
    ingress = kube.Ref(kube.INGRESSES, "cluster")
    existing_route = {"namespace": "openshift-console", "name": "console-extra", "hostname": "extra.example.org"}
    factory_routes = relocation.get(ingress)["spec"].get("componentRoutes")
    relocation.client.patch(ingress, {"spec": {"componentRoutes": [existing_route]}})
    relocation.undo.append(lambda: relocation.client.patch(ingress, {"spec": {"componentRoutes": factory_routes}}))
    before = snapshot(relocation)
    relocation.run()
    assert snapshot(relocation) != before
    result = pipeline.rollback(relocation.paths, relocation.client, relocation.clock)
    assert "Secret openshift-config/snoreloc-api-cert" in result.deleted
    assert str(relocation.factory_mirror) in result.recreated
    after = snapshot(relocation)
    routes_before, routes_after = before.pop("routes"), after.pop("routes")
    assert after.keys() == before.keys()
    for name, original in before.items():
        assert contains(after[name], original), name
    controller = after["IngressController openshift-ingress-operator/default"]["spec"]
    assert "defaultCertificate" not in controller
    assert "appsDomain" not in after["Ingress cluster"]["spec"]
    assert after["Ingress cluster"]["spec"]["componentRoutes"] == [existing_route]
    assert "additionalTrustedCA" not in after["Image cluster"]["spec"]
    for name, spec in routes_before.items():  # generated hosts of operator routes are the owners' to put back
        if not name.startswith("openshift-"):
            assert routes_after[name] == spec, name
    assert relocation.client.find(kube.Ref(kube.SECRETS, "snoreloc-api-cert", "openshift-config")) is None
    assert list(relocation.paths.backups.glob("*.json")) == []
    assert relocation.status()["state"] == "rolled-back"


@pytest.mark.simonly  # the simulator's fault injection
@pytest.mark.parametrize(
    "sim",
    [
        {"faults": "seed=3,503=0.08,429=0.08,retry-after=1"},
        {"faults": "seed=5,500=0.05,reset=0.05"},
        {"faults": "seed=11,conflict=0.3"},
    ],
    indirect=True,
    ids=["503-429", "500-reset", "conflict"],
)
def test_faults_complete_or_resume(relocation: Relocation) -> None:
    for _attempt in range(3):
        try:
            relocation.run()
            break
        except errors.TemporaryError:
            continue
    assert relocation.status()["state"] in ("done", "done-with-warnings")  # the seeded shop route's certificate
    named = relocation.get(kube.Ref(kube.APISERVERS, "cluster"))["spec"]["servingCerts"]["namedCertificates"]
    assert [n["servingCertificate"]["name"] for n in named].count("snoreloc-api-cert") == 1


@pytest.mark.simonly  # the simulator's fault injection (hung requests)
@pytest.mark.parametrize("sim", [{"faults": "seed=2,hang=0.03,hang-for=3s"}], indirect=True)
def test_hung_requests_time_out_and_are_retried(cluster_target: ClusterTarget, tmp_path: Path) -> None:
    client, clock = make_client(cluster_target, kube.Policy(read_timeout=0.3, attempts=20))
    relocation = Relocation(cluster_target, tmp_path, client, clock)
    started = time.monotonic()
    relocation.run()
    assert relocation.status()["state"] == "done-with-warnings"  # the seeded shop route's own certificate
    assert time.monotonic() - started < 60


@pytest.mark.simonly  # the simulator's scripted outage
@pytest.mark.parametrize("sim", [{"faults": "outage=1200s@0s"}], indirect=True)
def test_an_api_that_never_answers_fails_as_temporary(cluster_target: ClusterTarget, tmp_path: Path) -> None:
    client, clock = make_client(cluster_target, kube.Policy(attempts=50, total=120.0))
    relocation = Relocation(cluster_target, tmp_path, client, clock)
    with pytest.raises(kube.Unreachable) as info:
        relocation.run()
    assert info.value.exit_code == 75
    assert client.requests < 50


@pytest.mark.simonly  # the simulator's availability windows
def test_one_request_rides_out_an_sno_api_restart(relocation: Relocation) -> None:
    """A kube-apiserver restart on SNO is 503s, then about a minute of refused connections, often more (origin PR
    #26337): one request with the default policy waits it out, bounded by the policy's time and not cut short by
    its count of attempts (twelve jittered attempts used to give up within a minute, failing a relocation step)."""
    cluster = relocation.sim.cluster
    wall = cluster.timeline.scaled
    cluster.availability.outage(wall(5), "503")
    cluster.availability.outage(wall(150), "refuse", start_in=wall(5))
    client, clock = make_client(relocation.target)
    started = clock.monotonic()
    infrastructure = client.get(kube.Ref(kube.INFRASTRUCTURES, "cluster"))
    assert infrastructure["metadata"]["name"] == "cluster"
    assert 150 <= clock.monotonic() - started < kube.Policy().total
    assert client.requests > 12


def test_api_errors_are_mapped_without_retrying(relocation: Relocation) -> None:
    client = relocation.client
    requests = client.requests
    with pytest.raises(kube.NotFound):
        client.get(kube.Ref(kube.SECRETS, "absent", "openshift-config"))
    assert client.requests == requests + 1
    with pytest.raises(kube.Invalid):
        client.patch(kube.Ref(kube.ROUTES, "shop", "edge-app"), {"spec": {"host": "Not A Host!"}})
    with pytest.raises(kube.Conflict):
        client.create(kube.SECRETS, {"metadata": {"name": "pull-secret", "namespace": "openshift-config"}})


def test_wrong_token_is_permission_denied(cluster_target: ClusterTarget, tmp_path: Path) -> None:
    """The cluster under test's API and CA, with a token no one issued: 401, which is exit 77, not a retry."""
    document = yaml.safe_load(Path(cluster_target.kubeconfig).read_text())
    contexts = {c["name"]: c["context"] for c in document.get("contexts") or []}
    cluster_name = contexts[document["current-context"]]["cluster"]
    (cluster,) = [c for c in document["clusters"] if c["name"] == cluster_name]
    forged = {"apiVersion": "v1", "kind": "Config", "clusters": [cluster], "current-context": "forged",
              "contexts": [{"name": "forged", "context": {"cluster": cluster_name, "user": "forged"}}],
              "users": [{"name": "forged", "user": {"token": "wrong-token-0000"}}]}  # fmt: skip
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(forged))
    client = kube.Client.from_kubeconfig(str(tmp_path / "kubeconfig"), clock=make_client(cluster_target)[1])
    with pytest.raises(errors.PermissionDenied) as caught:
        client.list(kube.CLUSTEROPERATORS)
    assert caught.value.exit_code == 77
    assert client.requests == 1


@pytest.mark.simonly  # the simulator's seed plants an expired kubelet certificate and a decoy CSR
@pytest.mark.parametrize("sim", [{"expired_kubelet_cert": True}], indirect=True)
def test_csrs_of_this_node_are_approved_and_the_decoy_is_not(relocation: Relocation) -> None:
    relocation.run()
    csrs = relocation.client.list(kube.CSRS)
    approved = {
        c["metadata"]["name"]: c["spec"]
        for c in csrs
        if any(cond["type"] == "Approved" for cond in (c.get("status") or {}).get("conditions") or [])
    }
    node = f"system:node:{relocation.facts.node_name}"
    signers = {spec["signerName"] for spec in approved.values()}
    assert signers == {"kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving"}
    assert all(spec["username"] == node for spec in approved.values())
    pending = [c for c in csrs if c["metadata"]["name"] not in approved]
    assert pending, "the decoy must stay pending"
    assert all(c["spec"]["username"] != node for c in pending)


@pytest.mark.simonly  # the simulator's seed of 2,000 routes, timed on its clock
@pytest.mark.parametrize("sim", [{"routes": 2000}], indirect=True)
def test_thousands_of_routes_move_in_seconds(relocation: Relocation) -> None:
    relocation.run(step="preflight")
    relocation.run(step="certificates")
    relocation.run(step="domain")
    relocation.run(step="settle")
    started = time.monotonic()
    relocation.run(step="routes", route_workers=16)
    took = time.monotonic() - started
    counts = relocation.status()["steps"]["routes"]["details"]["counts"]
    assert counts["migrated"] >= 2000
    old = relocation.facts.apps_domain
    stale = [r for r in relocation.client.list(kube.ROUTES) if r["spec"].get("host", "").endswith("." + old)]
    assert [f"{r['metadata']['namespace']}/{r['metadata']['name']}" for r in stale] == [
        "openshift-console/console",
        "openshift-console/downloads",
    ]  # moved by componentRoutes (console-custom, downloads-custom), never rewritten by us
    print(f"routes step for {counts['migrated']} routes: {took:.1f}s")
    assert took < 120


def _write_site(tmp_path: Path) -> Path:
    site = tmp_path / "site.yaml"
    site.write_text(
        "apiVersion: snoreloc.io/v1alpha1\nkind: SiteConfig\nmetadata:\n  name: site7\n"
        f"spec:\n  domain: {NEW_DOMAIN}\n  removeMirrors: [factory-mirror]\n"
    )
    return site


def _cli(r: Relocation, site: Path) -> list[str]:
    host, port = r.target.router_address
    return [
        sys.executable, "-m", "snoreloc", "run", "--cluster-only", "--site-config", str(site),
        "--kubeconfig", r.target.kubeconfig, "--root", str(r.root),
        "--ingress-endpoint", f"{host}:{port}", "--time-scale", str(r.target.speed), "--poll-interval", "2",
        "--output", "json",
    ]  # fmt: skip


@pytest.mark.allow_subprocess
@pytest.mark.slow
def test_kill_9_mid_run_then_rerun_converges(relocation: Relocation, tmp_path: Path) -> None:
    site = _write_site(tmp_path)
    status = relocation.paths.status
    proc = subprocess.Popen(_cli(relocation, site), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + real_seconds(relocation, 3600.0)
    while time.monotonic() < deadline and proc.poll() is None:
        doc = json.loads(status.read_text()) if status.exists() else {}
        if doc.get("steps", {}).get("domain", {}).get("state") in ("running", "done"):
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    json.loads(status.read_text())  # never torn
    bound = real_seconds(relocation, 7200.0)
    done = subprocess.run(_cli(relocation, site), capture_output=True, text=True, timeout=bound, check=False)
    assert done.returncode in (0, 2), done.stderr
    report = json.loads(done.stdout)
    assert report["urls"]["console"] == f"https://console-openshift-console.apps.{NEW_DOMAIN}"
    client = relocation.client
    named = client.get(kube.Ref(kube.APISERVERS, "cluster"))["spec"]["servingCerts"]["namedCertificates"]
    assert [n for n in named if n["servingCertificate"]["name"] == "snoreloc-api-cert"] == [
        {"names": [f"api.{NEW_DOMAIN}"], "servingCertificate": {"name": "snoreloc-api-cert"}}
    ]
    routes = client.get(kube.Ref(kube.INGRESSES, "cluster"))["spec"]["componentRoutes"]
    keys = [(r["namespace"], r["name"]) for r in routes]
    assert len(keys) == len(set(keys))
    assert {("openshift-console", "console"), ("openshift-console", "downloads")} <= set(keys)
    assert ("openshift-authentication", "oauth-openshift") in keys
    secrets = [s["metadata"]["name"] for s in client.list(kube.SECRETS, "openshift-config")]
    assert secrets.count("snoreloc-api-cert") == 1
    again = subprocess.run(_cli(relocation, site), capture_output=True, text=True, timeout=bound, check=False)
    assert again.returncode in (0, 2)
    assert all(s["skipped_at"] for s in json.loads(again.stdout)["steps"])

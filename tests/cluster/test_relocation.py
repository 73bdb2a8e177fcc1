"""A full relocation of the factory cluster over HTTPS, checked object by object, and what re-runs do.

These run against the simulator, or a real cluster when one is configured (see `conftest.py`); the simulator's own
write counter is an extra witness only when there is one."""

from __future__ import annotations

import base64
import json
import time
from datetime import datetime

import pytest

from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc.engine import plan
from snoreloc.pki import certs
from snoreloc.siteconfig import model
from snoreloc.steps import base
from snoreloc.steps.openshift import serving
from snoreloc_sim.kube import certs as sim_certs

from .conftest import CA_PEM, NEW_DOMAIN, PULL_SECRET, SITE_AUTH, Relocation, add_legacy_named_certificate, site_config

APPS = f"apps.{NEW_DOMAIN}"
GENERATED = "openshift.io/host.generated"  # the API never removes it, also when a client changes the host


def secret_pair(r: Relocation, name: str, namespace: str) -> tuple[bytes, bytes]:
    data = r.get(kube.Ref(kube.SECRETS, name, namespace))["data"]
    return base64.b64decode(data["tls.crt"]), base64.b64decode(data["tls.key"])


def routes_by_name(r: Relocation) -> dict[tuple[str, str], kube.Obj]:
    return {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in r.client.list(kube.ROUTES)}


def check_certificates(r: Relocation) -> None:
    now = r.clock.now()
    api = secret_pair(r, "snoreloc-api-cert", "openshift-config")
    assert certs.check_pair(*api, [f"api.{NEW_DOMAIN}", f"api-int.{NEW_DOMAIN}"], now) == []
    assert certs.parse_chain(api[0])[0].issuer == certs.parse_chain(r.facts.lb_signer_pem)[0].subject
    ingress = secret_pair(r, "snoreloc-ingress-cert", "openshift-config")
    assert certs.check_pair(*ingress, [f"*.{APPS}", APPS], now) == []
    assert secret_pair(r, "snoreloc-ingress-cert", "openshift-ingress") == ingress
    assert certs.parse_chain(ingress[0])[0].issuer == certs.parse_chain(r.facts.router_ca_pem)[0].subject


def check_domain(r: Relocation) -> None:
    named = r.get(kube.Ref(kube.APISERVERS, "cluster"))["spec"]["servingCerts"]["namedCertificates"]
    ours = [n for n in named if n["servingCertificate"]["name"] == "snoreloc-api-cert"]
    assert ours == [{"names": [f"api.{NEW_DOMAIN}"], "servingCertificate": {"name": "snoreloc-api-cert"}}]
    spec = r.get(kube.Ref(kube.INGRESSES, "cluster"))["spec"]
    assert spec["appsDomain"] == APPS
    assert spec["domain"] == r.facts.apps_domain  # immutable: untouched
    routes = {(c["namespace"], c["name"]): c for c in spec["componentRoutes"]}
    assert routes[("openshift-console", "console")] == {
        "namespace": "openshift-console",
        "name": "console",
        "hostname": f"console-openshift-console.{APPS}",
        "servingCertKeyPairSecret": {"name": "snoreloc-ingress-cert"},
    }
    assert routes[("openshift-console", "downloads")]["hostname"] == f"downloads-openshift-console.{APPS}"
    assert routes[("openshift-authentication", "oauth-openshift")]["hostname"] == f"oauth-openshift.{APPS}"
    controller = r.get(kube.Ref(kube.INGRESSCONTROLLERS, "default", "openshift-ingress-operator"))
    assert controller["spec"]["defaultCertificate"] == {"name": "snoreloc-ingress-cert"}


def check_cluster_config(r: Relocation) -> None:
    pull = r.get(kube.Ref(kube.SECRETS, "pull-secret", "openshift-config"))
    assert json.loads(base64.b64decode(pull["data"][".dockerconfigjson"])) == json.loads(PULL_SECRET)
    idms = r.get(kube.Ref(kube.IDMS, "snoreloc-digest-mirrors"))["spec"]["imageDigestMirrors"]
    assert idms == [{"source": "quay.io/openshift-release-dev", "mirrors": ["mirror.edge7.example.net:5000/ocp"]}]
    itms = r.get(kube.Ref(kube.ITMS, "snoreloc-tag-mirrors"))["spec"]["imageTagMirrors"]
    assert itms == [{"source": "registry.redhat.io", "mirrors": ["mirror.edge7.example.net:5000/rh"]}]
    assert r.factory_mirror is not None
    assert r.client.find(r.factory_mirror) is None
    image = r.get(kube.Ref(kube.IMAGES, "cluster"))
    name = image["spec"]["additionalTrustedCA"]["name"]
    data = r.get(kube.Ref(kube.CONFIGMAPS, name, "openshift-config"))["data"]
    assert data["mirror.edge7.example.net..5000"] == CA_PEM


def check_routes(r: Relocation, before: dict[tuple[str, str], kube.Obj]) -> None:
    after = routes_by_name(r)
    old_apps = r.facts.apps_domain
    for key, route in before.items():
        assert key in after, f"route {key} was deleted"
        host = route["spec"].get("host", "")
        new = after[key]
        assert new["spec"].get("tls") == route["spec"].get("tls"), f"TLS of {key} changed"
        assert new["metadata"].get("annotations") == route["metadata"].get("annotations"), f"annotations of {key}"
        if key[0].startswith("openshift-") or not host.endswith("." + old_apps):
            continue
        assert new["spec"]["host"] == host[: -len(old_apps)] + APPS
    assert after[("edge-app", "api-gateway")]["metadata"]["annotations"][GENERATED] == "true"
    legacy = after[("edge-data", "legacy")]
    assert legacy["spec"]["host"] == r.facts.unrelated_host
    assert legacy["spec"] == before[("edge-data", "legacy")]["spec"]
    assert legacy["metadata"].get("generation") == before[("edge-data", "legacy")]["metadata"].get("generation")
    canary = after[("openshift-ingress-canary", "canary")]
    assert canary["spec"]["host"].endswith("." + APPS)  # regenerated by its operator


def check_report(r: Relocation) -> None:
    rep = r.report()
    assert rep["state"] == "done-with-warnings"  # shop's own certificate does not cover its new host
    [warning] = [w for w in rep["warnings"] if "edge-app/shop" in w]
    assert f"does not cover shop.{APPS}" in warning
    assert rep["urls"] == {
        "console": f"https://console-openshift-console.{APPS}",
        "oauth_login": f"https://oauth-openshift.{APPS}",
        "api": f"https://api.{NEW_DOMAIN}:6443",
    }
    assert "update APIServer cluster" in rep["changed"]
    table = {(row["namespace"], row["name"]): row for row in rep["routes"]}
    assert table[("edge-app", "shop")]["result"] == "migrated"
    assert table[("edge-data", "legacy")]["result"] == "untouched"
    assert table[("openshift-ingress-canary", "canary")]["result"] in ("regenerated", "on the new domain")
    assert table[("openshift-console", "console")]["result"] == "moved by componentRoutes"
    assert [s["step"] for s in rep["steps"]] == [
        "csr", "preflight", "certificates", "cluster-config", "ssh-keys", "catalogs", "domain", "routes", "settle",
        "admin-access", "node-labels", "manifests", "proxy", "ntp", "final-settle",
    ]  # fmt: skip
    assert all(isinstance(s["seconds"], float) for s in rep["steps"])


@pytest.mark.parametrize(
    "sim",
    [pytest.param({"seed": "4.14"}, marks=pytest.mark.simonly), {"seed": "4.16"}],  # simonly: a second release
    indirect=True,
    ids=["4.14", "4.16"],
)
def test_full_relocation(relocation: Relocation) -> None:
    """On a real cluster this runs once, as "4.16": its version is what it is."""
    before = routes_by_name(relocation)
    result = relocation.run()
    assert set(result.actions.values()) == {"ran"}
    check_certificates(relocation)
    check_domain(relocation)
    check_cluster_config(relocation)
    check_routes(relocation, before)
    check_report(relocation)
    api = certs.parse_chain(kube.dial_tls(relocation.client.endpoint, f"api.{NEW_DOMAIN}"))[0]
    assert certs.covers(certs.info(api).sans, f"api.{NEW_DOMAIN}")
    console = kube.dial_tls(relocation.target.router_address, f"console-openshift-console.{APPS}")
    ingress = secret_pair(relocation, "snoreloc-ingress-cert", "openshift-config")
    assert certs.parse_chain(console)[0] == certs.parse_chain(ingress[0])[0]


@pytest.mark.parametrize("sim", [{"speed": 60.0}], indirect=True)  # a revision of 4 s, not 0.4 s: room to overlap
def test_routes_move_while_the_kube_apiserver_revision_runs(relocation: Relocation) -> None:
    """Routes need only openshift-apiserver's rollout: they are done before the kube-apiserver revision ends, and
    the settle after them still waits for that revision."""
    relocation.run()
    status = relocation.status()
    steps = status["steps"]
    [revision] = [r for r in status["rollout_log"] if r["name"] == "kube-apiserver"]
    routes_done = datetime.fromisoformat(steps["routes"]["finished"])
    assert routes_done < datetime.fromisoformat(revision["finished"])
    assert steps["routes"]["details"]["counts"]["migrated"] >= 1
    assert datetime.fromisoformat(steps["settle"]["finished"]) >= datetime.fromisoformat(revision["finished"])


def server_writes(r: Relocation) -> int | None:
    """The simulator's count of writes it received (None on a real cluster, which keeps no such count for us)."""
    return r.sim.cluster.recorder.writes if r.sim is not None else None


def test_rerun_with_the_same_config_makes_no_writes(relocation: Relocation) -> None:
    relocation.run()
    received = server_writes(relocation)
    client_writes = relocation.client.writes
    result = relocation.run()
    assert set(result.actions.values()) == {"skipped"}
    assert relocation.client.writes == client_writes
    assert server_writes(relocation) == received


def test_changed_pull_secret_reruns_only_cluster_config(relocation: Relocation) -> None:
    relocation.run()
    other = json.dumps({"auths": {"other.example.net": {"auth": base64.b64encode(b"o:p-9876").decode()}}}).encode()
    changed = site_config(pull_secret=model.PullSecret(json.loads(other)))
    writes = relocation.client.writes
    result = relocation.run(changed)
    assert result.actions["cluster-config"] == "ran"
    assert result.actions["final-settle"] in ("ran", "skipped")  # skipped only once the pool updated again
    mutating = {k: v for k, v in result.actions.items() if k in ("certificates", "domain", "routes", "csr")}
    assert set(mutating.values()) == {"skipped"}
    assert relocation.client.writes - writes == 1  # the pull secret, and nothing else
    pull = relocation.get(kube.Ref(kube.SECRETS, "pull-secret", "openshift-config"))
    assert json.loads(base64.b64decode(pull["data"][".dockerconfigjson"])) == json.loads(other)


def test_merge_mode_keeps_the_factory_registries(relocation: Relocation) -> None:
    secret = kube.Ref(kube.SECRETS, "pull-secret", "openshift-config")
    factory = json.loads(base64.b64decode(relocation.get(secret)["data"][".dockerconfigjson"]))["auths"]
    relocation.run(site_config(pull_secret=model.PullSecret(json.loads(PULL_SECRET), model.PullSecretMode.MERGE)))
    merged = json.loads(base64.b64decode(relocation.get(secret)["data"][".dockerconfigjson"]))["auths"]
    assert merged == {**factory, **json.loads(PULL_SECRET)["auths"]}


def test_user_supplied_certificates_are_served(relocation: Relocation) -> None:
    now = relocation.clock.now()
    ca = _make_ca()
    api = certs.issue_serving(ca[0], ca[1], [f"api.{NEW_DOMAIN}", f"api-int.{NEW_DOMAIN}"], now=now)
    ingress = certs.issue_serving(ca[0], ca[1], [f"*.{APPS}", APPS], now=now)
    supplied = model.Certificates(api=model.CertKeyPair(*api), ingress=model.CertKeyPair(*ingress))
    relocation.run(site_config(certificates=supplied))
    assert secret_pair(relocation, "snoreloc-api-cert", "openshift-config") == api
    assert secret_pair(relocation, "snoreloc-ingress-cert", "openshift-ingress") == ingress
    served = kube.dial_tls(relocation.client.endpoint, f"api.{NEW_DOMAIN}")
    assert certs.parse_chain(served)[0] == certs.parse_chain(api[0])[0]


def test_user_certificate_for_the_wrong_names_is_refused(relocation: Relocation) -> None:
    ca = _make_ca()
    wrong = certs.issue_serving(ca[0], ca[1], ["api.elsewhere.example.org"], now=relocation.clock.now())
    with pytest.raises(errors.ConfigError, match="API certificate from the site-config cannot be used"):
        relocation.run(site_config(certificates=model.Certificates(api=model.CertKeyPair(*wrong))))
    assert relocation.client.find(kube.Ref(kube.SECRETS, "snoreloc-api-cert", "openshift-config")) is None


def test_a_broken_secret_never_reaches_the_apiserver(relocation: Relocation) -> None:
    relocation.run(step="preflight")
    relocation.run(step="certificates")
    ref = kube.Ref(kube.SECRETS, "snoreloc-api-cert", "openshift-config")
    relocation.client.patch(ref, {"data": {"tls.crt": base64.b64encode(b"not a certificate").decode()}})
    apiserver = relocation.get(kube.Ref(kube.APISERVERS, "cluster"))
    with pytest.raises(
        errors.PermanentStepError, match="not pointing the cluster at Secret openshift-config/snoreloc-api"
    ):
        relocation.run(step="domain")
    assert relocation.get(kube.Ref(kube.APISERVERS, "cluster"))["spec"] == apiserver["spec"]
    relocation.client.delete(ref)
    with pytest.raises(errors.PermanentStepError, match="missing"):
        relocation.run(step="domain")
    assert relocation.get(kube.Ref(kube.APISERVERS, "cluster"))["spec"] == apiserver["spec"]


@pytest.mark.simonly  # it forges an operator's status, which a real operator would overwrite at once
def test_unhealthy_cluster_is_refused_before_any_change(relocation: Relocation) -> None:
    ref = kube.Ref(kube.CLUSTEROPERATORS, "etcd")
    co = relocation.get(ref)
    for cond in co["status"]["conditions"]:
        if cond["type"] == "Degraded":
            cond.update(status="True", message="EtcdMembersDegraded: 1 member unhealthy")
    relocation.client.request("PUT", ref.path("status"), body=co)
    writes = relocation.client.writes
    with pytest.raises(errors.UnavailableError, match="etcd"):
        relocation.run()
    assert relocation.client.writes == writes
    error = relocation.status()["steps"]["preflight"]["error"]
    assert error["hint"].startswith("Wait for the cluster")
    assert "preflight: waited 1800s for the node Ready and the required ClusterOperators" in error["message"]
    assert "ClusterOperator etcd: Degraded=True: EtcdMembersDegraded: 1 member unhealthy" in error["message"]


MACHINECONFIGS = kube.Resource("machineconfiguration.openshift.io", "v1", "machineconfigs", "MachineConfig", False)


@pytest.mark.simonly  # on a real node the MachineConfig would mean a drain and a reboot, twice with its removal
def test_preflight_waits_for_a_cluster_still_settling_after_boot(relocation: Relocation) -> None:
    role = {"machineconfiguration.openshift.io/role": "master"}
    config = {"ignition": {"version": "3.2.0"}}
    relocation.client.create(
        MACHINECONFIGS, {"metadata": {"name": "99-boot", "labels": role}, "spec": {"config": config}}
    )
    operator = kube.Ref(kube.CLUSTEROPERATORS, "machine-config")
    deadline = time.monotonic() + 30
    while base.conditions(relocation.get(operator)).get("Progressing", {}).get("status") != "True":
        assert time.monotonic() < deadline, "the machine-config operator never started its rollout"
        time.sleep(0.01)
    result = relocation.run(step="preflight")
    assert result.actions["preflight"] == "ran"
    assert base.conditions(relocation.get(operator))["Progressing"]["status"] == "False"
    assert relocation.status()["steps"]["preflight"]["state"] == "done"


def test_plan_shows_changes_and_writes_nothing(relocation: Relocation) -> None:
    received, writes = server_writes(relocation), relocation.client.writes
    result = relocation.run(dry_run=True)
    text = plan.render(result.plans)
    assert (server_writes(relocation), relocation.client.writes) == (received, writes)
    assert "~ update APIServer cluster" in text
    assert f"+  appsDomain: {APPS}" in text
    assert "+  mirror.edge7.example.net..5000: |" in text
    assert "+ create Secret openshift-config/snoreloc-api-cert" in text
    assert SITE_AUTH not in text and "PRIVATE KEY-----\n" not in text
    assert "- delete" in text  # the factory mirror


def _make_ca() -> tuple[bytes, bytes]:
    pair = sim_certs.make_ca("snoreloc-test-ca")
    return pair.cert_pem, pair.key_pem


def test_domain_merges_with_existing_named_certificates(relocation: Relocation) -> None:
    ref = kube.Ref(kube.APISERVERS, "cluster")
    add_legacy_named_certificate(relocation)
    other = {"names": ["legacy.example.org"], "servingCertificate": {"name": "legacy-cert"}}
    relocation.run()
    named = relocation.get(ref)["spec"]["servingCerts"]["namedCertificates"]
    assert named == [
        other,
        {"names": [f"api.{NEW_DOMAIN}"], "servingCertificate": {"name": serving.API_SECRET_CONFIG.name}},
    ]
    served = kube.dial_tls(relocation.client.endpoint, "legacy.example.org")
    assert certs.covers(certs.info(certs.parse_chain(served)[0]).sans, "legacy.example.org")
    assert serving.API_SECRET == "snoreloc-api-cert"

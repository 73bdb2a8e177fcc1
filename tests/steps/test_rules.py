"""The pure rules inside the cluster steps: list merging, route classification, CSR decisions, settle timing."""

from __future__ import annotations

import base64
import ipaddress
from datetime import UTC, datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from snoreloc.siteconfig import model
from snoreloc.steps.cluster import cluster_config, domain, routes
from snoreloc.steps.openshift import node_csrs, rollouts
from snoreloc_sim.kube import certs as sim_certs

OLD = "apps.sno1.factory.example.com"
NEW = "apps.edge.example.net"


def test_named_certificates_keep_others_and_replace_ours() -> None:
    theirs = {"names": ["legacy.example.org"], "servingCertificate": {"name": "legacy"}}
    stale = {"names": ["api.edge.example.net"], "servingCertificate": {"name": "someone-else"}}
    previous = {"names": ["api.older.example.net"], "servingCertificate": {"name": "snoreloc-api-cert"}}
    merged = domain.merged_named_certificates([theirs, stale, previous], ["api.edge.example.net"], "snoreloc-api-cert")
    assert merged == [theirs, {"names": ["api.edge.example.net"], "servingCertificate": {"name": "snoreloc-api-cert"}}]


def test_a_named_certificate_shared_with_someone_else_loses_only_our_name() -> None:
    shared = {"names": ["api.edge.example.net", "legacy.example.org"], "servingCertificate": {"name": "legacy"}}
    merged = domain.merged_named_certificates([shared], ["api.edge.example.net"], "snoreloc-api-cert")
    assert merged == [
        {"names": ["legacy.example.org"], "servingCertificate": {"name": "legacy"}},
        {"names": ["api.edge.example.net"], "servingCertificate": {"name": "snoreloc-api-cert"}},
    ]


def test_a_new_apps_domain_inside_the_old_one_is_not_moved_twice() -> None:
    inner = f"apps.edge.{OLD}"
    route = {"metadata": {"namespace": "edge-app", "name": "shop"}, "spec": {"host": f"shop.{inner}"}}
    assert routes.classify(route, OLD, inner).handling is routes.Handling.ARRIVED
    route["spec"]["host"] = f"shop.{OLD}"
    assert routes.classify(route, OLD, inner).new_host == f"shop.{inner}"


def test_component_routes_merge_by_namespace_and_name() -> None:
    other = {"namespace": "openshift-console", "name": "console-extra", "hostname": "x.example.org"}
    old = {"namespace": "openshift-console", "name": "console", "hostname": "c.old.example.org"}
    new = {"namespace": "openshift-console", "name": "console", "hostname": "c.new.example.org"}
    assert domain.merged_component_routes([other, old], [new], "old.example.org") == [other, new]


def test_a_component_route_on_the_users_own_domain_is_kept_and_ours_is_replaced() -> None:
    theirs = {"namespace": "openshift-console", "name": "downloads", "hostname": "downloads.mycorp.example.com",
              "servingCertKeyPairSecret": {"name": "mycorp-downloads"}}  # fmt: skip
    ours = {"namespace": "openshift-authentication", "name": "oauth-openshift", "hostname": "o.elsewhere.example",
            "servingCertKeyPairSecret": {"name": "snoreloc-ingress-cert"}}  # fmt: skip
    wanted = [
        {"namespace": "openshift-console", "name": "downloads", "hostname": "d.new.example.org"},
        {"namespace": "openshift-authentication", "name": "oauth-openshift", "hostname": "o.new.example.org"},
    ]
    assert domain.merged_component_routes([theirs, ours], wanted, "old.example.org") == [theirs, wanted[1]]
    assert domain.users_component_routes([theirs, ours], "old.example.org") == [theirs]


@pytest.mark.parametrize(
    ("namespace", "name", "host", "generated", "handling", "new_host"),
    [
        ("edge-app", "shop", f"shop.{OLD}", False, routes.Handling.REWRITE, f"shop.{NEW}"),
        ("edge-app", "gw", f"gw-edge-app.{OLD}", True, routes.Handling.REWRITE, f"gw-edge-app.{NEW}"),
        ("openshift-monitoring", "prom", f"prom-openshift-monitoring.{OLD}", True, routes.Handling.OWNER, None),
        ("openshift-monitoring", "fixed", f"fixed.{OLD}", False, routes.Handling.REWRITE, f"fixed.{NEW}"),
        ("openshift-console", "console", f"console-openshift-console.{OLD}", True, routes.Handling.COMPONENT, None),
        ("edge-data", "legacy", "legacy.example.org", False, routes.Handling.UNTOUCHED, None),
        ("edge-data", "lookalike", f"x.not{OLD}", False, routes.Handling.UNTOUCHED, None),
        ("edge-app", "moved", f"moved.{NEW}", False, routes.Handling.ARRIVED, None),
    ],
)
def test_route_classification(
    namespace: str, name: str, host: str, generated: bool, handling: routes.Handling, new_host: str | None
) -> None:
    annotations = {routes.GENERATED: "true"} if generated else {}
    route = {"metadata": {"namespace": namespace, "name": name, "annotations": annotations}, "spec": {"host": host}}
    info = routes.classify(route, OLD, NEW)
    assert info.handling is handling
    if new_host is not None:
        assert info.new_host == new_host


@pytest.mark.parametrize(
    ("sans", "own", "handling", "warned"),
    [
        ([f"shop.{OLD}"], model.OwnCertificates.MOVE_AND_WARN, routes.Handling.REWRITE, True),
        ([f"shop.{OLD}"], model.OwnCertificates.KEEP_HOST, routes.Handling.KEEP, True),
        ([f"shop.{OLD}", f"*.{NEW}"], model.OwnCertificates.KEEP_HOST, routes.Handling.REWRITE, False),
    ],
    ids=["move-and-warn", "keep-host", "covers-the-new-host"],
)
def test_a_route_with_its_own_certificate_is_never_moved_silently(
    sans: list[str], own: model.OwnCertificates, handling: routes.Handling, warned: bool
) -> None:
    pair = sim_certs.issue(sim_certs.make_ca("route-ca"), sans)
    tls = {"termination": "edge", "certificate": pair.cert_pem.decode(), "key": pair.key_pem.decode()}
    route = {"metadata": {"namespace": "edge-app", "name": "shop"}, "spec": {"host": f"shop.{OLD}", "tls": tls}}
    info = routes.classify(route, OLD, NEW, own)
    assert info.handling is handling
    assert (info.certificate_warning is not None) == warned
    if warned:
        assert f"shop.{OLD}" in str(info.certificate_warning) and f"shop.{NEW}" in str(info.certificate_warning)


def test_registry_ca_key_uses_double_dot_for_the_port() -> None:
    assert cluster_config.ca_key("registry.example.com:5000") == "registry.example.com..5000"
    assert cluster_config.ca_key("registry.example.com") == "registry.example.com"


def test_settle_requires_a_transition_after_our_change() -> None:
    changed = datetime(2026, 5, 1, 10, 0, 0, 500000, tzinfo=UTC)
    assert rollouts.moved_since(datetime(2026, 5, 1, 10, 0, 0, 600000, tzinfo=UTC), changed)
    assert not rollouts.moved_since(datetime(2026, 5, 1, 10, 0, 0, 400000, tzinfo=UTC), changed)
    assert rollouts.moved_since(datetime(2026, 5, 1, 10, 0, 0, tzinfo=UTC), changed)  # second precision: same second
    assert not rollouts.moved_since(datetime(2026, 5, 1, 9, 59, 59, tzinfo=UTC), changed)
    assert not rollouts.moved_since(None, changed)


NODE = node_csrs.Node("sno1", frozenset({"sno1"}), frozenset({"192.168.127.10"}))


def _csr(user: str, signer: str, cn: str, org: str, dns: list[str] = (), ips: list[str] = ()) -> dict:  # type: ignore[assignment]
    key = ec.generate_private_key(ec.SECP256R1())
    builder = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, org), x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    )
    names = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    pem = builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
    groups = ["system:nodes", "system:authenticated"] if user.startswith("system:node:") else ["system:authenticated"]
    return {
        "metadata": {"name": "csr-x"},
        "spec": {"username": user, "groups": groups, "signerName": signer, "request": base64.b64encode(pem).decode()},
    }


def test_csr_rules_approve_only_this_node() -> None:
    serving = _csr(
        "system:node:sno1", node_csrs.SERVING_SIGNER, "system:node:sno1", "system:nodes", ["sno1"], ["192.168.127.10"]
    )
    client = _csr("system:node:sno1", node_csrs.CLIENT_SIGNER, "system:node:sno1", "system:nodes")
    bootstrap = _csr(node_csrs.BOOTSTRAPPER, node_csrs.CLIENT_SIGNER, "system:node:sno1", "system:nodes")
    assert node_csrs.decide(serving, NODE) == []
    assert node_csrs.decide(client, NODE) == []
    assert node_csrs.decide(bootstrap, NODE) == []


@pytest.mark.parametrize(
    ("user", "signer", "cn", "dns", "ips", "why"),
    [
        ("system:node:other", node_csrs.SERVING_SIGNER, "system:node:other", ["other"], [], "requester"),
        ("system:node:sno1", node_csrs.SERVING_SIGNER, "system:node:sno1", ["evil.example.com"], [], "not the node's"),
        ("system:node:sno1", node_csrs.SERVING_SIGNER, "system:node:sno1", ["sno1"], ["10.9.9.9"], "IP 10.9.9.9"),
        ("system:node:sno1", node_csrs.SERVING_SIGNER, "system:node:impostor", ["sno1"], [], "subject CN"),
        ("system:serviceaccount:x:y", node_csrs.CLIENT_SIGNER, "system:node:sno1", [], [], "neither"),
        ("system:node:sno1", "example.com/custom", "system:node:sno1", [], [], "not a kubelet signer"),
    ],
)
def test_csr_rules_refuse_everything_else(user: str, signer: str, cn: str, dns: list, ips: list, why: str) -> None:
    problems = node_csrs.decide(_csr(user, signer, cn, "system:nodes", dns, ips), NODE)
    assert any(why in p for p in problems), problems


def test_decided_csrs_are_not_pending() -> None:
    assert node_csrs.pending({"status": {}})
    assert not node_csrs.pending({"status": {"conditions": [{"type": "Approved"}]}})
    assert not node_csrs.pending({"status": {"certificate": "abc"}})


@pytest.mark.parametrize("name", ["console-custom", "downloads-custom"])
def test_the_console_operators_custom_routes_follow_the_component_routes(name: str) -> None:
    """Issue 35: after A, `plan` for B warned that console-custom and downloads-custom "have their own certificate".
    The console operator writes them from the componentRoutes, with the componentRoute's certificate (for A's
    names): the domain step moves them, no route step of ours rewrites them or warns about their certificate."""
    earlier = "apps.a.example.net"
    pair = sim_certs.issue(sim_certs.make_ca("ingress"), [f"*.{earlier}"])
    tls = {"termination": "edge", "certificate": pair.cert_pem.decode(), "key": pair.key_pem.decode()}
    host = f"{name.removesuffix('-custom')}-openshift-console.{earlier}"
    route = {"metadata": {"namespace": "openshift-console", "name": name}, "spec": {"host": host, "tls": tls}}
    info = routes.classify(route, OLD, NEW, earlier=(earlier,))
    assert info.handling is routes.Handling.COMPONENT and info.certificate_warning is None

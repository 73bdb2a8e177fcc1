"""A site that changes its mind: relocate to domain A, then to B with a corrected site-config, then back to A. Each
time every route is checked host by host (a user's explicit route with its own certificate, a user's generated
route, an unrelated one, the operators' component routes, a componentRoute the user keeps on a domain of their own),
as are the API's namedCertificates (the previous site's names go: our entry is replaced whole), the record of the
domains snoreloc set (`steps.site_domains`), the plan, and the report's counts. A rollback then puts the factory
state back."""

from __future__ import annotations

import base64

import pytest

from snoreloc.adapters import kube
from snoreloc.engine import plan as plan_mod
from snoreloc.pki import certs
from snoreloc.siteconfig import model
from snoreloc.steps.cluster import routes
from snoreloc.steps.openshift import serving, site_domains

from .conftest import NEW_DOMAIN, Relocation, site_config
from .test_users_objects import MYCORP_HOST, add_users_component_route, roll_back_and_compare, snapshot

# The user's componentRoute rolls the console operator: set up on a real cluster it would be undone by the test's own
# clean-up, which the scenario's three relocations would meet mid-rollout.
pytestmark = pytest.mark.simonly

A, B = NEW_DOMAIN, "store9.example.org"
SHOP = kube.Ref(kube.ROUTES, "shop", "edge-app")
GATEWAY = kube.Ref(kube.ROUTES, "api-gateway", "edge-app")
LEGACY = kube.Ref(kube.ROUTES, "legacy", "edge-data")
INGRESS = kube.Ref(kube.INGRESSES, "cluster")
APISERVER = kube.Ref(kube.APISERVERS, "cluster")
API_CERT = kube.Ref(kube.SECRETS, serving.API_SECRET, "openshift-config")
INGRESS_CERT = kube.Ref(kube.SECRETS, serving.INGRESS_SECRET, "openshift-ingress")


def _host(r: Relocation, ref: kube.Ref) -> str:
    return str(r.get(ref)["spec"]["host"])


def _component_routes(r: Relocation) -> dict[str, str]:
    return {c["name"]: c["hostname"] for c in r.get(INGRESS)["spec"]["componentRoutes"]}


def _ours_named(r: Relocation) -> list[list[str]]:
    named = r.get(APISERVER)["spec"]["servingCerts"]["namedCertificates"]
    return [e["names"] for e in named if e["servingCertificate"]["name"] == serving.API_SECRET]


def _check_at(r: Relocation, domain: str, gone: str, legacy: str) -> None:
    """Every route and name where a relocation to `domain` must leave it; nothing left on `gone`'s apps domain."""
    apps = f"apps.{domain}"
    assert _host(r, SHOP) == f"shop.{apps}"
    assert _host(r, GATEWAY).endswith(f".{apps}")
    assert _host(r, LEGACY) == legacy  # on a domain of its own: never ours
    components = _component_routes(r)
    assert components["console"] == f"console-openshift-console.{apps}"
    assert components["oauth-openshift"] == f"oauth-openshift.{apps}"
    assert components["downloads"] == MYCORP_HOST  # the user's own, kept
    assert _ours_named(r) == [[f"api.{domain}"]]  # one entry of ours, this site's names only
    for secret, name in ((API_CERT, f"api.{domain}"), (INGRESS_CERT, f"*.{apps}")):
        served = certs.sans(certs.parse_chain(base64.b64decode(r.get(secret)["data"]["tls.crt"]))[0])
        assert name in served and not any(gone in n for n in served), (secret, served)
    stranded = [
        f"{o['metadata']['namespace']}/{o['metadata']['name']}"
        for o in r.client.list(kube.ROUTES)
        if str(o["spec"].get("host") or "").endswith(f".apps.{gone}")
    ]
    assert stranded == [], f"routes left on apps.{gone}"
    report = r.report()
    assert report["domain"] == domain and report["urls"]["console"] == f"https://console-openshift-console.{apps}"
    rows = {(row["namespace"], row["name"]): row for row in report["routes"]}
    assert rows[("edge-app", "shop")]["new_host"] == f"shop.{apps}"


def test_a_to_b_and_back_moves_every_route_each_time(relocation: Relocation) -> None:
    add_users_component_route(relocation, "downloads", MYCORP_HOST)
    legacy = _host(relocation, LEGACY)
    before = snapshot(relocation)

    relocation.run(site_config())
    _check_at(relocation, A, "never-set.invalid", legacy)
    assert site_domains.remembered(relocation.get(site_domains.RECORD)) == (A,)

    site_b = site_config(domain=B)
    planned = plan_mod.render(relocation.run(site_b, dry_run=True).plans)
    # issue 35: the console operator's console-custom route carries the componentRoute's certificate (for A) and
    # follows the componentRoutes: it is no user's route with "its own certificate"; shop and payments are
    warned = {line.split()[2] for line in planned.splitlines() if "has its own certificate" in line}
    assert {"edge-app/payments", "edge-app/shop"} <= warned, planned
    assert not {name for name in warned if name.startswith("openshift-console/")}, planned
    assert f"on apps.{A}, an earlier site's apps domain: moved like the factory's" in planned
    assert f"shop.apps.{A} -> shop.apps.{B}" in planned
    relocation.run(site_b)
    _check_at(relocation, B, A, legacy)
    report = relocation.report()
    assert report["routes_from_earlier"] >= 2  # shop and api-gateway at least (operators' routes may add)
    # the counts by result are a partition of the routes (issue 35: 21 routes added up to 32)
    assert sum(report["route_counts"].values()) == report["route_total"] == len(report["routes"])
    assert routes.EARLIER_COUNT not in report["route_counts"]
    rows = {(row["namespace"], row["name"]): row for row in relocation.report()["routes"]}
    assert rows[("edge-app", "shop")]["earlier"] == f"apps.{A}" and rows[("edge-app", "shop")]["result"] == "migrated"
    assert "earlier" not in rows[("edge-data", "legacy")]
    assert site_domains.remembered(relocation.get(site_domains.RECORD)) == (A, B)

    relocation.run(site_config())  # and back
    _check_at(relocation, A, B, legacy)
    assert relocation.report()["routes_from_earlier"] >= 2

    roll_back_and_compare(relocation, before)
    assert relocation.client.find(site_domains.RECORD) is None  # the record is ours: rollback removes it


def test_a_users_config_map_of_the_records_name_is_refused_before_any_write(relocation: Relocation) -> None:
    body = {"metadata": {"name": site_domains.RECORD.name, "namespace": site_domains.RECORD.namespace}, "data": {}}
    relocation.client.create(kube.CONFIGMAPS, body)
    relocation.undo.append(lambda: relocation.client.delete(site_domains.RECORD))
    with pytest.raises(Exception, match="not created by snoreloc") as refused:
        relocation.run(site_config(), dry_run=True)
    assert "Rename or delete" in getattr(refused.value, "hint", "")


def test_a_route_left_on_an_earlier_site_domain_is_named(relocation: Relocation) -> None:
    relocation.run(site_config())  # shop moves to apps.A, with its own certificate for its factory host
    keep = site_config(domain=B, routes=model.Routes(own_certificates=model.OwnCertificates.KEEP_HOST))
    relocation.run(keep)
    assert _host(relocation, SHOP) == f"shop.apps.{A}"  # kept: its certificate does not cover shop.apps.B
    named = [w for w in relocation.report()["warnings"] if "edge-app/shop stays on" in w]
    expected = f"route edge-app/shop stays on shop.apps.{A} (an earlier site's apps domain): kept on its host"
    assert len(named) == 1 and named[0].startswith(expected)
    assert _host(relocation, GATEWAY).endswith(f".apps.{B}")  # the others moved on

"""Users' own objects on a cluster that is not pristine: kept, reported, and put back exactly by rollback.

Each scenario sets up what a factory or a user might have left (a componentRoute on their own domain, a router
certificate that already serves the site), relocates, checks what was kept and what the report says, then rolls
back and compares every watched object, route annotations included, with the state before the run."""

from __future__ import annotations

from typing import Any

import pytest

from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc.engine import pipeline, restore
from snoreloc.engine import plan as plan_mod
from snoreloc.factory import seal
from snoreloc.siteconfig import model
from snoreloc_sim.kube import certs as sim_certs

from .conftest import (
    NEW_DOMAIN,
    WATCHED,
    Relocation,
    contains,
    progressing,
    site_config,
    tls_secret,
    wait_rollout,
)

APPS = f"apps.{NEW_DOMAIN}"
INGRESS = kube.Ref(kube.INGRESSES, "cluster")
CONTROLLER = kube.Ref(kube.INGRESSCONTROLLERS, "default", "openshift-ingress-operator")
MYCORP_HOST = "downloads.mycorp.example.com"
MYCORP_CONSOLE = "console.mycorp.example.com"


def snapshot(r: Relocation) -> dict[str, Any]:
    """Every watched object, and each user route's spec, labels and annotations (rollback restores them all)."""
    found: dict[str, Any] = {}
    for ref in WATCHED:
        obj = r.get(ref)
        meta = obj.get("metadata", {})
        found[str(ref)] = {
            "spec": obj.get("spec"),
            "data": obj.get("data"),
            "labels": meta.get("labels"),
            "annotations": meta.get("annotations"),
        }
    for route in r.client.list(kube.ROUTES):
        meta = route["metadata"]
        if not meta["namespace"].startswith("openshift-"):  # operators put their own routes' hosts back
            found[f"route {meta['namespace']}/{meta['name']}"] = {
                "spec": route["spec"],
                "labels": meta.get("labels"),
                "annotations": meta.get("annotations"),
            }
    return found


def roll_back_and_compare(r: Relocation, before: dict[str, Any]) -> restore.Outcome:
    outcome = pipeline.rollback(r.paths, r.client, r.clock)
    after = snapshot(r)
    assert after.keys() == before.keys()
    for name, original in before.items():
        assert contains(after[name], original), name
        assert after[name]["annotations"] == original["annotations"], name
    return outcome


def add_secret(r: Relocation, name: str, namespace: str, names: list[str]) -> None:
    pair = sim_certs.issue(sim_certs.make_ca(f"{name}-ca"), names)
    ref = kube.Ref(kube.SECRETS, name, namespace)
    r.client.create(kube.SECRETS, tls_secret(ref, pair.cert_pem, pair.key_pem))
    r.undo.append(lambda: r.client.delete(ref))


def patch_and_wait(r: Relocation, ref: kube.Ref, body: dict[str, Any], operator: str, undo: dict[str, Any]) -> None:
    before = progressing(r, operator)
    r.client.patch(ref, body)
    r.undo.append(lambda: r.client.patch(ref, undo))
    wait_rollout(r, operator, before)


def add_users_component_route(r: Relocation, name: str, host: str) -> dict[str, Any]:
    """The factory moved the console's route `name` to the customer's own `host`, with its own certificate."""
    secret = f"mycorp-{name}"
    add_secret(r, secret, "openshift-config", [host])
    entry = {
        "namespace": "openshift-console",
        "name": name,
        "hostname": host,
        "servingCertKeyPairSecret": {"name": secret},
    }
    factory = r.get(INGRESS)["spec"].get("componentRoutes")
    body = {"spec": {"componentRoutes": [entry]}}
    patch_and_wait(r, INGRESS, body, "console", {"spec": {"componentRoutes": factory}})
    return entry


def test_a_component_route_on_the_users_own_domain_survives(relocation: Relocation) -> None:
    entry = add_users_component_route(relocation, "downloads", MYCORP_HOST)
    before = snapshot(relocation)
    relocation.run()
    routes = {(c["namespace"], c["name"]): c for c in relocation.get(INGRESS)["spec"]["componentRoutes"]}
    assert routes[("openshift-console", "downloads")] == entry
    assert routes[("openshift-console", "console")]["hostname"] == f"console-openshift-console.{APPS}"
    assert routes[("openshift-authentication", "oauth-openshift")]["hostname"] == f"oauth-openshift.{APPS}"
    kept = relocation.report()["kept"]
    assert any("openshift-console/downloads" in k and MYCORP_HOST in k for k in kept), kept
    result = relocation.run()
    assert result.actions["domain"] == "skipped"
    roll_back_and_compare(relocation, before)


def test_the_report_points_at_a_console_route_the_user_kept(relocation: Relocation) -> None:
    """The console moved to the customer's own host at the factory: that is where the report, the banner and the
    page send people, and the host is among the DNS names the site must have."""
    add_users_component_route(relocation, "console", MYCORP_CONSOLE)
    relocation.run()
    report = relocation.report()
    assert report["urls"]["console"] == f"https://{MYCORP_CONSOLE}"
    assert report["urls"]["oauth_login"] == f"https://oauth-openshift.{APPS}"
    assert report["dns"] == [f"api.{NEW_DOMAIN}", f"*.{APPS}", MYCORP_CONSOLE]
    assert report["kubeconfig"] == "snoreloc kubeconfig --output FILE"


def test_a_router_certificate_that_already_serves_the_site_is_kept(relocation: Relocation) -> None:
    add_secret(relocation, "site-apps", "openshift-ingress", [f"*.{APPS}", APPS])
    factory = relocation.get(CONTROLLER)["spec"].get("defaultCertificate")
    body = {"spec": {"defaultCertificate": {"name": "site-apps"}}}
    patch_and_wait(relocation, CONTROLLER, body, "ingress", {"spec": {"defaultCertificate": factory}})
    before = snapshot(relocation)
    relocation.run()
    assert relocation.get(CONTROLLER)["spec"]["defaultCertificate"] == {"name": "site-apps"}
    assert any("site-apps" in k for k in relocation.report()["kept"])
    roll_back_and_compare(relocation, before)


def test_a_router_certificate_for_the_factory_domain_is_replaced_and_put_back(relocation: Relocation) -> None:
    add_secret(relocation, "factory-apps", "openshift-ingress", [f"*.{relocation.facts.apps_domain}"])
    factory = relocation.get(CONTROLLER)["spec"].get("defaultCertificate")
    body = {"spec": {"defaultCertificate": {"name": "factory-apps"}}}
    patch_and_wait(relocation, CONTROLLER, body, "ingress", {"spec": {"defaultCertificate": factory}})
    before = snapshot(relocation)
    relocation.run()
    assert relocation.get(CONTROLLER)["spec"]["defaultCertificate"] == {"name": "snoreloc-ingress-cert"}
    assert relocation.report()["kept"] == []
    roll_back_and_compare(relocation, before)


SHOP = kube.Ref(kube.ROUTES, "shop", "edge-app")  # an edge route with its own certificate for shop.<factory apps>


def shop_warning(lines: list[str] | tuple[str, ...], r: Relocation) -> list[str]:
    return [line for line in lines if "edge-app/shop" in line and f"shop.{r.facts.apps_domain}" in line]


@pytest.mark.parametrize("own", list(model.OwnCertificates), ids=[o.value for o in model.OwnCertificates])
def test_a_route_whose_own_certificate_misses_its_new_host_is_named(
    relocation: Relocation, own: model.OwnCertificates
) -> None:
    site = site_config(routes=model.Routes(own_certificates=own))
    old_host = relocation.get(SHOP)["spec"]["host"]
    planned = relocation.run(site, dry_run=True)
    assert shop_warning(plan_mod.render(planned.plans).splitlines(), relocation)
    before = snapshot(relocation)
    relocation.run(site)
    report = relocation.report()
    assert len(shop_warning(report["warnings"], relocation)) == 1
    [row] = [row for row in report["routes"] if (row["namespace"], row["name"]) == ("edge-app", "shop")]
    assert row["certificate"] == f"own certificate for {old_host}"
    host = relocation.get(SHOP)["spec"]["host"]
    if own is model.OwnCertificates.KEEP_HOST:
        assert host == old_host and row["result"].startswith("kept on its host")
    else:
        assert host == f"shop.{APPS}" and row["result"] == "migrated"
    writes = relocation.client.writes
    assert relocation.run(site).actions["routes"] == "skipped"
    assert relocation.client.writes == writes
    roll_back_and_compare(relocation, before)


def test_an_unknown_remove_mirrors_name_is_a_warning_naming_the_close_one(relocation: Relocation) -> None:
    site = site_config(remove_mirrors=("factory-mirrors",))  # the seeded set is factory-mirror
    planned = plan_mod.render(relocation.run(site, dry_run=True).plans)
    assert "removeMirrors[0]: no ImageContentSourcePolicy" in planned and "did you mean factory-mirror?" in planned
    before = snapshot(relocation)
    relocation.run(site)
    assert relocation.factory_mirror is not None and relocation.client.find(relocation.factory_mirror) is not None
    [warning] = [w for w in relocation.report()["warnings"] if "removeMirrors" in w]
    assert "factory-mirrors" in warning and "did you mean factory-mirror?" in warning
    roll_back_and_compare(relocation, before)


def test_remove_mirrors_naming_our_own_set_leaves_it_and_converges(relocation: Relocation) -> None:
    before = snapshot(relocation)
    relocation.run()
    ours = kube.Ref(kube.IDMS if not relocation.facts.legacy_mirrors else kube.ICSP, "snoreloc-digest-mirrors")
    site = site_config(remove_mirrors=("factory-mirror", "snoreloc-digest-mirrors"))
    relocation.run(site)
    assert relocation.client.find(ours) is not None
    assert any("snoreloc-digest-mirrors" in w and "not removed" in w for w in relocation.report()["warnings"])
    writes = relocation.client.writes
    relocation.run(site, force=True)
    assert relocation.client.writes == writes  # no create-and-delete in turn
    roll_back_and_compare(relocation, before)


@pytest.mark.simonly  # the user's mirror set would roll the node's machine config on a real cluster
def test_a_users_mirror_set_with_our_name_is_not_deleted(relocation: Relocation) -> None:
    theirs = kube.Ref(kube.IDMS, "snoreloc-digest-mirrors")
    mirror = {"source": "registry.mycorp.example.com/apps", "mirrors": ["cache.mycorp.example.com/apps"]}
    relocation.client.create(kube.IDMS, {"metadata": {"name": theirs.name}, "spec": {"imageDigestMirrors": [mirror]}})
    before = snapshot(relocation)
    relocation.run(site_config(image_digest_mirrors=(), image_tag_mirrors=()))
    assert relocation.get(theirs)["spec"]["imageDigestMirrors"] == [mirror]
    roll_back_and_compare(relocation, before)
    assert relocation.get(theirs)["spec"]["imageDigestMirrors"] == [mirror]


def test_objects_we_create_carry_our_label(relocation: Relocation) -> None:
    relocation.run()
    created = [kube.Ref(kube.CONFIGMAPS, "snoreloc-registry-ca", "openshift-config")]
    created += [kube.Ref(kube.SECRETS, "snoreloc-api-cert", "openshift-config")]
    created += [kube.Ref(kube.IDMS if not relocation.facts.legacy_mirrors else kube.ICSP, "snoreloc-digest-mirrors")]
    for ref in created:
        assert relocation.get(ref)["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "snoreloc", ref


def test_a_named_certificate_shared_with_another_name_loses_only_ours(relocation: Relocation) -> None:
    apiserver = kube.Ref(kube.APISERVERS, "cluster")
    add_secret(relocation, "shared-cert", "openshift-config", ["legacy.example.org", f"api.{NEW_DOMAIN}"])
    shared = {"names": [f"api.{NEW_DOMAIN}", "legacy.example.org"], "servingCertificate": {"name": "shared-cert"}}
    factory = (relocation.get(apiserver)["spec"].get("servingCerts") or {}).get("namedCertificates")
    body = {"spec": {"servingCerts": {"namedCertificates": [shared]}}}
    undo = {"spec": {"servingCerts": {"namedCertificates": factory}}}
    patch_and_wait(relocation, apiserver, body, "kube-apiserver", undo)
    before = snapshot(relocation)
    relocation.run()
    named = relocation.get(apiserver)["spec"]["servingCerts"]["namedCertificates"]
    assert named == [
        {"names": ["legacy.example.org"], "servingCertificate": {"name": "shared-cert"}},
        {"names": [f"api.{NEW_DOMAIN}"], "servingCertificate": {"name": "snoreloc-api-cert"}},
    ]
    roll_back_and_compare(relocation, before)


def test_a_site_domain_inside_the_factory_apps_domain_converges(relocation: Relocation) -> None:
    inner = f"edge.{relocation.facts.apps_domain}"
    site = site_config(domain=inner)
    before = snapshot(relocation)
    relocation.run(site)
    assert relocation.get(SHOP)["spec"]["host"] == f"shop.apps.{inner}"
    writes = relocation.client.writes
    relocation.run(site, force=True)
    assert relocation.get(SHOP)["spec"]["host"] == f"shop.apps.{inner}"
    assert relocation.client.writes == writes
    roll_back_and_compare(relocation, before)


def test_a_users_secret_with_our_certificate_name_is_refused_not_taken_over(relocation: Relocation) -> None:
    add_secret(relocation, "snoreloc-ingress-cert", "openshift-ingress", [f"*.apps.{NEW_DOMAIN}"])
    theirs = relocation.get(kube.Ref(kube.SECRETS, "snoreloc-ingress-cert", "openshift-ingress"))
    writes = relocation.client.writes
    with pytest.raises(errors.PermanentStepError, match="not created by snoreloc") as refused:
        relocation.run()
    assert refused.value.message.startswith("preflight: ")  # found by preflight, before any cluster step writes
    assert "Rename or delete" in refused.value.hint and "add the label" in refused.value.hint
    assert relocation.client.writes == writes  # refused before any write: no secret of ours, no label on theirs
    [clash] = seal.KubeClusterFacts(relocation.client).name_clashes()  # and `seal` finds it at the factory
    assert "Secret openshift-ingress/snoreloc-ingress-cert" in clash and "rename or delete it" in clash
    after = relocation.get(kube.Ref(kube.SECRETS, "snoreloc-ingress-cert", "openshift-ingress"))
    assert after["metadata"] == theirs["metadata"] and after["data"] == theirs["data"]

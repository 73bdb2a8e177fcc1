"""The cluster-wide proxy over HTTPS: set, re-run, one value changed, a user's CA merged, rolled back exactly, and
the proxy password never shown."""

from __future__ import annotations

import pytest

from snoreloc.adapters import kube
from snoreloc.engine import pipeline
from snoreloc.engine import plan as plan_mod
from snoreloc.siteconfig import model
from snoreloc.steps.cluster import proxy
from snoreloc_sim.kube import certs as sim_certs

from .conftest import Relocation, contains, settled, site_config, spec_of

# A proxy URL or noProxy change drains and reboots the node (twice with its rollback): on a real cluster given to the
# suite the test's own clean-up would meet that outage and leave the cluster changed for the next test. The tests
# that make such a change are `simonly` for that reason (REBOOTS); those that only plan run on a real cluster too.
REBOOTS = pytest.mark.simonly

PASSWORD = "pr0xy-S3cret-77"
PROXY_URL = f"http://edge-bot:{PASSWORD}@proxy.edge7.example.net:3128"
OTHER_STEPS = ("certificates", "cluster-config", "ssh-keys", "domain", "routes", "csr")
CA_REF = kube.Ref(kube.CONFIGMAPS, proxy.TRUSTED_CA, "openshift-config")


def ca_pem(name: str) -> str:
    return sim_certs.make_ca(name).cert_pem.decode()


def site_proxy(no_proxy: tuple[str, ...] = (".edge7.example.net",), ca: str | None = None) -> model.SiteConfig:
    return site_config(proxy=model.Proxy(PROXY_URL, PROXY_URL, no_proxy, ca))


@REBOOTS
def test_the_proxy_is_set_and_a_rerun_writes_nothing(relocation: Relocation) -> None:
    ca = ca_pem("proxy-ca")
    site = site_proxy(("10.20.0.0/16", ".edge7.example.net"), ca)
    assert relocation.run(site).actions["proxy"] == "ran"
    spec = relocation.get(proxy.PROXY_CLUSTER)["spec"]
    assert spec["httpProxy"] == spec["httpsProxy"] == PROXY_URL
    assert spec["noProxy"] == "10.20.0.0/16,.edge7.example.net"
    assert spec["trustedCA"] == {"name": proxy.TRUSTED_CA}
    cm = relocation.get(CA_REF)
    assert cm["data"] == {"ca-bundle.crt": ca}
    assert cm["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "snoreloc"
    writes = relocation.client.writes
    assert set(relocation.run(site).actions.values()) == {"skipped"}
    assert relocation.client.writes == writes


@REBOOTS
def test_a_changed_no_proxy_reruns_only_the_proxy_step(relocation: Relocation) -> None:
    relocation.run(site_proxy())
    writes = relocation.client.writes
    result = relocation.run(site_proxy(no_proxy=(".edge7.example.net", "192.168.7.0/24")))
    assert result.actions["proxy"] == "ran"
    assert {result.actions[name] for name in OTHER_STEPS} == {"skipped"}
    assert relocation.client.writes - writes == 1  # Proxy cluster, nothing else
    assert relocation.get(proxy.PROXY_CLUSTER)["spec"]["noProxy"] == ".edge7.example.net,192.168.7.0/24"


@REBOOTS
def test_the_users_trusted_ca_config_map_is_merged_not_replaced(relocation: Relocation) -> None:
    users = ca_pem("users-own-ca")
    ref = kube.Ref(kube.CONFIGMAPS, "corp-ca", "openshift-config")
    relocation.client.create(
        kube.CONFIGMAPS,
        {
            "metadata": {"name": "corp-ca", "namespace": "openshift-config"},
            "data": {"ca-bundle.crt": users, "other": "kept"},
        },
    )
    relocation.undo.append(lambda: relocation.client.delete(ref))
    original = relocation.get(proxy.PROXY_CLUSTER)["spec"]
    relocation.client.patch(proxy.PROXY_CLUSTER, {"spec": {"trustedCA": {"name": "corp-ca"}}})
    relocation.undo.append(lambda: relocation.client.modify(proxy.PROXY_CLUSTER, lambda o: {**o, "spec": original}))
    site_ca = ca_pem("site-proxy-ca")
    relocation.run(site_proxy(ca=site_ca))
    data = relocation.get(ref)["data"]
    assert data["other"] == "kept"
    assert data["ca-bundle.crt"] == users.rstrip("\n") + "\n" + site_ca
    assert relocation.client.find(CA_REF) is None
    assert relocation.get(proxy.PROXY_CLUSTER)["spec"]["trustedCA"] == {"name": "corp-ca"}


@REBOOTS
def test_rollback_restores_the_proxy_exactly_across_the_reboot_it_causes(relocation: Relocation) -> None:
    before = spec_of(relocation.get(proxy.PROXY_CLUSTER))
    relocation.run(site_proxy(ca=ca_pem("proxy-ca")))
    # restoring the proxy reboots the node: the rollback rides that out, and returns settled
    pipeline.rollback(relocation.paths, relocation.client, relocation.clock)
    assert settled(relocation.client)
    after = spec_of(relocation.get(proxy.PROXY_CLUSTER))
    assert contains(after, before) and after["spec"] == before["spec"]
    assert relocation.client.find(CA_REF) is None
    assert list(relocation.paths.backups.glob("*.json")) == []


@REBOOTS
def test_the_proxy_password_is_never_shown(relocation: Relocation) -> None:
    result = relocation.run(site_proxy(), dry_run=True)
    text = plan_mod.render(result.plans)
    assert "~ update Proxy cluster" in text and "proxy.edge7.example.net:3128" in text
    assert any("REBOOTS" in note for p in result.plans if p.step == "proxy" for note in p.notes)
    relocation.run(site_proxy())
    shown = [text, relocation.paths.status.read_text(), relocation.paths.report.read_text()]
    assert all(PASSWORD not in item for item in shown)


def test_the_proxy_password_is_never_shown_in_the_plan(relocation: Relocation) -> None:
    writes = relocation.client.writes
    result = relocation.run(site_proxy(), dry_run=True)
    text = plan_mod.render(result.plans)
    assert "~ update Proxy cluster" in text and "proxy.edge7.example.net:3128" in text and PASSWORD not in text
    assert relocation.client.writes == writes


def test_a_trusted_ca_alone_is_planned_without_a_reboot(relocation: Relocation) -> None:
    current = relocation.get(proxy.PROXY_CLUSTER)["spec"]
    site = site_config(proxy=model.Proxy(current.get("httpProxy"), current.get("httpsProxy"), (), ca_pem("ca")))
    result = relocation.run(site, dry_run=True)
    notes = next(p.notes for p in result.plans if p.step == "proxy")
    assert any("without a reboot" in note for note in notes)

"""Issue 26's done-when on the simulator: a relocation to a site whose DNS has no records for the new domain ends
done, the authentication and console operators healthy, when the node answers for its names itself (the default);
with node-local DNS off it refuses at preflight, before any cluster change, and says which records the site needs.
Rollback puts the node's overrides file back exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sealed import node_request, sealed_root
from snoreloc import errors
from snoreloc.adapters import clock, fs, kube
from snoreloc.engine import node, paths, pipeline
from snoreloc.host import node_dns
from snoreloc.siteconfig import loader
from snoreloc.steps.host import node_dns as node_dns_step
from snoreloc_sim.demo import flow as demo
from snoreloc_sim.openshift import dns, simulator

NO_RECORDS = [{"site_dns": dns.SiteDns({})}]


def _request(root: fs.HostFS, sim: simulator.Simulator) -> node.NodeRequest:
    return node_request(root, sim.router_address)


@pytest.fixture
def root(tmp_path: Path) -> fs.HostFS:
    return sealed_root(tmp_path, internal_ip=True)


def _node_local(root: fs.HostFS, enabled: bool) -> None:
    doc = yaml.safe_load(root.read_text("/etc/snoreloc/site-config.yaml"))
    doc["spec"]["dns"] = {"nodeLocal": enabled}
    root.write_text("/etc/snoreloc/site-config.yaml", yaml.safe_dump(doc), mode=0o600)


def _conditions(sim: simulator.Simulator, name: str) -> dict[str, str]:
    client = kube.Client.from_kubeconfig(str(sim.kubeconfig_path), clock=clock.SystemClock())
    try:
        co = client.get(kube.Ref(kube.CLUSTEROPERATORS, name))
    finally:
        client.close()
    return {c["type"]: c["status"] for c in co["status"]["conditions"]}


@pytest.mark.simonly
@pytest.mark.parametrize("sim", NO_RECORDS, indirect=True)
def test_site_without_records_ends_done_with_node_local_dns(root: fs.HostFS, sim: simulator.Simulator) -> None:
    demo.write_site(root, sim)
    svc = demo.services(root, sim, clock.ScaledClock(sim.cluster.timeline.speed))
    assert sim.resolve(f"api.{demo.SITE_DOMAIN}") == [], "the site's DNS has no record for the new domain"

    result = node.relocate(_request(root, sim), svc)

    assert result.state.value in ("done", "done-with-warnings")
    for operator in ("authentication", "console"):
        assert _conditions(sim, operator) | {"Available": "True", "Degraded": "False"} == _conditions(sim, operator)
    overrides = node_dns.parse(root.read_text(node_dns.OVERRIDES))
    assert overrides == {
        "SNO_CLUSTER_NAME_OVERRIDE": "store042",
        "SNO_BASE_DOMAIN_OVERRIDE": "edge.example.net",
        "SNO_DNSMASQ_IP_OVERRIDE": "192.168.127.10",
    }
    for name in ("api", "api-int", "oauth-openshift.apps"):
        assert sim.resolve(f"{name}.{demo.SITE_DOMAIN}") == ["192.168.127.10"]
    assert sim.resolve("api-int.sno1.factory.example.com") == ["192.168.127.10"], "the kubelet's API name is kept"
    warned = "\n".join(result.warnings)
    assert "clients on the site (oc, browsers) reach it by name only once the site DNS has these records" in warned
    assert f"*.apps.{demo.SITE_DOMAIN}.".ljust(48) + " IN A    10.42.0.10" in warned
    assert svc.host.units.runner.ran("systemctl", "restart", node_dns.UNIT)  # type: ignore[attr-defined]

    pipeline.rollback(paths.Paths.under(root.path("/")), svc.client_factory(), svc.clock)
    node.rollback_host(paths.Paths.under(root.path("/")), svc.host)
    assert not root.exists(node_dns.OVERRIDES) and not root.exists(node_dns.KEPT), "the factory had neither file"
    assert sim.resolve(f"api.{demo.SITE_DOMAIN}") == [] and sim.resolve("api.sno1.factory.example.com")


@pytest.mark.simonly
@pytest.mark.parametrize("sim", NO_RECORDS, indirect=True)
def test_site_without_records_and_node_local_off_is_refused(root: fs.HostFS, sim: simulator.Simulator) -> None:
    demo.write_site(root, sim)
    _node_local(root, enabled=False)
    svc = demo.services(root, sim, clock.ScaledClock(sim.cluster.timeline.speed))

    with pytest.raises(errors.UnavailableError) as caught:
        node.relocate(_request(root, sim), svc)

    assert caught.value.exit_code == 69
    text = caught.value.message
    assert "node-local DNS is off (spec.dns.nodeLocal: false)" in text and "would stay Degraded" in text
    assert f"api.{demo.SITE_DOMAIN}.".ljust(48) + " IN A    10.42.0.10" in text
    status = json.loads(root.read_text("/var/lib/snoreloc/status.json"))
    assert status["steps"]["preflight"]["state"] == "failed" and status["steps"]["domain"]["state"] != "done"
    # issue 35: the refusal says what the run had changed (the network, kubelet) instead of "nothing was changed"
    assert "nothing was changed" not in text.lower() and "nothing in the cluster was changed" not in caught.value.hint
    assert "What was changed: this run changed network (applied and committed the site network (eno1.120))" in text
    assert "kubelet (started kubelet)" in text and "steps from certificates on did not run" in text
    assert status["steps"]["preflight"]["error"]["message"] == text
    assert not root.exists(node_dns.OVERRIDES), "off: the node's DNS is left alone"
    ingress = svc.client_factory().get(kube.Ref(kube.INGRESSES, "cluster"))
    assert not ingress["spec"].get("appsDomain"), "refused before the cluster changed"


@pytest.mark.simonly
@pytest.mark.parametrize("sim", NO_RECORDS, indirect=True)
def test_a_node_without_the_sno_dnsmasq_configuration_is_refused_too(root: fs.HostFS, sim: simulator.Simulator) -> None:
    demo.write_site(root, sim)
    svc = demo.services(root, sim, clock.ScaledClock(sim.cluster.timeline.speed), dnsmasq=False)

    with pytest.raises(errors.UnavailableError) as caught:
        node.relocate(_request(root, sim), svc)

    assert "it has no SNO dnsmasq configuration" in caught.value.message


@pytest.mark.simonly
def test_node_local_turned_off_after_a_run_puts_the_factory_files_back(
    root: fs.HostFS, sim: simulator.Simulator
) -> None:
    """A technician's second stick says `nodeLocal: false` (the site's DNS now holds the records): the node must stop
    answering for the domain the first run gave it, as rollback would, and the plan must say so first."""
    demo.write_site(root, sim)
    svc = demo.services(root, sim, clock.ScaledClock(sim.cluster.timeline.speed))
    first = node.relocate(_request(root, sim), svc)
    assert first.state.value in ("done", "done-with-warnings") and root.exists(node_dns.OVERRIDES)
    _node_local(root, enabled=False)

    step = node_dns_step.NodeDns(svc.host, paths.Paths.under(root.path("/")).state_dir)
    plan = step.plan_for(loader.load(str(root.path("/etc/snoreloc/site-config.yaml"))))
    second = node.relocate(_request(root, sim), svc)

    assert any(f"made the node answer for {demo.SITE_DOMAIN}" in note for note in plan.notes), plan.notes
    assert second.state.value in ("done", "done-with-warnings")
    assert not root.exists(node_dns.OVERRIDES) and not root.exists(node_dns.KEPT), "the factory had neither file"
    assert not node_dns.backed_up(paths.Paths.under(root.path("/")).state_dir)
    commands = svc.host.units.runner.commands()  # type: ignore[attr-defined]
    assert commands.count(("systemctl", "restart", node_dns.UNIT)) == 2, "once to answer, once to stop answering"

"""Issue 35 item 1 on the simulator's DNS model: node-local DNS never strands the cluster. At a site whose DNS has no
records only the node answers the cluster's route names, so a switch of the node's dnsmasq from site A to site B
must keep A answered until nothing in the cluster is on it: otherwise `authentication` and `console` go Degraded
and preflight waits out its whole settle budget. Once the cluster is off A (`node-dns-prune`, right after the
cluster's settle), A is dropped. Covered: a re-relocation A -> B, a rollback after it, a run cut off between the
domain and routes steps and resumed, node-local DNS turned off for B, and what counts as a domain in use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from sealed import node_request, sealed_root
from snoreloc import errors
from snoreloc.adapters import clock, fs, kube
from snoreloc.engine import backups, journal, node, paths, pipeline, runner
from snoreloc.host import node_dns
from snoreloc.siteconfig import loader, model
from snoreloc.steps import base, context
from snoreloc.steps.cluster import routes
from snoreloc.steps.host import node_dns as node_dns_step
from snoreloc.steps.openshift import site_domains
from snoreloc_sim.demo import flow as demo
from snoreloc_sim.openshift import dns, simulator

NO_RECORDS = [{"site_dns": dns.SiteDns({})}]
SITE_A = demo.SITE_DOMAIN
SITE_B = "store043.edge.example.net"
NODE = "192.168.127.10"  # the node's internal address, which dnsmasq answers with
FACTORY_API_INT = "api-int.sno1.factory.example.com"
PREFLIGHT_QUICK = 120.0  # simulated seconds: a healthy cluster passes preflight at once; stranded, it waits 1800


def _request(root: fs.HostFS, sim: simulator.Simulator) -> node.NodeRequest:
    return node_request(root, sim.router_address)


@pytest.fixture
def root(tmp_path: Path) -> fs.HostFS:
    return sealed_root(tmp_path, internal_ip=True)


def _edit(root: fs.HostFS, **spec: Any) -> None:
    doc = yaml.safe_load(root.read_text("/etc/snoreloc/site-config.yaml"))
    doc["spec"].update(spec)
    root.write_text("/etc/snoreloc/site-config.yaml", yaml.safe_dump(doc), mode=0o600)


def _healthy(sim: simulator.Simulator, *names: str) -> dict[str, dict[str, str]]:
    """Each operator's conditions that are not as a healthy one's (empty: all healthy)."""
    client = kube.Client.from_kubeconfig(str(sim.kubeconfig_path), clock=clock.SystemClock())
    wrong = {}
    try:
        for name in names:
            co = client.get(kube.Ref(kube.CLUSTEROPERATORS, name))
            found = {c["type"]: c["status"] for c in co["status"]["conditions"]}
            want = {"Available": "True", "Degraded": "False"}
            if {k: found.get(k) for k in want} != want:
                wrong[name] = found
    finally:
        client.close()
    return wrong


def _status(root: fs.HostFS) -> dict[str, Any]:
    return dict(json.loads(root.read_text("/var/lib/snoreloc/status.json")))


def _relocated(result: runner.Result) -> None:
    assert result.state.value in ("done", "done-with-warnings"), result.actions


def _at_a(root: fs.HostFS, sim: simulator.Simulator) -> node.Services:
    demo.write_site(root, sim)
    svc = demo.services(root, sim, clock.ScaledClock(sim.cluster.timeline.speed))
    _relocated(node.relocate(_request(root, sim), svc))
    assert sim.resolve(f"console-openshift-console.apps.{SITE_A}") == [NODE]
    assert not root.exists(node_dns.EARLIER), "a first relocation has no earlier site"
    return svc


def _answers(sim: simulator.Simulator, domain: str) -> list[list[str]]:
    return [sim.resolve(f"{name}.{domain}") for name in ("api", "api-int", "console-openshift-console.apps")]


@pytest.mark.simonly
@pytest.mark.parametrize("sim", NO_RECORDS, indirect=True)
def test_a_corrected_stick_moves_the_cluster_from_a_to_b_and_drops_a(root: fs.HostFS, sim: simulator.Simulator) -> None:
    svc = _at_a(root, sim)
    _edit(root, domain=SITE_B)
    step = node_dns_step.NodeDns(svc.host, paths.Paths.under(root.path("/")).state_dir)
    planned = step.plan_for(loader.load(str(root.path("/etc/snoreloc/site-config.yaml"))))

    second = node.relocate(_request(root, sim), svc)

    assert f"keep answering {SITE_A} (an earlier site's) until the cluster is off it (node-dns-prune)" in planned.notes
    _relocated(second)
    status = _status(root)
    assert status["steps"]["preflight"]["duration"] < PREFLIGHT_QUICK, "preflight found the cluster healthy at once"
    assert _healthy(sim, "authentication", "console") == {}
    assert _answers(sim, SITE_B) == [[NODE]] * 3
    assert _answers(sim, SITE_A) == [[]] * 3, "once the cluster is off A, the node stops answering it"
    assert sim.resolve(FACTORY_API_INT) == [NODE], "the kubelet's API name is kept"
    assert status["steps"]["node-dns-prune"]["details"]["dropped"] == [SITE_A]
    assert not root.exists(node_dns.EARLIER)
    assert status["order"][status["order"].index("settle") + 1] == "node-dns-prune"


@pytest.mark.simonly
@pytest.mark.parametrize("sim", NO_RECORDS, indirect=True)
def test_rollback_after_a_then_b_answers_exactly_the_factory_names(root: fs.HostFS, sim: simulator.Simulator) -> None:
    svc = _at_a(root, sim)
    _edit(root, domain=SITE_B)
    _relocated(node.relocate(_request(root, sim), svc))

    state = paths.Paths.under(root.path("/"))
    outcome = pipeline.rollback(state, svc.client_factory(), svc.clock)
    lines = node.rollback_host(state, svc.host)

    assert outcome.restored and lines and _healthy(sim, "authentication", "console") == {}
    for gone in (node_dns.OVERRIDES, node_dns.KEPT, node_dns.EARLIER):
        assert not root.exists(gone), f"the factory had no {gone}"
    assert _answers(sim, SITE_A) == [[]] * 3 and _answers(sim, SITE_B) == [[]] * 3
    assert sim.resolve("console-openshift-console.apps.sno1.factory.example.com") == [NODE]
    assert not list((state.state_dir / node_dns.BACKUP_DIR).glob("*.json")), "no backup left behind"


@pytest.mark.simonly
@pytest.mark.parametrize("sim", NO_RECORDS, indirect=True)
def test_a_run_cut_off_between_steps_keeps_a_answered_until_the_next_run_moves_the_routes(
    root: fs.HostFS, sim: simulator.Simulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = _at_a(root, sim)
    _edit(root, domain=SITE_B)

    def power_cut(self: routes.Routes, ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
        raise errors.TemporaryError("the node lost power")

    with monkeypatch.context() as patched:
        patched.setattr(routes.Routes, "apply", power_cut)
        with pytest.raises(errors.TemporaryError) as cut:
            node.relocate(_request(root, sim), svc)
    said = cut.value.message
    assert f"node-dns (set {SITE_B} in {node_dns.OVERRIDES}; restarted {node_dns.UNIT})" in said, said
    assert "domain (" in said and "steps from settle on did not run" in said
    assert _status(root)["steps"]["domain"]["state"] == "done", "cut off after the domain step"
    sim.restart_dnsmasq()  # the node boots again: dnsmasq's script runs from the overrides (B)
    assert _answers(sim, SITE_A) == [[NODE]] * 3, "routes are still on A: the node keeps answering it"
    assert _answers(sim, SITE_B) == [[NODE]] * 3
    assert root.exists(node_dns.EARLIER)

    resumed = node.relocate(_request(root, sim), svc)

    _relocated(resumed)
    assert _status(root)["steps"]["preflight"]["duration"] < PREFLIGHT_QUICK
    assert _healthy(sim, "authentication", "console") == {}
    assert _answers(sim, SITE_A) == [[]] * 3 and _answers(sim, SITE_B) == [[NODE]] * 3


@pytest.mark.simonly
@pytest.mark.parametrize("sim", [{"site_dns": demo.site_dns(SITE_B)}], indirect=True)
def test_node_local_dns_turned_off_for_b_keeps_a_answered_until_the_cluster_leaves_it(
    root: fs.HostFS, sim: simulator.Simulator
) -> None:
    """Site B's DNS holds B's records (so the stick turns node-local DNS off) but nobody has A's: putting the
    factory's dnsmasq files back must not strand the cluster on A either."""
    svc = _at_a(root, sim)
    _edit(root, domain=SITE_B, dns={"nodeLocal": False})

    second = node.relocate(_request(root, sim), svc)

    _relocated(second)
    status = _status(root)
    assert status["steps"]["preflight"]["duration"] < PREFLIGHT_QUICK
    assert _healthy(sim, "authentication", "console") == {}
    assert not root.exists(node_dns.OVERRIDES) and not root.exists(node_dns.KEPT), "the factory had neither file"
    assert not root.exists(node_dns.EARLIER), "A dropped once the cluster left it"
    assert status["steps"]["node-dns-prune"]["details"]["dropped"] == [SITE_A]
    assert _answers(sim, SITE_A) == [[]] * 3


@pytest.mark.simonly
def test_a_domain_with_a_route_or_the_apps_domain_on_it_is_in_use(sim: simulator.Simulator, tmp_path: Path) -> None:
    """`site_domains.in_use` asks the cluster over HTTPS: a route under apps.D keeps D in use, the Ingress's
    appsDomain does too, and a domain nothing is on is free."""
    clk = clock.SystemClock()
    client = kube.Client.from_kubeconfig(str(sim.kubeconfig_path), clock=clk)
    route = {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": "kept", "namespace": "default"},
        "spec": {"host": f"shop.apps.{SITE_A}", "to": {"kind": "Service", "name": "shop"}},
    }
    try:
        client.create(kube.ROUTES, route)
        client.patch(base.INGRESS_CLUSTER, {"spec": {"appsDomain": f"apps.{SITE_B}"}})
        ctx = context.Context(
            site=model.SiteConfig(name="b", domain=SITE_B),
            kube=client,
            clock=clk,
            backups=backups.Store(tmp_path / "backups", clk),
            rollouts=journal.Journal(tmp_path / "status.json", clk),
        )
        used = site_domains.in_use(ctx, [SITE_A, SITE_B, "elsewhere.example.org"])
    finally:
        client.close()
    assert used == {
        SITE_B: f"the Ingress's appsDomain is apps.{SITE_B}",
        SITE_A: f"route default/kept is on shop.apps.{SITE_A}",
    }

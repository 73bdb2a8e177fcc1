"""Every benchmark's core runs at a toy size and writes a well-formed result; the bound arithmetic is right.

These are not timed tests: no assertion is about how fast anything is. They keep `make bench` from rotting
between the occasions someone runs it, and they pin the arithmetic (critical path, sequential bound, which
writes count as needed) on inputs small enough to check by hand.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import agent_cpu  # noqa: E402
import api_economy  # noqa: E402
import baselines  # noqa: E402
import certificates  # noqa: E402
import common  # noqa: E402
import fleet_controller  # noqa: E402
import fleet_reports  # noqa: E402
import harness  # noqa: E402
import hub_sites  # noqa: E402
import relocation  # noqa: E402
import routes_scale  # noqa: E402
import sim_cpu  # noqa: E402
import startup  # noqa: E402
import timeline  # noqa: E402

DOCUMENT_KEYS = {"benchmark", "command", "measured_at", "machine", "results", "targets"}


def well_formed(payload: dict[str, Any], name: str, tmp_path: Path) -> dict[str, Any]:
    """Written and read back as JSON, with the common envelope and every target judged."""
    path = common.write_result(name, payload, tmp_path)
    assert path == tmp_path / f"{name}.json"
    loaded: dict[str, Any] = json.loads(path.read_text())
    assert set(loaded) == DOCUMENT_KEYS
    assert loaded["benchmark"] == name
    assert loaded["machine"]["nproc"] >= 1 and loaded["machine"]["python"]
    assert loaded["targets"], "every benchmark judges at least one target"
    for judged in loaded["targets"].values():
        assert isinstance(judged["met"], bool) and judged["comparison"] in ("<=", ">=", "==")
    return loaded


def rollout(operator: str, start: float, seconds: float, trigger: str = "x") -> dict[str, Any]:
    return {"operator": operator, "trigger": trigger, "start": start, "end": start + seconds, "seconds": seconds}


def test_bounds_take_the_longest_chain_and_the_sum() -> None:
    rollouts = [
        rollout("kube-apiserver", 1.0, 24.0),
        rollout("openshift-apiserver", 1.0, 7.5, "ingresses.config.openshift.io/cluster routing domain apps.x"),
        rollout("machine-config", 0.5, 12.0),
        rollout("machine-config", 12.5, 12.0),  # one operator, one rollout at a time: these chain
    ]
    found = relocation.bounds(rollouts, routes_work=2.0)
    assert found["critical_s"] == 24.0 and found["critical_chain"] == ["kube-apiserver"]
    assert found["chains_s"]["machine-config"] == 24.0
    assert found["chains_s"]["routes"] == 9.5
    assert found["sequential_s"] == 24.0 + 7.5 + 24.0 + 2.0


def test_route_migration_after_the_routing_rollout_can_be_the_critical_path() -> None:
    rollouts = [
        rollout("openshift-apiserver", 1.0, 7.5, "ingresses.config.openshift.io/cluster routing domain apps.x"),
        rollout("kube-apiserver", 1.0, 20.0),
    ]
    found = relocation.bounds(rollouts, routes_work=15.0)
    assert found["critical_chain"] == ["openshift-apiserver", "routes"]
    assert found["critical_s"] == 22.5


def test_the_physical_limit_is_the_simulators_model_not_the_run() -> None:
    # 90 + 5 + 60 + 85 s of kube-apiserver revision (cluster seconds); on a shelved node first the kubelet asking
    # (3 s after start), signing (2 s) and the node turning Ready (5 s): only then can a rollout start
    assert relocation.physical_limit_cluster_s() == 240.0
    assert relocation.physical_limit_cluster_s(shelved=True) == 250.0
    # issue 37: after 200 days the kubelet's CSRs wait for csr-signer's regeneration (30 s), then Ready (5 s);
    # both live 30 days from the install, a day before the seal: expired after 29 days on the shelf, not after 28
    assert relocation.physical_limit_cluster_s(shelved_days=200) == 275.0
    assert relocation.physical_limit_cluster_s(shelved_days=10) == 240.0
    assert relocation.shelf_chain_cluster_s(29) == 35.0 and relocation.shelf_chain_cluster_s(28) == 0.0
    assert relocation.design_limit_cluster_s() == 270.0  # + the authentication operator's 30 s to publish
    rollouts = [rollout("kube-apiserver", 1.0, 48.0), rollout("ingress", 1.0, 9.0), rollout("kube-apiserver", 50, 48)]
    assert relocation.rollouts_per_operator(rollouts) == {"kube-apiserver": 2, "ingress": 1}


def test_an_exact_count_target_fails_above_and_below() -> None:
    assert common.exactly(1, 1)["met"] and common.exactly(1, 1)["comparison"] == "=="
    assert not common.exactly(2, 1)["met"] and not common.exactly(0, 1)["met"]
    assert common.verdict_lines({"targets": {"revisions": common.exactly(2, 1)}}) == ["revisions: 2 == 1: MISSED"]


def test_write_targets_are_read_from_the_url() -> None:
    cases = {
        ("PATCH", "/apis/route.openshift.io/v1/namespaces/shop/routes/web", ""): (
            ("routes.route.openshift.io", "shop", "web"),
            "",
        ),
        ("POST", "/api/v1/namespaces/openshift-config/secrets", "api-cert"): (
            ("secrets", "openshift-config", "api-cert"),
            "",
        ),
        ("PUT", "/apis/config.openshift.io/v1/apiservers/cluster", ""): (
            ("apiservers.config.openshift.io", "", "cluster"),
            "",
        ),
        ("PUT", "/apis/certificates.k8s.io/v1/certificatesigningrequests/csr-1/approval", ""): (
            ("certificatesigningrequests.certificates.k8s.io", "", "csr-1"),
            "approval",
        ),
    }
    for (method, path, name), expected in cases.items():
        assert api_economy.target_of(harness.Request(method, path, name, 200)) == expected


def test_a_write_that_changes_nothing_is_not_a_needed_change() -> None:
    key = ("secrets", "openshift-config", "pull-secret")
    same = ("configmaps", "openshift-config", "ca")
    before = {
        key: {"metadata": {"name": "pull-secret", "resourceVersion": "1"}, "data": {"a": "1"}},
        same: {"data": {}},
    }
    after = {key: {"metadata": {"name": "pull-secret", "resourceVersion": "9"}, "data": {"a": "2"}}, same: {"data": {}}}
    requests = [
        harness.Request("GET", "/api/v1/namespaces/openshift-config/secrets/pull-secret", "", 200),
        harness.Request("PUT", "/api/v1/namespaces/openshift-config/secrets/pull-secret", "", 200),
        harness.Request("PUT", "/api/v1/namespaces/openshift-config/configmaps/ca", "", 200),
    ]
    counted = api_economy.tally(requests, before, after)
    assert counted["requests"] == 3 and counted["writes"] == 2
    assert counted["changed"] == ["secrets/openshift-config/pull-secret"]
    assert counted["written_unchanged"] == ["configmaps/openshift-config/ca"]


def test_timeline_renders_valid_svg_and_text(tmp_path: Path) -> None:
    result = {
        "actual_wall_s": 30.0,
        "critical_chain": ["kube-apiserver"],
        "steps": [{"step": "domain", "start": 1.0, "end": 2.0}, {"step": "settle", "start": 2.0, "end": 29.0}],
        "rollouts": [rollout("kube-apiserver", 2.0, 24.0), rollout("ingress", 2.0, 9.0)],
    }
    root = ET.fromstring(timeline.svg(result, "a <test> & title"))
    assert root.tag.endswith("svg")
    bars = [
        e for e in root.iter() if e.tag.endswith("rect") and e.find("{http://www.w3.org/2000/svg}title") is not None
    ]
    assert len(bars) == 4
    text = timeline.gantt(result, width=30).splitlines()
    assert len(text) == 5 and "*" in text[3] and "=" in text[4] and "#" in text[1]


def test_certificates_benchmark(tmp_path: Path) -> None:
    loaded = well_formed(certificates.measure(repetitions=1), "certificates", tmp_path)
    assert set(loaded["results"]["seconds"]) == {"ec-p256", "rsa-2048"}


def test_startup_benchmark(tmp_path: Path) -> None:
    loaded = well_formed(startup.measure(repetitions=1, relocation_routes=-1), "startup", tmp_path)
    assert loaded["results"]["validate"]["peak_rss_mb"] > loaded["results"]["baseline"]["peak_rss_mb"]


@pytest.mark.slow
def test_relocation_benchmark(tmp_path: Path) -> None:
    loaded = well_formed(relocation.measure(speeds=[120.0]), "relocation", tmp_path)
    run = loaded["results"]["runs"][0]
    assert run["kube_apiserver_revisions"] == run["rollouts_per_operator"]["kube-apiserver"] >= 1
    assert run["physical_limit_s"] == relocation.physical_limit_cluster_s() / 120.0
    operators = {r["operator"] for r in run["rollouts"]}
    assert {"kube-apiserver", "openshift-apiserver", "machine-config"} <= operators
    assert [s["step"] for s in run["steps"]][-1] == "final-settle"
    parts = {k: v for k, v in run["chain"].items() if not k.startswith("of which")}
    assert sum(parts.values()) == pytest.approx(run["actual_wall_s"]), "the chain splits the whole run"
    assert 0 < run["chain"]["of which the oauth-host wait"] <= run["chain"]["to the revision"]
    assert run["design_limit_s"] == relocation.design_limit_cluster_s() / 120.0 > run["physical_limit_s"]
    relocation.write_svg(loaded, tmp_path / "timeline.svg")
    ET.parse(tmp_path / "timeline.svg")


@pytest.mark.slow
def test_relocation_benchmark_on_a_shelved_node(tmp_path: Path) -> None:
    loaded = well_formed(relocation.measure(speeds=[120.0], shelved=True), "relocation", tmp_path)
    run = loaded["results"]["runs"][0]
    assert loaded["results"]["shelved_node"] is True
    assert run["physical_limit_s"] == relocation.physical_limit_cluster_s(shelved=True) / 120.0
    csr = next(step for step in run["steps"] if step["step"] == "csr")
    revision = next(r for r in run["rollouts"] if r["operator"] == "kube-apiserver")
    assert revision["start"] > csr["end"], "no rollout before the node's CSRs are approved"


def test_sim_cpu_benchmark(tmp_path: Path) -> None:
    loaded = well_formed(sim_cpu.measure(routes=10, repetitions=1), "sim_cpu", tmp_path)
    run = loaded["results"]["runs"][0]
    assert run["routes"] == 10 and run["store_writes"] >= 10
    assert run["cpu_per_route_ms"] > 0 and run["write_path_cpu_per_route_ms"] > 0


def test_agent_cpu_benchmark_against_the_stand_in(tmp_path: Path) -> None:
    loaded = well_formed(agent_cpu.measure(routes=20, latencies=[2.0], workers=[1, 4]), "agent_cpu", tmp_path)
    rows = loaded["results"]["rows"]
    assert [(r["workers"], r["migrated"]) for r in rows] == [(1, 20), (4, 20)]
    assert all(r["agent_cpu_s"] > 0 and r["routes_per_s"] > 0 for r in rows)


def test_the_urllib3_floor_patches_every_route_of_the_stand_in() -> None:
    row = agent_cpu.floor_one(20, 2.0, 4)
    assert row["floor"] and row["migrated"] == 20 and row["agent_cpu_s"] > 0


def test_the_stand_in_answers_a_patch_with_the_new_host() -> None:
    stand_in = agent_cpu.StandIn(routes=2, latency=0.0, max_requests=10)
    path = f"/apis/route.openshift.io/v1/namespaces/{agent_cpu.NAMESPACE}/routes/app-00001"
    code, route = stand_in.answer("PATCH", path, b'{"spec": {"host": "app-00001.apps.new.example.com"}}')
    assert code == 200 and route["spec"]["host"] == "app-00001.apps.new.example.com"
    assert stand_in.answer("GET", "/apis/route.openshift.io/v1/routes", b"")[1]["items"][1] == route
    assert stand_in.answer("GET", "/api/v1/namespaces/x/secrets/y", b"")[0] == 404
    ops = [{"op": "test", "path": "/spec/host", "value": "x"}, {"op": "replace", "path": "/spec/host", "value": "y.z"}]
    assert stand_in.answer("PATCH", path, json.dumps(ops).encode())[1]["spec"]["host"] == "y.z"  # the agent's patch


@pytest.mark.slow
def test_api_economy_benchmark(tmp_path: Path) -> None:
    loaded = well_formed(api_economy.measure(speed=120.0), "api_economy", tmp_path)
    assert loaded["results"]["first_run"]["writes"] > 0


@pytest.mark.slow
def test_routes_scale_benchmark(tmp_path: Path) -> None:
    loaded = well_formed(routes_scale.measure(counts=[10]), "routes_scale", tmp_path)
    row = loaded["results"]["rows"][0]
    assert row["one_at_a_time"]["workers"] == 1
    assert row["one_at_a_time"]["migrated"] == row["concurrent"]["migrated"] > 0


@pytest.mark.slow
def test_baselines_benchmark(tmp_path: Path) -> None:
    loaded = well_formed(baselines.measure(speed=120.0, flows=["ztpfw"]), "baselines", tmp_path)
    flow, agent = loaded["results"]["baselines"]["ztpfw"], loaded["results"]["agent"]
    assert flow["rollouts_per_operator"]["kube-apiserver"] == 1
    assert flow["over_agent"] == flow["wall_s"] / agent["wall_s"]
    assert 0 < agent["cluster_phase_s"] < agent["wall_s"]
    assert flow["kube_apiserver_revisions"] == agent["kube_apiserver_revisions"] == 2  # one absorbed by the installer


def test_baselines_with_a_slow_oauth_publication(tmp_path: Path) -> None:
    """The trade the agent's oauth wait makes: CRO, writing the APIServer at once, restarts kube-apiserver twice
    when the oauth host comes out after the installer; the agent still once. The default is put back."""
    loaded = well_formed(baselines.measure(speed=120.0, flows=["cro"], oauth_publish=100.0), "baselines", tmp_path)
    flow, agent = loaded["results"]["baselines"]["cro"], loaded["results"]["agent"]
    assert loaded["results"]["oauth_publish_s"] == 100.0
    assert agent["rollouts_per_operator"]["kube-apiserver"] == 1
    assert flow["rollouts_per_operator"]["kube-apiserver"] == 2
    assert baselines.component_routes.APPLY_SECONDS == 30.0


def test_hub_sites_benchmark(tmp_path: Path) -> None:
    loaded = well_formed(hub_sites.measure(sites=3, qps_values=[0.0], repetitions=1), "hub_sites", tmp_path)
    assert loaded["results"]["new_unlimited"]["writes_per_site"] == hub_sites.WRITES_PER_NEW_SITE
    assert loaded["results"]["asked_unlimited"]["writes_per_site"] == hub_sites.WRITES_PER_ASKED_SITE


def test_fleet_controller_benchmark(tmp_path: Path) -> None:
    loaded = well_formed(fleet_controller.measure(4, 0.0, 2.0, 1), "fleet_controller", tmp_path)
    results = loaded["results"]
    assert results["writes_per_site_to_steady"]["median"] == hub_sites.WRITES_PER_NEW_SITE  # label, status
    assert results["steady_writes_per_site_per_minute"]["max"] == 0
    assert results["restart_writes_per_site"]["max"] == 0, "a restarted controller rewrites nothing"
    assert results["peak_rss_mb"]["median"] > 10, "the controller's own process, measured while it runs"


def test_fleet_reports_benchmark(tmp_path: Path) -> None:
    loaded = well_formed(fleet_reports.measure(3, 2.0, 1.0, 1), "fleet_reports", tmp_path)
    results = loaded["results"]
    assert results["reports"]["median"] == 3 * 2 and results["failed"]["max"] == 0
    assert results["node_writes_per_report"]["median"] == 1, "each node's report is one write"
    assert results["controller_writes"]["max"] == 0, "a report that changes no phase costs the controller nothing"
    assert results["first_report_controller_writes_per_site"]["median"] == 2, "the phase: label and status"
    assert 0 < results["p50_s"]["median"] <= results["p99_s"]["median"] <= results["max_s"]["median"]

"""The collect-logs bundle's content list: the route table, the journals of NetworkManager, nmstate and CRI-O, the
network before, after and now, a read of the cluster at collection time (over HTTPS against the simulator), each
member bounded and redacted, and a MANIFEST naming what is in it and what could not be read, and why."""

from __future__ import annotations

import json
import pathlib

import pytest

from snoreloc import redact
from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import command, kube
from snoreloc.cli import main
from snoreloc.engine import bundle, cluster_read, journal
from snoreloc.steps.host import site_network
from snoreloc_sim.openshift import simulator

SECRET = "route-key-s3cret-1234"
NOW = {"interfaces": [{"name": "br-ex", "type": "ovs-interface", "state": "up"}], "routes": {}}


def _state(tmp_path: pathlib.Path) -> pathlib.Path:
    state = tmp_path / "state"
    state.mkdir()
    doc = journal.Document(state=journal.RunState.DONE, order=["network"])
    before = site_network.state_summary({"interfaces": [{"name": "eno1", "type": "ethernet", "mtu": 1500}]})
    after = site_network.state_summary({"interfaces": [{"name": "eno1", "type": "ethernet", "ipv4": {"dhcp": False}}]})
    doc.steps["network"] = journal.StepRecord(
        state=journal.StepState.DONE,
        details={site_network.NETWORK_BEFORE: before, site_network.NETWORK_AFTER: after},
    )
    (state / "status.json").write_text(json.dumps(doc.to_storage()))
    (state / "routes.jsonl").write_text(json.dumps({"namespace": "shop", "name": "r1", "result": "migrated"}) + "\n")
    (state / "snoreloc.log").write_text(f"key {SECRET}\n")
    return state


def _runner() -> command.FakeRunner:
    runner = command.FakeRunner().on(["journalctl", "-u", "crio"], command.Result(1, "", "No journal files"))
    runner.on(["journalctl"], command.Result(0, "Jan 01 unit[1]: a line\n"))
    return runner.on(["nmstatectl", "show"], command.Result(0, json.dumps(NOW)))


PROXY_PASSWORD = "proxy-pw-hunter2-77"  # in a URL, the way a proxy's credentials surface in an Event


def _event(client: kube.Client, name: str, message: str, last: str) -> None:
    involved = {"kind": "ClusterOperator", "name": "authentication"}
    body = {"metadata": {"name": name, "namespace": "default"}, "involvedObject": involved, "reason": "Degraded"}
    client.create(kube.EVENTS, {**body, "type": "Warning", "message": message, "lastTimestamp": last})


def test_the_bundle_holds_what_support_asks_for_and_lists_it(sim: simulator.Simulator, tmp_path: pathlib.Path) -> None:
    redact.register_secret(SECRET)
    connect = cluster_read.connector(str(sim.kubeconfig_path), clock_mod.ScaledClock(sim.speed))
    client = connect()
    _event(client, "older", "RouteHealthDegraded: no such host", "2026-01-01T10:00:00Z")
    leak = f"route key {SECRET}, via http://edge:{PROXY_PASSWORD}@proxy.example.com:3128"
    _event(client, "newer", leak, "2026-01-01T11:00:00Z")
    client.close()
    members = bundle.collect(_state(tmp_path), _runner(), cluster=lambda: cluster_read.read(connect))
    assert {
        "routes.jsonl",
        "journal-NetworkManager.txt",
        "journal-nmstate.txt",
        "journal-crio.txt",
        "network/before.json",
        "network/after.json",
        "network/now.json",
        "cluster/clusteroperators.json",
        "cluster/machineconfigpool-master.json",
        "cluster/nodes.json",
        "cluster/csrs.json",
        "cluster/clusterversion.json",
        "cluster/config/apiserver.json",
        "cluster/config/ingress.json",
        "cluster/config/ingresscontroller-default.json",
        "cluster/config/proxy.json",
        "cluster/config/image.json",
        "cluster/config/imagedigestmirrorsets.json",
        "cluster/config/imagetagmirrorsets.json",
        "cluster/config/imagecontentsourcepolicies.json",
        "cluster/events.json",
        "journal-dnsmasq.txt",
        bundle.MANIFEST,
    } <= set(members)
    # the cluster's current configuration (issue 35): what a relocation changes, as it is now
    assert json.loads(members["cluster/clusterversion.json"])["metadata"]["name"] == "version"
    assert json.loads(members["cluster/config/ingress.json"])["spec"]["domain"].startswith("apps.")
    assert json.loads(members["cluster/config/ingresscontroller-default.json"])["metadata"]["name"] == "default"
    assert all(
        "managedFields" not in json.loads(members[f"cluster/config/{n}.json"])["metadata"] for n in ("proxy", "image")
    )
    events = json.loads(members["cluster/events.json"])["events"]
    ours = [e for e in events if e["namespace"] == "default" and e["object"].get("name") == "authentication"]
    assert [e["message"][:20] for e in ours] == ["route key <redacted>", "RouteHealthDegraded:"]  # newest first
    assert PROXY_PASSWORD.encode() not in members["cluster/events.json"]
    assert json.loads(members["network/before.json"])["interfaces"] == [
        {"name": "eno1", "type": "ethernet", "mtu": 1500}
    ]
    assert json.loads(members["network/now.json"]) == NOW
    operators = json.loads(members["cluster/clusteroperators.json"])
    assert {"kube-apiserver", "machine-config"} <= {o["metadata"]["name"] for o in operators}
    assert json.loads(members["cluster/machineconfigpool-master.json"])["metadata"]["name"] == "master"
    assert all("request" not in c["spec"] for c in json.loads(members["cluster/csrs.json"]))
    manifest = members[bundle.MANIFEST].decode()
    for name, data in members.items():
        if name != bundle.MANIFEST:
            assert f"  {name}\t{len(data)} bytes" in manifest
    assert "journal-crio.txt: journalctl exited 1" in manifest  # read, but the journal said why it had nothing
    assert "report.json: no " in manifest  # no run wrote one here
    assert all(SECRET.encode() not in data for data in members.values())


def test_a_cluster_that_cannot_be_read_is_named_with_why(tmp_path: pathlib.Path) -> None:
    missing = str(tmp_path / "no-kubeconfig")
    read = cluster_read.read(cluster_read.connector(missing, clock_mod.SystemClock()))
    assert read.members == {} and set(read.unread) == {name for name, _ in cluster_read.READS}
    members = bundle.collect(_state(tmp_path), _runner(), cluster=lambda: read)
    manifest = members[bundle.MANIFEST].decode()
    assert "cluster/nodes.json: no client for the API" in manifest


def test_every_member_is_bounded(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundle, "MAX_MEMBER_BYTES", 1000)
    state = _state(tmp_path)
    (state / "snoreloc.log").write_text("x" * 5000)
    members = bundle.collect(state, _runner())
    assert len(members["snoreloc.log"]) < 1100 and members["snoreloc.log"].endswith(b"cut at 1000 bytes of 5000\n")
    assert "cluster/: not asked" in members[bundle.MANIFEST].decode()


@pytest.mark.allow_subprocess
def test_the_verb_writes_the_manifest(tmp_path: pathlib.Path) -> None:
    output = tmp_path / "b.tar.gz"
    state = _state(tmp_path)
    code = main.main(["collect-logs", "--state-dir", str(state), "--output", str(output), "--kubeconfig", ""])
    assert code == 0 and output.stat().st_size > 0


def test_a_dead_api_costs_one_read_not_one_per_member(sim: simulator.Simulator) -> None:
    """Fourteen reads of the cluster: once one finds the API unreachable, the others are named, not tried."""
    sim.cluster.availability.outage(3600.0, "refuse")
    read = cluster_read.read(cluster_read.connector(str(sim.kubeconfig_path), clock_mod.ScaledClock(sim.speed)))
    first = cluster_read.READS[0][0]
    assert read.members == {} and set(read.unread) == {name for name, _ in cluster_read.READS}
    assert all(
        why == f"not tried: the API did not answer the read of {first}"
        for name, why in read.unread.items()
        if name != first
    )

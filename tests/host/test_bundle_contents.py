"""The collect-logs bundle's content list: the route table, the journals of NetworkManager, nmstate and CRI-O, the
network before, after and now, a read of the cluster at collection time (over HTTPS against the simulator), each
member bounded and redacted, and a MANIFEST naming what is in it and what could not be read, and why."""

from __future__ import annotations

import json
import pathlib

import pytest

from snoreloc import redact
from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import command
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


def test_the_bundle_holds_what_support_asks_for_and_lists_it(sim: simulator.Simulator, tmp_path: pathlib.Path) -> None:
    redact.register_secret(SECRET)
    connect = cluster_read.connector(str(sim.kubeconfig_path), clock_mod.ScaledClock(sim.speed))
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
        bundle.MANIFEST,
    } <= set(members)
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

"""`seal` computes the must-boot-by horizon from a simulated factory cluster's Secrets over HTTPS (issue 37)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from snoreloc.adapters import clock, command, fs, kube
from snoreloc.factory import seal
from snoreloc.pki import shelf
from snoreloc_sim.openshift import simulator


@pytest.mark.simonly  # the simulator's factory-fresh signers (a real cluster's dates are its own)
def test_seal_reads_every_signer_and_the_kubelet_ca_sets_the_date(sim: simulator.Simulator, tmp_path: Path) -> None:
    client = kube.Client.from_kubeconfig(str(sim.kubeconfig_path), clock=clock.SystemClock())
    read = seal.KubeClusterFacts(client).certificates()
    assert set(read) == {w.name for w in shelf.WATCHED if not w.path} and None not in read.values()
    host = fs.HostFS(tmp_path / "root")
    for path, pem in sim.seed_facts.kubelet_pki:
        host.write_bytes(path, pem)
    horizon, unread = seal.read_horizon(seal.Node(host, command.FakeRunner(), clock.SystemClock()), read)
    assert unread == []
    record = horizon.record()
    assert record["setBy"] == "kube-apiserver-to-kubelet-signer"
    left = shelf.parse_stamp(record["mustBootBy"]) - datetime.now(UTC)
    assert timedelta(days=363) < left < timedelta(days=365)  # 365 days from an install a day before the seal

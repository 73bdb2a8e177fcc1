"""Node mode (`snoreloc run` without --cluster-only) writes `snoreloc.log` in the state directory, as
`run --cluster-only` does: every detail, redacted, including what the console leaves out at its default level."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from snoreloc.adapters import clock, fs
from snoreloc.engine import node, paths, runner
from snoreloc.host import kubelet
from snoreloc.steps import context
from snoreloc_sim.demo import flow as demo
from snoreloc_sim.openshift import simulator


@pytest.mark.simonly  # the demo's site-config, written for the simulator's seed (node, mirrors, signers)
def test_node_mode_writes_the_log_file(tmp_path: Path, sim: simulator.Simulator) -> None:
    root = fs.HostFS(tmp_path / "root")
    root.mkdir("/etc/snoreloc", 0o700)
    root.write_text(kubelet.SEAL_MARKER, json.dumps({"domain": "sno1.factory.example.com"}), mode=0o644)
    demo.write_site(root, sim)
    the_paths = paths.Paths.under(root.path("/"))
    req = node.NodeRequest(
        paths=the_paths,
        options=runner.Options(),
        settings=context.Settings(ingress_endpoint=sim.router_address, poll_interval=5.0),
    )
    node.relocate(req, demo.services(root, sim, clock.ScaledClock(sim.cluster.timeline.speed)))
    text = the_paths.log.read_text()
    assert oct(the_paths.log.stat().st_mode & 0o777) == "0o600"
    assert "INFO snoreloc.progress: api: the API answers" in text, text[-2000:]
    assert "INFO snoreloc.steps.host.kubelet_start: kubelet: starting" in text  # below the console's default level
    assert not [h for h in logging.getLogger("snoreloc").handlers if isinstance(h, logging.FileHandler)]

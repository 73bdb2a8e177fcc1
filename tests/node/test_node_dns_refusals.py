"""A node whose dnsmasq overrides file snoreloc cannot read as bash does, or which is a link, is refused before the
first step changes anything (issue 30): the run stops with the documented exit code (69 with the file's line, 77
for a link), the network is as the factory left it, no step ran, the file and its link are untouched, nothing is
backed up and dnsmasq is not restarted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sealed import sealed_root
from snoreloc import errors
from snoreloc.adapters import clock, fs
from snoreloc.engine import node, paths, runner
from snoreloc.host import node_dns
from snoreloc.steps import context
from snoreloc_sim.demo import flow as demo
from snoreloc_sim.openshift import simulator

UNREADABLE = f"{node_dns.BASE}=factory.example.com\nunset {node_dns.BASE}\n"


@pytest.fixture
def root(tmp_path: Path) -> fs.HostFS:
    return sealed_root(tmp_path, internal_ip=True)


def _relocate(root: fs.HostFS, sim: simulator.Simulator) -> tuple[errors.SnorelocError, node.Services]:
    demo.write_site(root, sim)
    svc = demo.services(root, sim, clock.ScaledClock(sim.cluster.timeline.speed))
    network = json.dumps(svc.host.nmstate.show(), sort_keys=True)
    request = node.NodeRequest(
        paths=paths.Paths.under(root.path("/")),
        options=runner.Options(),
        settings=context.Settings(ingress_endpoint=sim.router_address, poll_interval=5.0),
        page_host="127.0.0.1",
        page_port=0,
    )
    with pytest.raises(errors.SnorelocError) as refused:
        node.relocate(request, svc)
    assert json.dumps(svc.host.nmstate.show(), sort_keys=True) == network, "the factory network is untouched"
    status = root.path("/var/lib/snoreloc/status.json")
    steps = json.loads(status.read_text()).get("steps", {}) if status.exists() else {}
    assert all(record.get("state") == "pending" for record in steps.values()), steps
    assert not node_dns.backed_up(request.paths.state_dir)
    assert ("systemctl", "restart", node_dns.UNIT) not in svc.host.units.runner.commands()  # type: ignore[attr-defined]
    assert refused.value.message.endswith("What was changed: this run changed nothing."), "from the journal (issue 35)"
    return refused.value, svc


@pytest.mark.simonly
def test_an_overrides_file_bash_reads_otherwise_stops_the_run_before_any_change(
    root: fs.HostFS, sim: simulator.Simulator
) -> None:
    root.write_text(node_dns.OVERRIDES, UNREADABLE, mode=0o644)
    refused, _svc = _relocate(root, sim)
    assert refused.exit_code == errors.ExitCode.UNAVAILABLE
    assert f"{node_dns.OVERRIDES} line 2: `unset`" in refused.message and "KEY=VALUE" in (refused.hint or "")
    assert root.read_text(node_dns.OVERRIDES) == UNREADABLE


@pytest.mark.simonly
def test_an_overrides_file_that_is_a_link_stops_the_run_before_any_change(
    root: fs.HostFS, sim: simulator.Simulator, tmp_path: Path
) -> None:
    target = tmp_path / "shared-overrides"
    target.write_text(f"{node_dns.BASE}=factory.example.com\n")
    root.path(node_dns.OVERRIDES).parent.mkdir(parents=True, exist_ok=True)
    root.path(node_dns.OVERRIDES).symlink_to(target)
    refused, _svc = _relocate(root, sim)
    assert refused.exit_code == errors.ExitCode.NO_PERMISSION and "is a symlink" in refused.message
    assert root.path(node_dns.OVERRIDES).is_symlink() and target.read_text() == f"{node_dns.BASE}=factory.example.com\n"

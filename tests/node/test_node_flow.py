"""The whole node flow (discovery -> validation -> network -> kubelet -> API -> cluster steps -> finish) against
the simulator over HTTPS, with the host on fakes and a temporary root: what the systemd unit runs at the site.

These are `simonly`: they use the demo's site-config, which is written for the simulator's seed (its node name,
factory mirror and signers). Against a real cluster the same cluster steps run in `tests/cluster`."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from sealed import node_request, sealed_root
from snoreloc import errors
from snoreloc.adapters import clock, console, fs, kube, probe
from snoreloc.cli import main
from snoreloc.engine import node
from snoreloc.host import kubelet
from snoreloc_sim import pytest_plugin
from snoreloc_sim.demo import flow as demo
from snoreloc_sim.openshift import simulator


def _request(root: fs.HostFS, sim: simulator.Simulator) -> node.NodeRequest:
    return node_request(root, sim.router_address)


def _services(root: fs.HostFS, sim: simulator.Simulator) -> node.Services:
    return demo.services(root, sim, clock.ScaledClock(sim.cluster.timeline.speed))


@pytest.fixture
def root(tmp_path: Path) -> fs.HostFS:
    return sealed_root(tmp_path)


@pytest.mark.simonly  # see the module docstring: the demo's site-config, for the simulator's seed
def test_node_flow_relocates_and_disarms(root: fs.HostFS, sim: simulator.Simulator) -> None:
    demo.write_site(root, sim)
    svc = _services(root, sim)

    result = node.relocate(_request(root, sim), svc)

    assert result.state.value in ("done", "done-with-warnings")
    status = json.loads(root.read_text("/var/lib/snoreloc/status.json"))
    assert [s for s in status["order"][:4]] == ["network", "node-dns", "kubelet", "api"]
    assert all(status["steps"][name]["state"] == "done" for name in status["order"])
    assert not root.exists(kubelet.SEAL_MARKER), "a successful run disarms the unit"
    units = svc.host.units.runner
    assert units.ran("systemctl", "start", "--no-block", kubelet.KUBELET)  # type: ignore[attr-defined]
    assert units.ran("systemctl", "enable", kubelet.KUBELET)  # type: ignore[attr-defined]
    banner = root.read_text(console.ISSUE_FILE)
    assert "relocation done" in banner and "console-openshift-console.apps.store042.edge.example.net" in banner
    network = svc.host.nmstate.show()
    assert any(i["name"] == "eno1.120" for i in network["interfaces"])
    settings = svc.client_factory().get(kube.Ref(kube.CONFIGMAPS, "store-settings", "store-apps"))
    assert settings["data"]["store-id"] == "0412", "the example's extra manifests were applied"


def test_the_demo_applies_the_examples_manifests() -> None:
    examples = Path(__file__).resolve().parents[2] / "examples" / "manifests"
    shipped = {path.name: path.read_text() for path in demo.MANIFESTS.glob("*.yaml")}
    assert shipped and shipped == {path.name: path.read_text() for path in examples.glob("*.yaml")}


@pytest.mark.simonly  # see the module docstring: the demo's site-config, for the simulator's seed
def test_rerun_with_same_config_makes_no_api_write(root: fs.HostFS, sim: simulator.Simulator) -> None:
    demo.write_site(root, sim)
    svc = _services(root, sim)  # the same host: its network and kubelet keep what the first run did
    node.relocate(_request(root, sim), svc)
    writes_before = sim.cluster.recorder.writes

    second = node.relocate(_request(root, sim), svc)

    assert sim.cluster.recorder.writes == writes_before
    assert set(second.actions.values()) == {"skipped"}, second.actions


def _corrupt_domain(root: fs.HostFS) -> None:
    doc: dict[str, Any] = yaml.safe_load(root.read_text("/etc/snoreloc/site-config.yaml"))
    doc["spec"]["domain"] = "Not_A_Domain..example"
    root.write_text("/etc/snoreloc/site-config.yaml", yaml.safe_dump(doc), mode=0o600)


@pytest.mark.simonly  # see the module docstring: the demo's site-config, for the simulator's seed
def test_bad_site_config_changes_nothing(root: fs.HostFS, sim: simulator.Simulator) -> None:
    demo.write_site(root, sim)
    _corrupt_domain(root)
    svc = _services(root, sim)
    writes_before = sim.cluster.recorder.writes

    with pytest.raises(errors.ConfigError) as caught:
        node.relocate(_request(root, sim), svc)

    assert caught.value.exit_code == 65
    assert any(p.path == "spec.domain" for p in caught.value.problems)
    assert sim.cluster.recorder.writes == writes_before
    assert not svc.host.units.runner.ran("systemctl", "start")  # type: ignore[attr-defined]
    assert svc.host.nmstate.show() == demo.FACTORY_NETWORK
    assert "FAILED at step site-config" in root.read_text(console.ISSUE_FILE)
    assert "Now: Re-insert the stick labelled relocation-config" in root.read_text(console.ISSUE_FILE)
    assert root.exists(kubelet.SEAL_MARKER)


@pytest.mark.simonly  # see the module docstring: the demo's site-config, for the simulator's seed
def test_failed_network_probe_rolls_back_and_stops_before_kubelet(root: fs.HostFS, sim: simulator.Simulator) -> None:
    demo.write_site(root, sim)
    svc = _services(root, sim)
    failing = node.Services(
        host=node.HostServices(
            fs=svc.host.fs, nmstate=svc.host.nmstate, prober=probe.FakeProber(failing={"10.42.0.1"}),
            units=svc.host.units,
        ),
        devices=svc.devices, banner=svc.banner, client_factory=svc.client_factory, clock=clock.FakeClock(),
        echo=svc.echo,
    )  # fmt: skip

    with pytest.raises(errors.TemporaryError):
        node.relocate(_request(root, sim), failing)

    assert svc.host.nmstate.show() == demo.FACTORY_NETWORK, "the previous network is restored"
    assert not svc.host.units.runner.ran("systemctl", "start")  # type: ignore[attr-defined]
    status = json.loads(root.read_text("/var/lib/snoreloc/status.json"))
    assert status["steps"]["network"]["state"] == "failed"
    assert "FAILED at step network" in root.read_text(console.ISSUE_FILE)


@pytest.mark.simonly  # see the module docstring: the demo's site-config, for the simulator's seed
def test_demo_command_runs_end_to_end(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    args = argparse.Namespace(
        speed=600.0 / pytest_plugin.slowdown(),
        seed="4.14",
        routes=3,
        keep=None,
        output="json",
        page_port=0,
        svg=str(tmp_path / "t.svg"),
    )  # paced to the machine's load as the `sim` fixture is: the run's one-hour deadline is 6 s of wall time at 600x

    assert demo.run(args) == 0

    report = json.loads(capsys.readouterr().out)
    assert report["urls"]["console"] == "https://console-openshift-console.apps.store042.edge.example.net"
    assert "rollout: kube-apiserver" in (tmp_path / "t.svg").read_text(), "the demo draws its timeline"


def test_the_demos_last_lines_say_what_remains_and_point_only_at_what_exists(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    kept = tmp_path / "kept"
    args = argparse.Namespace(
        speed=100.0, seed="4.14", routes=0, keep=str(kept), output="text", page_port=0, svg=str(tmp_path / "t.svg")
    )  # 100x: the run's one-hour deadline is 36 s of wall time, a margin on a loaded machine (the label tests 100x)
    assert demo.run(args) == 0
    captured = capsys.readouterr()
    err = captured.err
    assert "of wall time (the steps below count the simulated cluster's seconds, 100x faster)" in err
    assert "steps (simulated seconds (the cluster ran 100x: 1/100 of that in wall time)):" in captured.out
    ending = err[err.index("console banner") :]
    assert not re.search(r"(?<![\w/])/var/lib", ending) and "Progress page:" not in ending, ending
    assert f"{kept}/root/var/lib/snoreloc/snoreloc-logs.tar.gz" in ending, "the bundle hint names the kept state"
    last = ending[ending.index("snoreloc demo: what remains") :]
    assert "the simulated cluster and the progress page stopped with the demo" in last
    commands = [line.strip().split() for line in last.splitlines() if line.startswith("  snoreloc ")]
    assert [c[1] for c in commands] == ["status", "analyze", "collect-logs"]
    for command in commands[:2]:
        assert main.main(command[1:]) in (0, 2), command  # what the demo says to run works on what it kept
    assert (kept / "root" / "var" / "lib" / "snoreloc" / "status.json").exists() and (tmp_path / "t.svg").exists()

    gone = demo.remains(argparse.Namespace(keep=None, svg="/tmp/t.svg"), tmp_path / "gone", kept)
    assert "now removed" in gone and "--keep DIR" in gone and not re.search(r"(?<![\w/])/var/lib", gone)


@pytest.mark.simonly  # see the module docstring: the demo's site-config, for the simulator's seed
def test_plan_shows_the_node_before_the_cluster(root: fs.HostFS, sim: simulator.Simulator) -> None:
    demo.write_site(root, sim)
    svc = _services(root, sim)
    before = svc.host.nmstate.show()

    planned = node.plan_node(_request(root, sim), svc)

    assert [p.step for p in planned.plans] == ["site-config", "network", "node-dns", "kubelet"]
    assert planned.plans[0].notes == (f"{root.path('/etc/snoreloc/site-config.yaml')} (host-file): valid",)
    network = planned.plans[1].notes
    assert network[0].startswith('interface eno1.120: add {"ipv4": {"address": [{"ip": "10.42.0.10"')
    assert any(line.startswith("route ") and "10.42.0.1" in line for line in network)
    assert any(line.startswith("dns-resolver: ") and "10.42.0.53" in line for line in network)
    assert network[-1] == "apply the nmstate state, then probe: gateway 10.42.0.1, dns 10.42.0.53"
    assert planned.plans[2].notes[0].startswith("on: set SNO_CLUSTER_NAME_OVERRIDE=store042, ")
    assert planned.plans[3].notes == ("start kubelet (seal stopped it)",) and not planned.kubelet_running
    assert svc.host.nmstate.show() == before, "plan changes nothing"
    assert not svc.host.units.runner.ran("systemctl", "start")  # type: ignore[attr-defined]


@pytest.mark.simonly  # a 4.12 seed
@pytest.mark.parametrize("sim", [{"seed": "4.12"}], indirect=True)
def test_tag_mirrors_on_a_4_12_node_blame_the_site_config_not_a_step(root: fs.HostFS, sim: simulator.Simulator) -> None:
    """Issue 35: a refused `imageTagMirrors` was shown as "csr: failed". It is checked once the API answers (after
    the host steps) and before the first cluster step: the run's error, the banner names the site-config."""
    demo.write_site(root, sim)
    doc: dict[str, Any] = yaml.safe_load(root.read_text("/etc/snoreloc/site-config.yaml"))
    doc["spec"]["imageTagMirrors"] = [{"source": "quay.io/store/app", "mirrors": ["mirror.store042.example.net/app"]}]
    root.write_text("/etc/snoreloc/site-config.yaml", yaml.safe_dump(doc), mode=0o600)
    svc = _services(root, sim)

    with pytest.raises(errors.ConfigError) as caught:
        node.relocate(_request(root, sim), svc)

    assert caught.value.exit_code == 65 and "spec.imageTagMirrors cannot be applied" in caught.value.message
    status = json.loads(root.read_text("/var/lib/snoreloc/status.json"))
    assert status["state"] == "failed" and status["error"]["exit_code"] == 65
    assert "failed" not in {step["state"] for step in status["steps"].values()}, status["steps"]
    assert status["steps"]["api"]["state"] == "done"  # the host steps ran: the API answered for the check
    banner = root.read_text(console.ISSUE_FILE)
    assert "FAILED at step site-config" in banner and "Now: Re-insert the stick labelled relocation-config" in banner

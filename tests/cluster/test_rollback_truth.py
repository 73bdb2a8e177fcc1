"""`snoreloc rollback` after a proxy + NTP relocation, through the CLI: it says before the first write that the node
will reboot and which rollouts it starts, waits (bounded, visibly) through the reboot until the cluster has settled,
reports what it restored and that the host network stays at the site, and exits 0 like `run`; `status` then gives
the rolled-back advice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from snoreloc import errors
from snoreloc.adapters import console
from snoreloc.cli import main
from snoreloc.engine import journal, view
from snoreloc.siteconfig import model
from snoreloc.steps.cluster import ntp, proxy

from .conftest import Relocation, settled, site_config

# The rollback reboots the node: a real cluster given to the suite would have to live through it twice. At 60x the
# MCO's 5 s render pause (83 ms) still holds the proxy and the NTP writes in one pool update, as in
# test_example_site.
pytestmark = [pytest.mark.simonly, pytest.mark.parametrize("sim", [{"speed": 60.0}], indirect=True)]

URL = "http://proxy.edge7.example.net:3128"
SITE = site_config(
    ntp=model.Ntp(servers=("ntp1.edge7.example.net",)), proxy=model.Proxy(URL, URL, (".edge7.example.net",))
)


def _rollback(r: Relocation, *extra: str) -> int:
    argv = ["rollback", "--kubeconfig", str(r.sim.kubeconfig_path), "--root", str(r.root)]
    return main.main([*argv, "--time-scale", str(r.sim.speed), "--poll-interval", "2", *extra])


def _banner(r: Relocation, text: str | None = None) -> str:
    """The node's console banner under the test's root (written first when `text` is given)."""
    path = r.root / console.ISSUE_FILE.lstrip("/")
    if text is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path.read_text()


@pytest.mark.allow_subprocess  # the banner asks agetty to redraw (absent here: a courtesy that may fail)
def test_rollback_after_proxy_and_ntp_says_it_reboots_waits_through_it_and_reports(
    relocation: Relocation, capsys: pytest.CaptureFixture[str]
) -> None:
    relocation.run(SITE)
    _banner(relocation, "snoreloc: relocation done.\nNow: Nothing to do: the relocation is done.\n")
    recorder = relocation.sim.cluster.recorder
    reboots = recorder.reboots
    capsys.readouterr()

    assert _rollback(relocation) == 0
    out, err = capsys.readouterr()
    said = err.splitlines()
    reboot_line = next(i for i, line in enumerate(said) if "THIS REBOOTS THE NODE" in line)
    assert any("rollouts it starts:" in line and "mcp/master" in line for line in said[: reboot_line + 2])
    assert any("kube-apiserver" in line for line in said if line.startswith("rollback: rollouts"))
    assert any("host network stays at the site" in line for line in said)
    waited = [line for line in said if "waiting for the cluster to settle after the rollback" in line]
    assert said.index(waited[0]) > reboot_line if waited else True  # said before it waits, never after

    # it waited through the reboot: the node rebooted during the rollback, and the cluster is settled on return
    assert recorder.reboots == reboots + 1
    assert settled(relocation.client)
    assert relocation.client.find(ntp.CHRONY_CONFIG) is None
    assert relocation.get(proxy.PROXY_CLUSTER)["spec"].get("httpProxy") in (None, "")
    assert "the node rebooted for it" in out
    assert "not restored: the host network stays at the site" in out
    assert f"restored: {proxy.PROXY_CLUSTER}" in out and f"deleted: {ntp.CHRONY_CONFIG}" in out
    assert "mcp/master" in out  # the rollouts it waited for

    doc = journal.read(relocation.paths.status)
    assert doc.state is journal.RunState.ROLLED_BACK and doc.run is not None and doc.run.mode == "rollback"
    assert main.main(["status", "--root", str(relocation.root)]) == 4  # rolled back: not "failed" (issue 35)
    assert f"now: {view.todo('rolled-back')}" in capsys.readouterr().out
    assert "snoreloc: rolled back." in _banner(relocation)  # the console no longer says the relocation is done
    assert view.todo("rolled-back") in _banner(relocation)


def test_a_second_rollback_has_nothing_to_do_and_says_so(
    relocation: Relocation, capsys: pytest.CaptureFixture[str]
) -> None:
    relocation.run(site_config())
    assert _rollback(relocation, "--output", "json") == 0
    first = json.loads(capsys.readouterr().out)
    assert first["restored"] and first["reboot"] is False
    assert first["not_restored"] == [next(iter(first["not_restored"]))]
    assert _rollback(relocation) == 0
    out, err = capsys.readouterr()
    assert "nothing to restore" in err and "rolled back 0 object(s)" in out


@pytest.mark.allow_subprocess  # the banner asks agetty to redraw
def test_a_rollback_that_runs_out_of_time_exits_75_and_says_rollback_failed(
    relocation: Relocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    relocation.run(SITE)
    site = tmp_path / "short.yaml"
    site.write_text(
        "apiVersion: snoreloc.io/v1alpha1\nkind: SiteConfig\nmetadata:\n  name: site7\n"
        "spec:\n  domain: edge7.example.net\n  timeouts:\n    settle: 300\n"
        "  operators:\n    require: [no-such-operator]\n"  # never settles: the wait runs out, whatever the load
    )
    _banner(relocation, "snoreloc: relocation done.\n")
    assert _rollback(relocation, "--site-config", str(site)) == 75
    assert "snoreloc: rollback FAILED." in _banner(relocation) and "run `snoreloc rollback` again" in _banner(
        relocation
    )
    doc = journal.read(relocation.paths.status)
    assert doc.state is journal.RunState.ROLLBACK_FAILED and doc.error is not None and doc.error.exit_code == 75
    capsys.readouterr()
    assert main.main(["status", "--root", str(relocation.root)]) == 1
    assert "run `snoreloc rollback` again" in capsys.readouterr().out
    writes = relocation.client.writes
    with pytest.raises(errors.UnavailableError, match="the last rollback did not finish"):
        relocation.run(SITE)  # would take the half-restored objects for the originals
    assert relocation.client.writes == writes

    capsys.readouterr()
    assert _rollback(relocation) == 0  # again: nothing left to restore, but the rollouts the first one started
    out, err = capsys.readouterr()
    assert "nothing to restore" in err and "waits for the rollouts an earlier rollback started" in err
    assert "mcp/master" in out and journal.read(relocation.paths.status).state is journal.RunState.ROLLED_BACK

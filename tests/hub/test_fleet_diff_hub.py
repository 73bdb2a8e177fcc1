"""`fleet diff --kubeconfig` against the hub simulator over HTTPS, with the real controller: a change that gives a
new medium to a Site whose node is mid-run exits 75 and names it; the same change to a Site that is only Ready (its
stick made, not yet used) is listed with its stick to remake and passes (exit 0)."""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from snoreloc_fleet.resource import site

from snoreloc.adapters import clock, kube
from snoreloc.cli import main
from snoreloc.engine import hubreport, journal
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import NS, SITES, Running, report_kubeconfig, site_client, site_object, stick_site, wait_phase


def _tree(directory: pathlib.Path, sites: list[dict[str, Any]]) -> pathlib.Path:
    """A fleet tree (as `render --git` lays it out) holding these Sites."""
    for obj in sites:
        (directory / obj["metadata"]["name"]).mkdir(parents=True)
        (directory / obj["metadata"]["name"] / "site.yaml").write_text(yaml.safe_dump(obj))
    return directory


def _start_run(hub: HubSimulator, admin: kube.Client, name: str, digest: str, tmp_path: pathlib.Path) -> None:
    """The node of Site `name` reports a run in progress with its stick's credential, as the agent's reporter does."""
    node = site_client(hub, report_kubeconfig(admin, name), f"{name}.kubeconfig")
    jour = journal.Journal(tmp_path / f"{name}.json", clock.SystemClock())
    jour.begin_run(site_name=name, site_fingerprint="f", order=["network"], mode="node", site_path="site-config.yaml")
    try:
        report = hubreport.snapshot(jour.doc, digest=digest)
        path = kube.Ref(SITES, name, NS).path("status")
        node.request("PATCH", path, body={"status": {site.STATUS_AGENT: report}}, content_type=kube.MERGE_PATCH)
    finally:
        node.close()


def test_a_change_to_a_site_in_progress_exits_75_and_one_to_a_ready_site_passes(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    start_controller()
    running = stick_site(admin, "store-1")
    stick_site(admin, "store-2")
    _start_run(hub, admin, "store-1", running["status"]["media"]["digest"], tmp_path)
    wait_phase(admin, "store-1", site.Phase.IN_PROGRESS)
    before = [site_object(n) for n in ("store-1", "store-2")]
    after = [site_object(n, {"domain": f"sno.{n}.example.net", "pullSecret": {"file": "pull-secret.json"}}) for n in
             ("store-1", "store-2")]  # fmt: skip
    base, head = _tree(tmp_path / "base", before), _tree(tmp_path / "head", after)
    argv = ["fleet", "diff", str(base), str(head), "--kubeconfig", str(hub.kubeconfig_path)]

    code = main.main(argv)
    out = capsys.readouterr()
    assert code == 75, out.err
    assert "medium   fleet/store-1 [hub: InProgress, stick made] IN PROGRESS: wait until its run ends" in out.out
    assert "medium   fleet/store-2 [hub: Ready, stick made]: " in out.out and "remake its stick" in out.out
    assert "1 site(s) in progress would be changed: fleet/store-1" in out.err

    code = main.main([*argv[:3], str(_tree(tmp_path / "only-2", [before[0], after[1]])), *argv[4:]])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "IN PROGRESS" not in out.out and "medium   fleet/store-2 [hub: Ready, stick made]" in out.out

"""`snoreloc demo --fleet N`: the newcomer's fleet, end to end on the hub simulator, in one command."""

from __future__ import annotations

import argparse
import json
import pathlib

import pytest

from snoreloc_sim.demo import fleet as demo


def test_the_fleet_demo_renders_validates_reports_and_draws(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert demo.run(argparse.Namespace(fleet=8, keep=str(tmp_path))) == 0
    out = capsys.readouterr().out
    assert "8 site-configs: 7 valid, 1 invalid" in out
    assert f"store-{demo.BAD_ROW:04d}: " in out and "[sites.csv line 8, column gateway]" in out
    assert "the controller: {'Ready': 7, 'Invalid': 1}" in out
    assert "store-0002: the node reports failed" in out
    assert "  Relocated        1" in out and "  Failed           1" in out and "  InProgress       1" in out
    assert "do now: re-insert the stick" in out
    page = (tmp_path / "fleet.html").read_text()
    assert "8 sites" in page and '<details id="t-fleet-demo-store-0002">' in page
    sites = json.loads(json.dumps([p.name for p in (tmp_path / "sticks").iterdir()]))
    assert sorted(sites) == ["store-0001", "store-0002", "store-0003"]
    assert (tmp_path / "sticks" / "store-0001" / "hub-report.kubeconfig").stat().st_mode & 0o077 == 0

"""Issue 35: every place a run's seconds appear says whose seconds they are. A run against the simulator keeps its
clock's speed in the journal (`journal.RunInfo.speed`, from the run's `ScaledClock`), so `status --long`, the
progress page and the report label their times "simulated seconds (the cluster ran Nx ...)"; on a node (speed 1)
they say "wall-clock seconds"."""

from __future__ import annotations

import pytest

from snoreloc.cli import main
from snoreloc.engine import journal, page, report, view

from .conftest import Relocation


def test_status_page_and_report_label_the_runs_seconds(
    relocation: Relocation, capsys: pytest.CaptureFixture[str]
) -> None:
    relocation.run()
    speed = relocation.target.speed
    label = report.clock_label(speed)
    assert ("simulated seconds" in label) == (speed != 1.0)

    doc = journal.read(relocation.paths.status)
    assert doc.run is not None and doc.run.speed == speed, "the journal keeps the run's clock speed"
    capsys.readouterr()
    assert main.main(["status", "--long", "--state-dir", str(relocation.paths.state_dir)]) in (0, 2)
    assert f"step times: {label}" in capsys.readouterr().out
    progress = view.progress(view.facts(doc))
    assert f"took: {label}" in page.render(progress, "")
    assert report.seconds_label(relocation.report()) == label


def test_a_journal_without_a_speed_is_wall_clock_and_an_implausible_one_is_ignored() -> None:
    assert journal.RunInfo.from_storage({"pid": 1, "mode": "node"}).speed == 1.0  # type: ignore[union-attr]
    for bad in (0, -3, "600", True, 1e12, float("nan")):
        assert journal.RunInfo.from_storage({"pid": 1, "speed": bad}).speed == 1.0  # type: ignore[union-attr]
    kept = journal.RunInfo.from_storage({"pid": 1, "speed": 600})
    assert kept is not None and kept.speed == 600 and kept.to_storage()["speed"] == 600
    assert "speed" not in journal.RunInfo(1, None, None, "node").to_storage(), "a node's journal is as before"

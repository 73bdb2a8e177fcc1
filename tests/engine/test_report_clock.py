"""The report says what its steps' seconds are: wall-clock on a node, simulated when the run's clock was scaled."""

from __future__ import annotations

from snoreloc.engine import report


def test_a_nodes_report_counts_wall_clock_seconds() -> None:
    assert report.seconds_label({"clock": report.clock_of(1.0)}) == "wall-clock seconds"
    assert report.seconds_label({}) == "wall-clock seconds"  # a report of an earlier release: a node's


def test_a_scaled_run_counts_simulated_seconds_and_says_the_scale() -> None:
    label = report.seconds_label({"clock": report.clock_of(20.0)})
    assert label == "simulated seconds (the cluster ran 20x: 1/20 of that in wall time)"

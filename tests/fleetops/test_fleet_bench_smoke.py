"""The fleet-validate benchmark runs at a toy size and writes a well-formed result (no assertion about speed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import common  # noqa: E402
import fleet_status  # noqa: E402
import fleet_validate  # noqa: E402
import fleet_waves  # noqa: E402


def test_fleet_validate_benchmark_measures_the_command_and_its_floor(tmp_path: Path) -> None:
    payload = fleet_validate.measure(sites=12, repetitions=1, jobs=2)
    loaded = json.loads(common.write_result("fleet_validate", payload, tmp_path).read_text())
    results = loaded["results"]
    assert results["sites"] == 12 and results["jobs"] == 2
    for name in ("validate", "floor"):
        assert results[name]["wall_s"]["n"] == 1 and results[name]["per_s"]["median"] > 0
    judged = loaded["targets"]["site_configs_per_s"]
    assert judged["limit"] == fleet_validate.TARGET_PER_S and judged["comparison"] == ">="


def test_fleet_status_benchmark_lists_sites_on_the_hub_simulator(tmp_path: Path) -> None:
    payload = fleet_status.measure(sites=30, repetitions=1)
    loaded = json.loads(common.write_result("fleet_status", payload, tmp_path).read_text())
    results = loaded["results"]
    assert results["sites"] == 30 and results["status"]["wall_s"]["n"] == 1
    assert results["status_one_page"]["wall_s"]["n"] == 1
    judged = loaded["targets"]["status_wall_s"]
    assert judged["limit"] == fleet_status.TARGET_S and judged["comparison"] == "<="


def test_fleet_waves_benchmark_halts_a_small_wave_beside_today(tmp_path: Path) -> None:
    payload = fleet_waves.measure(nodes=16, canary=5, repetitions=1)
    loaded = json.loads(common.write_result("fleet_waves", payload, tmp_path).read_text())
    results = loaded["results"]
    assert results["nodes"] == 16 and results["wave_reports_to_halt"]["median"] == 2 * fleet_waves.SAME_CAUSE
    assert results["wave_credentials_issued"]["median"] == 5, "only the canary's sticks"
    assert results["today_failed"]["median"] == 5
    assert loaded["targets"]["reports_to_halt"]["met"]

"""The BMC delivery benchmark runs at a toy size against sushy-tools' emulator and writes a well-formed result: every
Site's medium downloaded once, read by its node and ejected, the controller's writes counted from the hub simulator,
and the cold start measured with and without the image server (no assertion about speed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import common  # noqa: E402
import fleet_bmc  # noqa: E402


def test_fleet_bmc_benchmark_delivers_a_few_sites_and_compares_cold_starts(tmp_path: Path) -> None:
    if not fleet_bmc.EMULATOR.exists():
        pytest.skip("sushy-tools is not installed (the fleet's test extra)")
    payload = fleet_bmc.measure(sites=3, hold=False, repetitions=1, cold_sites=10, cold_repetitions=1)
    loaded = json.loads(common.write_result("fleet_bmc", payload, tmp_path).read_text())
    results = loaded["results"]
    assert results["downloads_per_site"]["median"] == 1.0 and loaded["targets"]["downloads_per_site"]["met"]
    assert results["ready_to_ejected_s_max"]["median"] >= results["ready_to_ejected_s_min"]["median"] > 0
    assert results["writes_PATCH_sites_status_per_site"]["median"] >= 2, "the BMC cycle's record: inserted, ejected"
    hub, own = results["hub_writes_per_site"]["median"], results["controller_counted_writes_per_site"]["median"]
    assert 0 <= round((own - hub) * 3) <= 1, "the hub's count less the bench's is the controller's (its key Secret)"
    assert results["grants_traced_kb_per_grant"]["median"] > results["image_kb"]["median"] * 0.9
    assert results["cold_start_ratio"]["n"] == 1 and loaded["targets"]["cold_start_ratio"]["limit"] == 1.10

"""The selection `docs/testing.md` gives for a real hub (`SNORELOC_TEST_HUB_KUBECONFIG=... pytest -m realhub`)
collects the hub tests that can run there and none marked `hubsimonly`, and a test that needs the hub simulator
without the marker stops the run at collection."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _collected(marker: str) -> list[str]:
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", marker,
            "tests/hub", "tests/hubsim", "tests/fleetops"]  # fmt: skip
    env = {**os.environ, "SNORELOC_TEST_HUB_KUBECONFIG": "/nonexistent/hub.kubeconfig"}  # read by no collection
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


@pytest.mark.allow_subprocess
def test_the_realhub_selection_collects_the_hub_tests_and_no_hubsimonly_one() -> None:
    real = _collected("realhub")
    assert len(real) >= 40, real
    files = {line.split("::")[0].rsplit("/", 1)[-1] for line in real}
    for wanted in ("test_controller.py", "test_controller_startup.py", "test_site_validation.py", "test_install.py",
                   "test_fleet_e2e.py", "test_fleet_hub.py"):  # fmt: skip
        assert wanted in files, (wanted, sorted(files))
    hubsimonly = _collected("hubsimonly")
    assert not set(real) & set(hubsimonly)
    assert any("tests/hubsim/" in line for line in hubsimonly), "the simulator's own tests are hubsimonly"


@pytest.mark.allow_subprocess
def test_an_unmarked_test_that_needs_the_hub_simulator_stops_the_run(tmp_path: Path) -> None:
    (tmp_path / "test_unmarked.py").write_text("def test_needs_the_simulator(hub_sim):\n    assert hub_sim\n")
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p",
            "snoreloc_sim.pytest_plugin", "-m", "realhub", "test_unmarked.py"]  # fmt: skip
    env = {**os.environ, "SNORELOC_TEST_HUB_KUBECONFIG": "/nonexistent/hub.kubeconfig"}
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False, env=env)
    assert done.returncode != 0
    assert "mark them hubsimonly" in done.stdout + done.stderr, done.stdout[-2000:] + done.stderr[-2000:]

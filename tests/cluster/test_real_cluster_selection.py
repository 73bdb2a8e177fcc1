"""The selection `docs/testing.md` gives for a real cluster (`pytest -m realcluster`) collects the cluster tests that
can run there, and none marked `simonly`: the command the docs give must not collect nothing (issue 27)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _collected(marker: str) -> list[str]:
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", marker,
            "tests/cluster", "tests/sim"]  # fmt: skip
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


@pytest.mark.allow_subprocess
def test_the_realcluster_selection_collects_the_cluster_tests_and_no_simonly_one() -> None:
    real = _collected("realcluster")
    assert len(real) >= 50, real
    files = {line.split("::")[0] for line in real}
    for wanted in ("test_real_answers.py", "test_manifests.py", "test_proxy.py", "test_ntp.py",
                   "test_example_site.py"):  # fmt: skip
        assert any(name.endswith(wanted) for name in files), (wanted, sorted(files))
    assert not set(real) & set(_collected("simonly"))

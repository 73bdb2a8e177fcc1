"""The figures `docs/reliability.md` states, collected while the reliability tests run and printed at the end.

Each test appends one JSON line per measurement to a file named after the test run (every pytest-xdist worker of
one run shares it); whenever a worker finishes it rewrites `figures.json` from all lines so far, so the last one to
finish leaves the whole run's figures there. A plain (non-xdist) run also prints them in its terminal summary.
"""

from __future__ import annotations

import json
import os
import pathlib
import tempfile
from collections import defaultdict
from typing import Any

ENV = "SNORELOC_RELIABILITY_FIGURES"


def directory() -> pathlib.Path:
    """Where the figures go: `$SNORELOC_RELIABILITY_FIGURES`, else a per-user directory under the temp dir."""
    chosen = os.environ.get(ENV) or os.path.join(tempfile.gettempdir(), f"snoreloc-reliability-{os.getuid()}")
    path = pathlib.Path(chosen)
    path.mkdir(parents=True, exist_ok=True)
    return path


_RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"pid{os.getpid()}"


def _lines() -> pathlib.Path:
    return directory() / f"figures-{_RUN}.jsonl"


def record(section: str, case: str, passed: bool, **details: Any) -> None:
    """One measured case; O_APPEND keeps lines from concurrent workers whole."""
    line = json.dumps({"section": section, "case": case, "passed": passed, **details}, sort_keys=True) + "\n"
    descriptor = os.open(_lines(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(descriptor, line.encode())
    finally:
        os.close(descriptor)


def summary() -> dict[str, dict[str, Any]]:
    """Per section: cases, passed, the worst wall time and memory, totals of other numbers, tallies of texts."""
    sections: dict[str, dict[str, Any]] = defaultdict(lambda: {"cases": 0, "passed": 0})
    path = _lines()
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    for row in rows:
        _add(sections[row.pop("section")], row)
    return dict(sorted(sections.items()))


def _add(entry: dict[str, Any], row: dict[str, Any]) -> None:
    entry["cases"] += 1
    entry["passed"] += int(row["passed"])
    if not row["passed"]:
        entry.setdefault("failed", []).append(row["case"])
    for key, value in row.items():
        if key in ("seconds", "peak_rss_mb"):
            entry[f"max_{key}"] = round(max(entry.get(f"max_{key}", 0.0), float(value)), 2)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            entry[f"total_{key}"] = entry.get(f"total_{key}", 0) + value
        elif isinstance(value, str) and key != "case":
            tally = entry.setdefault(key, {})
            tally[value] = tally.get(value, 0) + 1


def write_summary() -> pathlib.Path:
    target = directory() / "figures.json"
    target.write_text(json.dumps(summary(), indent=2, sort_keys=True) + "\n")
    return target

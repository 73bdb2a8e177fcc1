"""Benchmark: the agent's peak RSS over a whole relocation with many user routes (issue 14: <= 150 MB at 20,000).

The parts of a run that grow with the cluster are the route list, the plan built from it, the backup batch and
the route table of the report. This runs one relocation (fresh simulator, speed 60, the default route workers)
per repetition and reports the agent process's peak RSS as the launcher's `os.wait4` sees it (bench/launch.py).

Run: `.venv/bin/python bench/routes_memory.py [--routes 20000] [--repetitions 3]`.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common
import harness

NAME = "routes_memory"
SPEED = 60.0
LIMIT_MB = 150.0


def measure_one(routes: int) -> dict[str, Any]:
    with harness.Bench(speed=SPEED, routes=routes) as bench:
        run = bench.relocate()
    rows = (run.report or {}).get("routes") or []
    migrated = sum(row.get("result") == "migrated" for row in rows)
    return {"peak_rss_mb": run.child.peak_rss_kb / 1024, "migrated": migrated, "wall_s": run.child.wall_s}


def measure(routes: int, repetitions: int) -> dict[str, Any]:
    runs = [measure_one(routes) for _ in range(repetitions)]
    peaks = [run["peak_rss_mb"] for run in runs]
    results = {"routes": routes, "speed": SPEED, "runs": runs, "median_mb": statistics.median(peaks)}
    targets = {"peak_rss_mb": common.target(max(peaks), LIMIT_MB, at_most=True)}
    return common.document(NAME, results, targets)


def _report(payload: dict[str, Any]) -> str:
    results = payload["results"]
    peaks = ", ".join(f"{run['peak_rss_mb']:.1f}" for run in results["runs"])
    migrated = ", ".join(str(run["migrated"]) for run in results["runs"])
    lines = [f"{results['routes']} user routes: agent peak RSS {peaks} MB (migrated {migrated})"]
    return "\n".join(lines + common.verdict_lines(payload))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The agent's peak RSS over a relocation with many routes.")
    parser.add_argument("--routes", type=int, default=20000, help="extra user routes (default 20000)")
    parser.add_argument("--repetitions", type=int, default=1, help="relocations, each on a fresh simulator")
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    payload = measure(args.routes, args.repetitions)
    common.publish(NAME, payload, args.output_dir, _report(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

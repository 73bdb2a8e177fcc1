"""Benchmark 4: start-up time and peak memory of the commands a technician types, over a bare interpreter.

`snoreloc --version` and `snoreloc validate` run on the node and on laptops, often repeatedly while a site-config is
being fixed, so they must feel instant. What snoreloc itself costs is the difference to `python -c pass` started
the same way in the same run: subjects and the baseline are interleaved (the machine is shared, so load drifts),
each repetition's difference is taken, and the median of those differences is the figure quoted.

The peak RSS of a whole relocation with 1,000 user routes is the agent process's own (`snoreloc run` started as a
child, against the simulator in this process), read from `os.wait4` when it exits.

Run: `.venv/bin/python bench/startup.py [--repetitions N] [--relocation-routes 1000]`.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common
import harness

NAME = "startup"
VALIDATE_LIMIT_S = 0.25
RELOCATION_RSS_LIMIT_MB = 150.0
RELOCATION_SPEED = 60.0
SITE_CONFIG = common.ROOT / "examples" / "site-config.yaml"


def subjects(site_config: Path = SITE_CONFIG) -> dict[str, list[str]]:
    """The commands measured, by name; `baseline` is the bare interpreter every other one is compared with."""
    snoreloc = common.snoreloc_argv()
    return {
        "baseline": [common.python(), "-c", "pass"],
        "version": [*snoreloc, "--version"],
        "validate": [*snoreloc, "validate", str(site_config)],
    }


def _collect(commands: dict[str, list[str]], repetitions: int) -> dict[str, list[common.ChildRun]]:
    runs: dict[str, list[common.ChildRun]] = {name: [] for name in commands}
    names = list(commands)
    for repetition in range(repetitions):
        shift = repetition % len(names)  # rotate the order so no subject always runs right after another
        for name in names[shift:] + names[:shift]:
            run = common.run_child(commands[name])
            if run.exit_code != 0:
                raise RuntimeError(f"{name}: {commands[name]!r} exited {run.exit_code}")
            runs[name].append(run)
    return runs


def _overheads(runs: dict[str, list[common.ChildRun]]) -> dict[str, Any]:
    baseline = runs["baseline"]
    result: dict[str, Any] = {}
    for name, samples in runs.items():
        paired = [sample.wall_s - base.wall_s for sample, base in zip(samples, baseline, strict=True)]
        result[name] = {
            "wall_s": common.summary([sample.wall_s for sample in samples]),
            "peak_rss_mb": statistics.median(sample.peak_rss_kb for sample in samples) / 1024,
            "overhead_s": common.summary(paired),
            "overhead_rss_mb": statistics.median(
                s.peak_rss_kb - b.peak_rss_kb for s, b in zip(samples, baseline, strict=True)
            )
            / 1024,
        }
    return result


def relocation_memory(routes: int) -> dict[str, Any]:
    """Peak RSS of the agent process over one full relocation of a cluster with `routes` extra user routes."""
    with harness.Bench(speed=RELOCATION_SPEED, routes=routes) as bench:
        run = bench.relocate()
    return {
        "user_routes": routes,
        "speed": RELOCATION_SPEED,
        "wall_s": run.child.wall_s,
        "peak_rss_mb": run.child.peak_rss_kb / 1024,
    }


def measure(repetitions: int = 15, site_config: Path = SITE_CONFIG, relocation_routes: int = 1000) -> dict[str, Any]:
    """Interleaved runs of each subject and the baseline (medians); then one relocation's peak RSS."""
    commands = subjects(site_config)
    per_subject = _overheads(_collect(commands, repetitions))
    results = {"repetitions": repetitions, "commands": {k: " ".join(v) for k, v in commands.items()}, **per_subject}
    overhead = per_subject["validate"]["overhead_s"]["median"]
    targets = {"validate_overhead_s": common.target(overhead, VALIDATE_LIMIT_S, at_most=True)}
    if relocation_routes >= 0:
        memory = relocation_memory(relocation_routes)
        results["relocation"] = memory
        targets["relocation_peak_rss_mb"] = common.target(memory["peak_rss_mb"], RELOCATION_RSS_LIMIT_MB, at_most=True)
    return common.document(NAME, results, targets)


def _report(payload: dict[str, Any]) -> str:
    results = payload["results"]
    lines = [f"{'command':<10} {'wall s':>8} {'overhead s':>11} {'peak RSS MB':>12}"]
    for name in ("baseline", "version", "validate"):
        row = results[name]
        lines.append(
            f"{name:<10} {row['wall_s']['median']:>8.3f} {row['overhead_s']['median']:>11.3f} "
            f"{row['peak_rss_mb']:>12.1f}"
        )
    if "relocation" in results:
        memory = results["relocation"]
        lines.append(
            f"relocation with {memory['user_routes']} user routes: agent peak RSS {memory['peak_rss_mb']:.1f} MB"
        )
    lines += common.verdict_lines(payload)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Start-up time and peak RSS of snoreloc --version and validate.")
    parser.add_argument("--repetitions", type=int, default=15)
    parser.add_argument("--relocation-routes", type=int, default=1000, help="user routes (-1: skip the relocation)")
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    payload = measure(args.repetitions, relocation_routes=args.relocation_routes)
    common.publish(NAME, payload, args.output_dir, _report(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark 4: start-up time and peak memory of the commands a technician types, over a bare interpreter.

`snoreloc --version`, `status` and `validate` run on the node and on laptops, often repeatedly (while a site-config
is being fixed, or while a run is watched), so they must feel instant. What snoreloc itself costs is the difference
to `python -c pass` started the same way in the same run: subjects and the baseline are interleaved (the machine
is shared, so load drifts), each repetition's difference is taken, and the median of those differences is the
figure quoted, for CPU time (user + system, what the command costs; the targets judge it) and for wall time (what
a person waits, inflated by whatever else the machine runs). `status` reads the journal of a finished relocation
written here; the package's bytecode is compiled first, as installing the wheel does (a source tree run with
PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module on every start).

The peak RSS of a whole relocation with 1,000 user routes is the agent process's own (`snoreloc run` started as a
child, against the simulator in this process), read from `os.wait4` when it exits.

Run: `.venv/bin/python bench/startup.py [--repetitions N] [--relocation-routes 1000]`.
"""

from __future__ import annotations

import argparse
import compileall
import datetime as dt
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common
import harness

import snoreloc
from snoreloc.adapters import clock
from snoreloc.engine import journal
from snoreloc.steps import base

NAME = "startup"
LIMITS_S = {"status": 0.10, "validate": 0.20}  # CPU over `python -c pass` (issue 14)
STEPS = ("csr", "preflight", "certificates", "cluster-config", "domain", "settle", "routes", "final-settle")
RELOCATION_RSS_LIMIT_MB = 150.0
RELOCATION_SPEED = 60.0
SITE_CONFIG = common.ROOT / "examples" / "site-config.yaml"


def finished_journal(state_dir: Path) -> None:
    """A journal as a finished relocation leaves it: every step done, with its timing and what it changed."""
    written = journal.Journal(state_dir / "status.json", clock.SystemClock())
    written.begin_run(site_name="bench", site_fingerprint="0" * 64, order=list(STEPS), mode="cluster-only")
    for index, step in enumerate(STEPS):
        written.start_step(step, f"{index:064d}")
        routes = range(5) if step == "routes" else range(0)
        changed = tuple(f"route.route.openshift.io/app-{n} in bench-{n % 7}" for n in routes)
        written.finish_step(step, base.StepOutcome(changed=changed, rollouts={"ingress": dt.datetime.now(dt.UTC)}))
    written.end_run(journal.RunState.DONE)


def compile_bytecode() -> None:
    """Write the package's `.pyc` files, as `pip install` of the wheel does."""
    compileall.compile_dir(Path(snoreloc.__file__).parent, quiet=1)


def subjects(state_dir: Path, site_config: Path = SITE_CONFIG) -> dict[str, list[str]]:
    """The commands measured, by name; `baseline` is the bare interpreter every other one is compared with."""
    snoreloc_ = common.snoreloc_argv()
    return {
        "baseline": [common.python(), "-c", "pass"],
        "version": [*snoreloc_, "--version"],
        "status": [*snoreloc_, "status", "--state-dir", str(state_dir)],
        "validate": [*snoreloc_, "validate", str(site_config)],
    }


def _collect(commands: dict[str, list[str]], repetitions: int) -> dict[str, list[common.ChildRun]]:
    runs: dict[str, list[common.ChildRun]] = {name: [] for name in commands}
    names = list(commands)
    for repetition in range(repetitions):
        shift = repetition % len(names)  # rotate the order so no subject always runs right after another
        for name in names[shift:] + names[:shift]:
            run = common.run_child(commands[name])
            if run.exit_code != 0 and not (name == "status" and run.exit_code == 2):  # 2: done with warnings
                raise RuntimeError(f"{name}: {commands[name]!r} exited {run.exit_code}")
            runs[name].append(run)
    return runs


def _paired(samples: list[common.ChildRun], baseline: list[common.ChildRun], field: str) -> list[float]:
    return [getattr(s, field) - getattr(b, field) for s, b in zip(samples, baseline, strict=True)]


def _overheads(runs: dict[str, list[common.ChildRun]]) -> dict[str, Any]:
    baseline = runs["baseline"]
    result: dict[str, Any] = {}
    for name, samples in runs.items():
        result[name] = {
            "wall_s": common.summary([sample.wall_s for sample in samples]),
            "cpu_s": common.summary([sample.cpu_s for sample in samples]),
            "peak_rss_mb": statistics.median(sample.peak_rss_kb for sample in samples) / 1024,
            "overhead_s": common.summary(_paired(samples, baseline, "wall_s")),
            "overhead_cpu_s": common.summary(_paired(samples, baseline, "cpu_s")),
            "overhead_rss_mb": statistics.median(_paired(samples, baseline, "peak_rss_kb")) / 1024,
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
    compile_bytecode()
    with tempfile.TemporaryDirectory(prefix="snoreloc-bench-state-") as state_dir:
        finished_journal(Path(state_dir))
        commands = subjects(Path(state_dir), site_config)
        per_subject = _overheads(_collect(commands, repetitions))
    results = {"repetitions": repetitions, "commands": {k: " ".join(v) for k, v in commands.items()}, **per_subject}
    targets = {
        f"{name}_overhead_cpu_s": common.target(per_subject[name]["overhead_cpu_s"]["median"], limit, at_most=True)
        for name, limit in LIMITS_S.items()
    }
    if relocation_routes >= 0:
        memory = relocation_memory(relocation_routes)
        results["relocation"] = memory
        targets["relocation_peak_rss_mb"] = common.target(memory["peak_rss_mb"], RELOCATION_RSS_LIMIT_MB, at_most=True)
    return common.document(NAME, results, targets)


def _report(payload: dict[str, Any]) -> str:
    results = payload["results"]
    lines = [
        f"{'command':<10} {'CPU s':>7} {'CPU over':>9} {'(min-max)':>15} {'wall s':>7} {'wall over':>10} "
        f"{'peak RSS MB':>12}"
    ]
    for name in ("baseline", "version", "status", "validate"):
        row = results[name]
        over = row["overhead_cpu_s"]
        spread = f"({over['min']:.3f}-{over['max']:.3f})"
        lines.append(
            f"{name:<10} {row['cpu_s']['median']:>7.3f} {over['median']:>9.3f} {spread:>15} "
            f"{row['wall_s']['median']:>7.3f} {row['overhead_s']['median']:>10.3f} {row['peak_rss_mb']:>12.1f}"
        )
    if "relocation" in results:
        memory = results["relocation"]
        lines.append(
            f"relocation with {memory['user_routes']} user routes: agent peak RSS {memory['peak_rss_mb']:.1f} MB"
        )
    lines += common.verdict_lines(payload)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Start-up time and peak RSS of snoreloc --version, status, validate.")
    parser.add_argument("--repetitions", type=int, default=15)
    parser.add_argument("--relocation-routes", type=int, default=1000, help="user routes (-1: skip the relocation)")
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    payload = measure(args.repetitions, relocation_routes=args.relocation_routes)
    common.publish(NAME, payload, args.output_dir, _report(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: `snoreloc fleet validate` of 10,000 site-configs, beside the physical floor of reading them at all.

A fleet's CI checks every site-config on every change. The subject is the command as CI runs it (a fresh process,
every core, the fleet-wide checks on, JSON out) over 10,000 site directories rendered by `snoreloc fleet render`
from the complete example (network, mirrors, registry CA, proxy CA, pull secret, extra manifests). The floor is
the same files parsed with PyYAML's C loader and nothing else, in a process started the same way with the same
number of worker processes: no command can be faster than reading the files, and the gap is what checking costs.
Subject and floor are interleaved, 3 runs each by default; the median is quoted with min and max. The agent's and
the fleet's bytecode is compiled first, as installing their wheels does.

Run: `.venv/bin/python bench/fleet_validate.py [--sites 10000] [--repetitions 3] [--jobs 2]`.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common
import snoreloc_fleet

import snoreloc

NAME = "fleet_validate"
TARGET_PER_S = 250.0  # site-configs per second on this 2-core machine (issue 23)
EXAMPLES = common.ROOT / "examples"
SHARED = ("pull-secret.json", "registry-ca.crt", "proxy-ca.crt", "manifests")
PLACEHOLDERS = (
    ("name: store-0412\n", "name: ${name}\n"),
    ("domain: sno1.store-0412.example.com", "domain: ${domain}"),
    ("- ip: 10.41.20.10\n", "- ip: ${address}\n"),
    ("next-hop-address: 10.41.20.1\n", "next-hop-address: ${gateway}\n"),
)


def write_fleet(directory: Path, sites: int) -> tuple[Path, Path]:
    """The example made a template, its shared files, and an inventory of `sites` rows: (template, inventory)."""
    directory.mkdir(parents=True, exist_ok=True)
    text = (EXAMPLES / "site-config.yaml").read_text()
    for before, after in PLACEHOLDERS:
        text = text.replace(before, after)
    template = directory / "base.yaml"
    template.write_text(text)
    for name in SHARED:
        source = EXAMPLES / name
        if source.is_dir():
            shutil.copytree(source, directory / name, dirs_exist_ok=True)
        else:
            shutil.copy(source, directory / name)
    rows = ["name,domain,address,gateway"]
    for n in range(sites):
        net = f"10.{n // 250}.{n % 250}"
        rows.append(f"store-{n:05d},sno.store-{n:05d}.example.com,{net}.10,{net}.1")
    inventory = directory / "sites.csv"
    inventory.write_text("\n".join(rows) + "\n")
    return template, inventory


def _parse(path: str) -> int:
    import yaml  # noqa: PLC0415 (the floor process imports nothing else)

    with open(path, "rb") as handle:
        return len(yaml.load(handle.read(), Loader=yaml.CSafeLoader))


def floor(directory: Path, jobs: int) -> int:
    """Parse every `<site>/site-config.yaml` under `directory` with the C loader on `jobs` processes; 0 when all did."""
    paths = sorted(str(p) for p in directory.glob("*/site-config.yaml"))
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        parsed = pool.map(_parse, paths, chunksize=max(1, len(paths) // (jobs * 8)))
    return 0 if len(parsed) == len(paths) else 1


def _runs(out: Path, jobs: int, repetitions: int, scratch: Path) -> dict[str, list[common.ChildRun]]:
    subject = [*common.snoreloc_argv(), "fleet", "validate", str(out), "--jobs", str(jobs), "--unique-addresses"]
    subject += ["--output", "json", "--junit", str(scratch / "junit.xml")]
    floor_argv = [common.python(), str(Path(__file__).resolve()), "--floor", str(out), "--jobs", str(jobs)]
    runs: dict[str, list[common.ChildRun]] = {"validate": [], "floor": []}
    for _ in range(repetitions):
        for name, argv in (("validate", subject), ("floor", floor_argv)):
            run = common.run_child(argv, timeout=1800, stderr=scratch / f"{name}.err")
            if run.exit_code != 0:
                raise RuntimeError(f"{name} exited {run.exit_code}: {(scratch / f'{name}.err').read_text()[-2000:]}")
            runs[name].append(run)
    return runs


def _figures(runs: Sequence[common.ChildRun], sites: int, jobs: int) -> dict[str, Any]:
    return {
        "wall_s": common.summary([r.wall_s for r in runs]),
        "cpu_s": common.summary([r.cpu_s for r in runs]),
        "per_s": common.summary([sites / r.wall_s for r in runs]),
        # what the cores could do were they ours alone: sites per CPU-second times the workers
        "per_s_of_cpu": common.summary([sites / r.cpu_s * jobs for r in runs]),
        "peak_rss_mb": common.summary([r.peak_rss_kb / 1024 for r in runs]),
    }


def measure(sites: int, repetitions: int, jobs: int) -> dict[str, Any]:
    common.compile_bytecode(snoreloc, snoreloc_fleet)
    with tempfile.TemporaryDirectory(prefix="snoreloc-bench-fleet-") as scratch_name:
        scratch = Path(scratch_name)
        template, inventory = write_fleet(scratch / "input", sites)
        out = scratch / "sites"
        render_argv = [*common.snoreloc_argv(), "fleet", "render", "--template", str(template)]
        render = common.run_child([*render_argv, "--inventory", str(inventory), "--out", str(out)], timeout=1800)
        if render.exit_code != 0:
            raise RuntimeError(f"fleet render exited {render.exit_code}")
        runs = _runs(out, jobs, repetitions, scratch)
    results = {
        "sites": sites,
        "jobs": jobs,
        "repetitions": repetitions,
        "render_wall_s": render.wall_s,
        "validate": _figures(runs["validate"], sites, jobs),
        "floor": _figures(runs["floor"], sites, jobs),
    }
    rate = results["validate"]["per_s"]["median"]
    return common.document(NAME, results, {"site_configs_per_s": common.target(rate, TARGET_PER_S, at_most=False)})


def _report(payload: dict[str, Any]) -> str:
    r = payload["results"]
    lines = [f"fleet validate of {r['sites']} site-configs on {r['jobs']} workers, {r['repetitions']} runs:"]
    for name in ("validate", "floor"):
        f = r[name]
        wall = f["wall_s"]
        lines.append(
            f"  {name:8s} wall {wall['median']:.2f} s (min {wall['min']:.2f}, max {wall['max']:.2f}),"
            f" {f['per_s']['median']:.0f}/s ({f['per_s_of_cpu']['median']:.0f}/s of CPU),"
            f" CPU {f['cpu_s']['median']:.1f} s, peak RSS {f['peak_rss_mb']['median']:.0f} MB"
        )
    lines.append(f"  render {r['render_wall_s']:.1f} s")
    return "\n".join(lines + common.verdict_lines(payload))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sites", type=int, default=10_000)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--floor", type=Path, help=argparse.SUPPRESS)  # the floor's own process
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.floor is not None:
        return floor(args.floor, args.jobs)
    payload = measure(args.sites, args.repetitions, args.jobs)
    common.publish(NAME, payload, args.output_dir, _report(payload))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run every benchmark in one go (`make bench`) and print which targets were met.

Each benchmark writes its own `bench/results/<name>.json` (machine, command, numbers, targets); this script runs
them one after another in this process, then prints one line per target. `--quick` runs toy sizes to check the
harness works end to end in about a minute; its numbers mean nothing and go to a scratch directory unless
`--output-dir` says otherwise.

Run: `.venv/bin/python bench/run_all.py [--quick] [--only NAME,...]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

import agent_cpu
import api_economy
import baselines
import certificates
import common
import fleet_bmc
import fleet_controller
import fleet_demo
import fleet_reports
import fleet_status
import fleet_validate
import hub_sites
import relocation
import routes_memory
import routes_scale
import sim_cpu
import startup

Main = Callable[[Sequence[str] | None], int]
MANY_ROUTES = 5000


def _relocation_many_routes(argv: Sequence[str] | None) -> int:
    """The relocation benchmark with 5,000 user routes at speed 5, as its own result (and its own chart)."""
    chart = common.RESULTS / f"relocation-{MANY_ROUTES}routes-timeline.svg"
    name = f"relocation_{MANY_ROUTES}routes"
    defaults = ["--routes", str(MANY_ROUTES), "--speeds", "5", "--name", name, "--svg", str(chart)]
    return relocation.main([*defaults, *(argv or [])])


def _relocation_shelved(argv: Sequence[str] | None) -> int:
    """The relocation benchmark on a node whose CSRs must be approved first (issue 12's field case)."""
    chart = common.RESULTS / "relocation-shelved-timeline.svg"
    defaults = ["--shelved-node", "--speeds", "5", "--name", "relocation_shelved", "--svg", str(chart)]
    return relocation.main([*defaults, *(argv or [])])


SLOW_OAUTH = 100.0  # cluster seconds: just past the simulated installer's 90 s


def _baselines_slow_oauth(argv: Sequence[str] | None) -> int:
    """CRO and ZTPFW against the agent when the oauth host comes out after the installer (its own result)."""
    defaults = ["--flows", "cro,ztpfw", "--oauth-publish", str(SLOW_OAUTH), "--name", "baselines_slow_oauth"]
    return baselines.main([*defaults, *(argv or [])])


BENCHMARKS: dict[str, Main] = {
    "certificates": certificates.main,
    "startup": startup.main,
    "sim_cpu": sim_cpu.main,
    "agent_cpu": agent_cpu.main,
    "api_economy": api_economy.main,
    "routes_scale": routes_scale.main,
    "routes_memory": routes_memory.main,
    "relocation": relocation.main,
    "relocation_shelved": _relocation_shelved,
    f"relocation_{MANY_ROUTES}routes": _relocation_many_routes,
    "baselines": baselines.main,
    "baselines_slow_oauth": _baselines_slow_oauth,
    "fleet_validate": fleet_validate.main,
    "fleet_status": fleet_status.main,
    "fleet_demo": fleet_demo.main,
    "hub_sites": hub_sites.main,
    "fleet_controller": fleet_controller.main,
    "fleet_reports": fleet_reports.main,
    "fleet_bmc": fleet_bmc.main,
}
QUICK: dict[str, list[str]] = {
    "certificates": ["--repetitions", "2"],
    "startup": ["--repetitions", "2", "--relocation-routes", "20"],
    "sim_cpu": ["--routes", "50", "--repetitions", "1"],
    "agent_cpu": ["--routes", "50", "--latencies", "2", "--workers", "1,16"],
    "api_economy": ["--speed", "120"],
    "routes_scale": ["--counts", "20"],
    "routes_memory": ["--routes", "50"],
    "relocation": ["--speeds", "120"],
    "relocation_shelved": ["--speeds", "120"],
    f"relocation_{MANY_ROUTES}routes": ["--routes", "50", "--speeds", "120"],
    "baselines": ["--speed", "120"],
    "baselines_slow_oauth": ["--speed", "120"],
    "fleet_validate": ["--sites", "200", "--repetitions", "1"],
    "fleet_status": ["--sites", "200", "--repetitions", "1"],
    "fleet_demo": ["--sites", "5", "--nodes", "1", "--repetitions", "1"],
    "hub_sites": ["--sites", "10", "--repetitions", "1"],
    "fleet_controller": ["--sites", "20", "--steady-seconds", "3"],
    "fleet_reports": ["--nodes", "6", "--seconds", "4", "--interval", "2"],
    "fleet_bmc": ["--sites", "3", "--cold-sites", "20", "--cold-repetitions", "1"],
}


def _run(name: str, arguments: list[str]) -> bool:
    main = BENCHMARKS[name]
    print(f"== {name}: {' '.join(arguments) or '(defaults)'}", flush=True)
    try:
        return main(arguments) == 0
    except Exception:
        traceback.print_exc()
        return False


def _summary(names: Sequence[str], directory: Path) -> list[str]:
    lines = []
    for name in names:
        path = directory / f"{name}.json"
        if not path.exists():
            lines.append(f"{name}: no result")
            continue
        for target, judged in json.loads(path.read_text())["targets"].items():
            verdict = "met" if judged["met"] else "MISSED"
            lines.append(f"{name}.{target}: {judged['measured']} {judged['comparison']} {judged['limit']}: {verdict}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run every snoreloc benchmark.")
    parser.add_argument("--quick", action="store_true", help="toy sizes: checks the harness, not the numbers")
    parser.add_argument("--only", default=",".join(BENCHMARKS), help="comma-separated subset")
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    unknown = set(names) - set(BENCHMARKS)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    scratch = tempfile.mkdtemp(prefix="snoreloc-bench-quick-") if args.quick else None
    directory = args.output_dir or (Path(scratch) if scratch else common.RESULTS)
    failed = []
    for name in names:
        arguments = [*(QUICK[name] if args.quick else []), "--output-dir", str(directory)]
        if args.quick and name.startswith("relocation"):
            arguments += ["--svg", str(directory / f"{name}-timeline.svg")]
        if not _run(name, arguments):
            failed.append(name)
    print("\n".join(["== targets", *_summary(names, directory)]))
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

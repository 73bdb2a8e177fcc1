"""Benchmark 3: migrating thousands of user routes, concurrently against one at a time, with API latency.

An edge cluster can carry thousands of routes, and each one needs its own write after the apps domain changes.
With a few milliseconds per request that is minutes one at a time; the agent patches them from a bounded pool
(`--route-workers`, default at most 16, so the single kube-apiserver is not flooded). Each N is measured twice in
the same run, once with one worker and once with the default, each on a fresh simulator that adds `latency` to
every API request; the figure is the agent's own `routes` step (journal start to finish: list, back up, patch,
wait for operator-owned routes), not the whole relocation.

Beside the times it records where the CPU goes: the agent's (the child's own user+system time) and the simulated
API server's (this process, which is the simulator), per route as the difference to a relocation without extra
routes. The simulator is Python under one GIL, so its CPU per route is a floor under the pooled time per route:
`one-at-a-time time per route / simulator CPU per route` bounds the speed-up any agent could show here.

Run: `.venv/bin/python bench/routes_scale.py [--counts 100,1000,5000] [--latency 2ms]`.
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common
import harness

from snoreloc.cli import run as run_cmd

NAME = "routes_scale"
SPEED = 60.0  # rollouts are not what this measures: get them out of the way
SPEEDUP_MIN = 8.0
SPEEDUP_AT = 1000
WORKERS_MAX = 16


def default_workers() -> int:
    """The `snoreloc run --route-workers` default, read from the command's own parser."""
    parser = argparse.ArgumentParser()
    run_cmd.add_arguments(parser)
    return int(parser.parse_args(["--site-config", "x"]).route_workers)


def _migrated(run: harness.AgentRun) -> int:
    rows = (run.report or {}).get("routes") or []
    return sum(row.get("result") == "migrated" for row in rows)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # waited-for descendants: the launcher and the agent
    return usage.ru_utime + usage.ru_stime


def measure_one(count: int, workers: int | None, latency: str) -> dict[str, Any]:
    """One fresh simulator with `count` user routes, one relocation with `workers` (None: the default)."""
    with harness.Bench(speed=SPEED, routes=count, faults=f"latency={latency}") as bench:
        agent_cpu, sim_cpu = _children_cpu(), time.process_time()
        run = bench.relocate(route_workers=workers)
        agent_cpu, sim_cpu = _children_cpu() - agent_cpu, time.process_time() - sim_cpu
    step = run.step("routes")
    if step is None:
        raise RuntimeError(f"the routes step did not run:\n{run.stderr_tail}")
    seconds = step["end"] - step["start"]
    migrated = _migrated(run)
    return {
        "workers": workers if workers is not None else default_workers(),
        "routes_step_s": seconds,
        "migrated": migrated,
        "routes_per_s": migrated / seconds if seconds > 0 else 0.0,
        "relocation_wall_s": run.child.wall_s,
        "agent_cpu_s": agent_cpu,
        "simulator_cpu_s": sim_cpu,
        "agent_peak_rss_mb": run.child.peak_rss_kb / 1024,
        "requests": len(run.requests),
    }


def _per_route(run: dict[str, Any], baseline: dict[str, Any], count: int) -> dict[str, float]:
    """Milliseconds per extra route: step time, and CPU on each side beyond a relocation without extra routes."""
    return {
        "step_ms": 1000 * (run["routes_step_s"] - baseline["routes_step_s"]) / count,
        "agent_cpu_ms": 1000 * (run["agent_cpu_s"] - baseline["agent_cpu_s"]) / count,
        "simulator_cpu_ms": 1000 * (run["simulator_cpu_s"] - baseline["simulator_cpu_s"]) / count,
    }


def _row(count: int, latency: str, baselines: dict[str, dict[str, Any]]) -> dict[str, Any]:
    serial = measure_one(count, 1, latency)
    pooled = measure_one(count, None, latency)
    serial["per_route"] = _per_route(serial, baselines["one_at_a_time"], count)
    pooled["per_route"] = _per_route(pooled, baselines["concurrent"], count)
    floor = max(serial["per_route"]["simulator_cpu_ms"], pooled["per_route"]["simulator_cpu_ms"])
    return {
        "user_routes": count,
        "one_at_a_time": serial,
        "concurrent": pooled,
        "speedup": serial["routes_step_s"] / pooled["routes_step_s"],
        "speedup_bound_by_simulator_cpu": serial["per_route"]["step_ms"] / floor if floor > 0 else None,
    }


def measure(counts: Sequence[int] = (100, 1000, 5000), latency: str = "2ms") -> dict[str, Any]:
    """For each route count: one worker, then the default pool; the speed-up between them."""
    baselines = {"one_at_a_time": measure_one(0, 1, latency), "concurrent": measure_one(0, None, latency)}
    rows = [_row(count, latency, baselines) for count in counts]
    workers = default_workers()
    targets: dict[str, Any] = {"default_workers": common.target(workers, WORKERS_MAX, at_most=True)}
    judged = next((row for row in rows if row["user_routes"] == SPEEDUP_AT), None)
    if judged is not None:
        targets[f"speedup_at_{SPEEDUP_AT}"] = common.target(judged["speedup"], SPEEDUP_MIN, at_most=False)
    results = {"latency": latency, "speed": SPEED, "default_workers": workers, "baselines": baselines, "rows": rows}
    return common.document(NAME, results, targets)


def _report(payload: dict[str, Any]) -> str:
    lines = [
        f"{'routes':>7} {'1 worker s':>11} {'routes/s':>9} {'pool s':>8} {'routes/s':>9} {'speed-up':>9} "
        f"{'bound':>6}   per route (1 worker / pool): agent CPU ms, simulator CPU ms"
    ]
    for row in payload["results"]["rows"]:
        one, pool = row["one_at_a_time"], row["concurrent"]
        bound = row["speedup_bound_by_simulator_cpu"]
        lines.append(
            f"{row['user_routes']:>7} {one['routes_step_s']:>11.2f} {one['routes_per_s']:>9.0f} "
            f"{pool['routes_step_s']:>8.2f} {pool['routes_per_s']:>9.0f} {row['speedup']:>8.1f}x "
            f"{bound or 0:>5.1f}x   {one['per_route']['agent_cpu_ms']:.2f} / {pool['per_route']['agent_cpu_ms']:.2f}, "
            f"{one['per_route']['simulator_cpu_ms']:.2f} / {pool['per_route']['simulator_cpu_ms']:.2f}"
        )
    lines += common.verdict_lines(payload)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="User route migration: concurrent against one at a time.")
    parser.add_argument("--counts", default="100,1000,5000", help="user route counts (default 100,1000,5000)")
    parser.add_argument("--latency", default="2ms", help="added to every API request (default 2ms)")
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    payload = measure([int(c) for c in args.counts.split(",")], args.latency)
    common.publish(NAME, payload, args.output_dir, _report(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

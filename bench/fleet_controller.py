"""Benchmark: the fleet hub's controller from a cold start to every one of 10,000 Sites validated.

A fleet owner creates the fleet's Sites, then starts (or restarts) the controller; it must take them all on within
minutes, in bounded memory, writing little, and then fall silent. A hub simulator in this process gets the Site CRD,
a pull-secret Secret and `--sites` Sites; then the controller starts (kopf in a thread, over HTTPS, `--qps` its
write limit, 0: none) and the time until every Site has a phase (validated with the agent's rules; Ready with its
credential, or Invalid) is measured, with the controller's API writes per Site. Then, with nothing changing, its
writes over `--steady-seconds` (per Site per minute), and a second controller started over the same validated
Sites (a restart) with its writes over the same window. Peak RSS is this process's (hub, controller and the
benchmark's client together): quoted beside the peak before the controller started.

Targets (issue 23): cold start under 5 minutes, peak RSS under 300 MB, at most 2 API writes per Site to a steady
state, 0 writes per Site per minute in a steady state.

Run: `.venv/bin/python bench/fleet_controller.py [--sites 10000] [--qps 0] [--steady-seconds 60] [--repetitions 1]`.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import resource
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common
import hub_sites
from snoreloc_fleet import credentials
from snoreloc_fleet.controller import operator, reconcile

from snoreloc.adapters import clock, kube
from snoreloc_sim.hub.simulator import HubSimulator

NAME = "fleet_controller"
COLD_START_S = 300.0
PEAK_RSS_MB = 300.0
WRITES_TO_STEADY = 2.0
POLL_S = 2.0


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _validated(admin: kube.Client) -> int:
    return sum(1 for obj in admin.list(reconcile.SITES, hub_sites.NS) if (obj.get("status") or {}).get("phase"))


class Running:
    """A controller in a thread until `stop`."""

    def __init__(self, hub: HubSimulator, qps: float) -> None:
        config = reconcile.Config(credentials.Hub(hub.api_url, hub.ca_pem))
        options = operator.Options(
            config=config, kubeconfig=str(hub.kubeconfig_path), sweep=3600.0,
            qps=qps or 1e6, burst=int(2 * qps) or 1_000_000,
        )  # fmt: skip
        self.controller = operator.Controller(options)
        self._stop, ready = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self.controller.run, args=(self._stop, ready), daemon=True)
        self._thread.start()
        ready.wait(60)

    @property
    def writes(self) -> int:
        return int(self.controller.client.writes)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)


def populate(admin: kube.Client, sites: int) -> None:
    hub_sites._prepare(admin)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: admin.create(reconcile.SITES, hub_sites._site(f"store-{n:05d}")), range(sites)))


def once(sites: int, qps: float, steady_s: float) -> dict[str, float]:
    """One cold start on a fresh hub populated with `sites` Sites."""
    with HubSimulator() as hub:
        admin = kube.Client.from_kubeconfig(str(hub.kubeconfig_path), clock=clock.SystemClock())
        populate(admin, sites)
        rss_before = _peak_rss_mb()
        started = time.monotonic()
        first = Running(hub, qps)
        while _validated(admin) < sites:
            time.sleep(POLL_S)
        cold_s = time.monotonic() - started
        to_steady = first.writes
        time.sleep(steady_s)
        steady = first.writes - to_steady
        first.stop()
        second = Running(hub, qps)
        time.sleep(steady_s)
        restart = second.writes
        second.stop()
        admin.close()
    minutes = steady_s / 60
    return {
        "cold_start_s": cold_s,
        "writes_per_site_to_steady": to_steady / sites,
        "steady_writes_per_site_per_minute": steady / sites / minutes,
        "restart_writes_per_site": restart / sites,
        "peak_rss_mb": _peak_rss_mb(),
        "peak_rss_before_controller_mb": rss_before,
    }


def measure(sites: int, qps: float, steady_s: float, repetitions: int) -> dict[str, Any]:
    runs = [once(sites, qps, steady_s) for _ in range(repetitions)]
    results: dict[str, Any] = {"sites": sites, "qps": qps, "steady_seconds": steady_s, "repetitions": repetitions}
    for key in runs[0]:
        results[key] = common.summary([run[key] for run in runs])
    worst = {key: max(run[key] for run in runs) for key in runs[0]}
    targets = {
        "cold_start_s": common.target(results["cold_start_s"]["median"], COLD_START_S, at_most=True),
        "peak_rss_mb": common.target(worst["peak_rss_mb"], PEAK_RSS_MB, at_most=True),
        "writes_per_site_to_steady": common.target(worst["writes_per_site_to_steady"], WRITES_TO_STEADY, at_most=True),
        "steady_writes_per_site_per_minute": common.exactly(worst["steady_writes_per_site_per_minute"], 0),
    }
    return common.document(NAME, results, targets)


def _report(payload: dict[str, Any]) -> str:
    r = payload["results"]
    lines = [f"fleet controller cold start over {r['sites']} Sites (write limit {r['qps'] or 'none'}):"]
    for key in ("cold_start_s", "writes_per_site_to_steady", "steady_writes_per_site_per_minute"):
        figures = r[key]
        lines.append(f"  {key}: {figures['median']:.3f} (min {figures['min']:.3f}, max {figures['max']:.3f})")
    for key in ("restart_writes_per_site", "peak_rss_mb", "peak_rss_before_controller_mb"):
        lines.append(f"  {key}: {r[key]['median']:.3f}")
    return "\n".join(lines + common.verdict_lines(payload))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The fleet controller from a cold start to every Site validated.")
    parser.add_argument("--sites", type=int, default=10_000)
    parser.add_argument("--qps", type=float, default=0.0, help="the controller's write limit (0: none)")
    parser.add_argument("--steady-seconds", type=float, default=60.0)
    parser.add_argument("--repetitions", type=int, default=1)
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    payload = measure(args.sites, args.qps, args.steady_seconds, args.repetitions)
    common.publish(NAME, payload, args.output_dir, _report(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

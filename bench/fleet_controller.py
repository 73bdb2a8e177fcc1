"""Benchmark: the fleet hub's controller from a cold start to every one of 10,000 Sites validated.

A fleet owner creates the fleet's Sites, then starts (or restarts) the controller; it must take them all on within
minutes, in bounded memory, writing little, and then fall silent. A hub simulator in this process gets the Site CRD,
a pull-secret Secret and `--sites` Sites; then the controller starts (over HTTPS, `--qps` its write limit, 0:
none) and the time until every Site has a phase (validated with the agent's rules; Ready with its credential, or
Invalid) is measured, with the controller's API writes per Site. Then, with nothing changing, its
writes over `--steady-seconds` (per Site per minute), and a second controller started over the same validated
Sites (a restart) with its writes over the same window. The controller is `snoreloc fleet controller` in its own
process (its defaults but the write limit and a sweep of an hour), so its peak RSS (VmHWM) is its own; its RSS is
also read when 25, 50, 75 and 100 % of the Sites are validated (memory that grows with the fleet shows there), and
its CPU seconds to the cold start's end are given beside those of this process (the hub simulator, a Python server,
and the polling), so a reader sees which side the time went to.

Targets (issue 23): cold start under 5 minutes, peak RSS under 300 MB, at most 2 API writes per Site to a steady
state, 0 writes per Site per minute in a steady state.

Run: `.venv/bin/python bench/fleet_controller.py [--sites 10000] [--qps 0] [--steady-seconds 60] [--repetitions 1]`.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import resource
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common
import hub_sites
from prometheus_client.parser import text_string_to_metric_families
from snoreloc_fleet.controller import operator, reconcile
from snoreloc_fleet.hub import credentials
from snoreloc_fleet.resource import site

from snoreloc.adapters import clock, kube
from snoreloc_sim.hub.simulator import HubSimulator

NAME = "fleet_controller"
COLD_START_S = 300.0
PEAK_RSS_MB = 300.0
WRITES_TO_STEADY = 2.0
POLL_S = 3.0
MARKS = (25, 50, 75, 100)  # % of the Sites validated at which the controller's RSS is read


def _validated(admin: kube.Client) -> int:
    return sum(1 for obj in admin.list(reconcile.SITES, hub_sites.NS) if (obj.get("status") or {}).get("phase"))


def _unlabelled(admin: kube.Client) -> int:
    """Sites without the phase label yet (the controller labels a Site, then writes its status): listing only those
    costs the hub less and less as the controller gets on, rather than every Site at every poll."""
    return len(admin.list(reconcile.SITES, hub_sites.NS, label_selector=f"!{site.PHASE_LABEL}"))


def _own_cpu_s() -> float:
    """CPU seconds of this process so far: the hub simulator's threads, and this loop's polling."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


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


WRITE_VERBS = ("create", "update", "patch", "delete")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Child:
    """`snoreloc fleet controller` as a person starts it, in its own process (so its memory is its own), with no
    write limit unless `qps`; its writes are read from its own metrics (`--metrics-port`)."""

    def __init__(self, hub: HubSimulator, qps: float, scratch: Path, extra: Sequence[str] = ()) -> None:
        ca = scratch / "hub-ca.pem"
        ca.write_bytes(hub.ca_pem)
        limit = ["--qps", str(qps or 1e6), "--burst", str(int(2 * qps) or 1_000_000)]
        argv = [*common.snoreloc_argv(), "fleet", "controller", "--kubeconfig", str(hub.kubeconfig_path)]
        self.port = _free_port()
        argv += ["--hub-url", hub.api_url, "--hub-ca", str(ca), "--sweep", "3600", *limit]
        argv += ["--metrics-port", str(self.port), *extra]
        self._log = (scratch / "controller.log").open("wb")
        self.process = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT)

    def writes(self) -> int:
        """The controller's API writes so far, as its own metrics count them (TokenRequests included)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as response:
                text = response.read().decode()
        except OSError:
            return -1
        return int(
            sum(
                sample.value
                for family in text_string_to_metric_families(text)
                for sample in family.samples
                if sample.name == "snoreloc_fleet_api_requests_total" and sample.labels.get("verb") in WRITE_VERBS
            )
        )

    def serving(self, seconds: float = 120.0) -> None:
        """Until its metrics answer (it has started), at most `seconds`."""
        deadline = time.monotonic() + seconds
        while self.writes() < 0:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("the controller did not start serving its metrics")
            time.sleep(0.5)

    def _status_mb(self, field: str) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def peak_rss_mb(self) -> float:
        """The process's peak resident set (VmHWM), read while it still runs."""
        return self._status_mb("VmHWM")

    def rss_mb(self) -> float:
        """The process's resident set now (VmRSS)."""
        return self._status_mb("VmRSS")

    def cpu_s(self) -> float:
        """The process's CPU seconds so far (user and system, every thread)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self._log.close()


def once(sites: int, qps: float, steady_s: float, extra: Sequence[str] = ()) -> dict[str, float]:
    """One cold start on a fresh hub populated with `sites` Sites; `extra`: more options for the controller."""
    with tempfile.TemporaryDirectory(prefix="snoreloc-bench-controller-") as scratch, HubSimulator() as hub:
        admin = kube.Client.from_kubeconfig(str(hub.kubeconfig_path), clock=clock.SystemClock())
        populate(admin, sites)
        started, own_cpu = time.monotonic(), _own_cpu_s()
        first = Child(hub, qps, Path(scratch), extra)
        rss_at = _cold_start(admin, first, sites)
        cold_s = time.monotonic() - started
        cpu = {"controller_cpu_s": first.cpu_s(), "hub_process_cpu_s": _own_cpu_s() - own_cpu}
        to_steady = first.writes()
        time.sleep(steady_s)
        steady = first.writes() - to_steady
        rss = first.peak_rss_mb()
        first.stop()
        second = Child(hub, qps, Path(scratch), extra)
        second.serving()
        time.sleep(steady_s)
        restart = second.writes()
        rss = max(rss, second.peak_rss_mb())
        second.stop()
        admin.close()
    minutes = steady_s / 60
    return {
        "cold_start_s": cold_s,
        "writes_per_site_to_steady": to_steady / sites,
        "steady_writes_per_site_per_minute": steady / sites / minutes,
        "restart_writes_per_site": restart / sites,
        "peak_rss_mb": rss,
        **{f"rss_mb_at_{mark}_pct": rss_at[mark] for mark in MARKS},
        **cpu,
    }


def _cold_start(admin: kube.Client, child: Child, sites: int) -> dict[int, float]:
    """Wait until every Site has a phase; the controller's RSS when 25, 50, 75 and 100 % of them had."""
    rss_at: dict[int, float] = {}
    while True:
        if child.process.poll() is not None:
            raise RuntimeError(f"the controller exited {child.process.returncode}")
        labelled = sites - _unlabelled(admin)
        validated = _validated(admin) if labelled >= sites else labelled
        for mark in MARKS:
            if mark not in rss_at and validated * 100 >= mark * sites:
                rss_at[mark] = child.rss_mb()
        if validated >= sites:
            return rss_at
        time.sleep(POLL_S)


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
    for key in ("restart_writes_per_site", "peak_rss_mb", "controller_cpu_s", "hub_process_cpu_s"):
        lines.append(f"  {key}: {r[key]['median']:.3f}")
    growth = ", ".join(f"{mark} %: {r[f'rss_mb_at_{mark}_pct']['median']:.0f}" for mark in MARKS)
    lines.append(f"  RSS (MB) with Sites validated at {growth}")
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

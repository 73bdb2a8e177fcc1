"""Benchmark: 500 nodes reporting to the fleet hub every 10 s for two minutes.

While relocating, each node patches its own Site's `status.agent` at every step and wait; a hub must take a fleet's
reports without falling behind. A hub simulator in this process gets `--nodes` Sites, and the controller (kopf in
a thread, over HTTPS, no write limit) validates them; every Site's stick is asked for (the annotation `fleet
make-media` sets), the controller issues each its reporting credential and keeps running. Each simulated node then
reads its own `NAME-report` kubeconfig as the stick carries it (`hubreport.target_from`: its own Site token) and
sends what the agent's reporter sends (`snoreloc.engine.hubreport.Reporter._send`): a JSON merge patch of
`status.agent` with a fresh report of a run in progress (`reportedAt` now, the Site's own site-config digest, the
step and steps done moving from report to report), through the agent's `kube.Client` with the reporter's policy
(one attempt, its socket timeouts, one connection). First every node sends one report (spread over the
interval; sent again, at most three times, by a node whose report failed), which moves its Site from Ready to
InProgress; then, measured, every `--interval` seconds for `--seconds`, spread evenly
over the interval. The nodes run in two child processes (spawned), so the hub's process serves and does nothing
else of theirs.

Quoted: p50/p99/max of each measured patch's latency (request to answer, in the node), the patches that failed,
the hub's writes per report during the window (every write the store took, and those less the controller's), and
the controller's writes for the first reports (the phase change: the label and the status, per Site).
Targets (issue 23): p99 under 1 s, 1 write per report (the node's: exactly 1; with the controller's: exactly 1, the
controller writing nothing for a report that changes no phase).

Run: `.venv/bin/python bench/fleet_reports.py [--nodes 500] [--seconds 120] [--interval 10] [--repetitions 1]`.
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import datetime as dt
import multiprocessing
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common
import fleet_controller
import fleet_status
import hub_sites
from snoreloc_fleet.controller import reconcile
from snoreloc_fleet.hub import credentials
from snoreloc_fleet.resource import site

from snoreloc import errors
from snoreloc.adapters import clock, kube
from snoreloc.engine import hubreport
from snoreloc_sim.hub.simulator import HubSimulator

NAME = "fleet_reports"
P99_S = 1.0
WRITES_PER_REPORT = 1.0
SHARDS = 2
FIRST_ATTEMPTS = 3  # rounds of first reports (a report that timed out is sent again)
FIRST_WAIT_S = 60.0  # each round's wait for the controller to move the Sites it reached


Node = tuple[str, int, str]  # a node's kubeconfig file, its number, its Site's site-config digest


def _node(node: Node, start: float, interval: float, rounds: int) -> tuple[list[float], int]:
    """One node: its own credential, the reporter's client, `rounds` reports; latencies and failures."""
    kubeconfig, number, digest = node
    target = hubreport.target_from(Path(kubeconfig))
    settings = hubreport.Settings()
    policy = kube.Policy(
        attempts=1, total=settings.read_timeout, connect_timeout=settings.connect_timeout,
        read_timeout=settings.read_timeout, pool_size=1,
    )  # fmt: skip
    client = kube.Client.from_kubeconfig(str(target.kubeconfig), clock=clock.SystemClock(), policy=policy)
    latencies, failed = [], 0
    try:
        for round_ in range(rounds):
            time.sleep(max(0.0, start + round_ * interval - time.monotonic()))
            now = dt.datetime.now(dt.UTC)
            report = fleet_status._agent(number + round_, "running", now)  # the step moves from round to round
            report.update(reportedAt=now.strftime("%Y-%m-%dT%H:%M:%SZ"), siteConfigDigest=digest)
            body = {"status": {hubreport.REPORT_FIELD: report}}
            began = time.monotonic()
            try:
                client.request("PATCH", target.path, body=body, content_type=kube.MERGE_PATCH, retry=False)
                latencies.append(time.monotonic() - began)
            except (kube.ApiError, kube.Forbidden, kube.Unreachable, errors.SnorelocError, OSError):
                failed += 1
    finally:
        client.close()
    return latencies, failed


def _shard(kubeconfigs: list[Node], delay: float, interval: float, seconds: float) -> tuple[list[float], int]:
    """Nodes in one process, one thread each; they start `delay` seconds from now, spread over `interval`."""
    origin = time.monotonic() + delay
    rounds = max(1, int(seconds / interval))
    spread = interval / max(1, len(kubeconfigs))
    with concurrent.futures.ThreadPoolExecutor(len(kubeconfigs)) as pool:
        futures = [
            pool.submit(_node, node, origin + index * spread, interval, rounds)
            for index, node in enumerate(kubeconfigs)
        ]
        done = [future.result() for future in futures]
    return [lat for latencies, _ in done for lat in latencies], sum(failed for _, failed in done)


def _credentials(admin: kube.Client, nodes: int, scratch: Path) -> list[Node]:
    """Each node's reporting kubeconfig, as the controller wrote it, in a 0600 file, and its Site's digest."""
    found = []
    for number in range(nodes):
        name = f"store-{number:05d}"
        digest = admin.get(kube.Ref(reconcile.SITES, name, hub_sites.NS))["status"]["media"]["digest"]
        secret = admin.get(kube.Ref(kube.SECRETS, credentials.report_secret_name(name), hub_sites.NS))
        path = scratch / f"{name}.kubeconfig"
        path.touch(mode=0o600)
        path.write_bytes(base64.b64decode(secret["data"][credentials.KUBECONFIG_KEY]))
        found.append((str(path), number, str(digest)))
    return found


def _ready(admin: kube.Client) -> int:
    return hub_sites._ready(admin)


def _moved(admin: kube.Client) -> set[str]:
    """The Sites a first report has moved (InProgress)."""
    listed = admin.list(reconcile.SITES, hub_sites.NS)
    return {
        obj["metadata"]["name"] for obj in listed
        if (obj.get("status") or {}).get("phase") == site.Phase.IN_PROGRESS.value
    }  # fmt: skip


def _first_reports(
    pool: concurrent.futures.ProcessPoolExecutor, admin: kube.Client, nodes: list[Node], interval: float
) -> int:
    """Every node's first report (spread over `interval`), until every Site is InProgress: a node whose report
    failed (a timeout on a loaded machine) sends again, at most FIRST_ATTEMPTS times, each round waited for at most
    FIRST_WAIT_S. The first reports that failed; RuntimeError if a Site never moved."""
    pending, failed = list(nodes), 0
    for _attempt in range(FIRST_ATTEMPTS):
        shards = [pending[index::SHARDS] for index in range(SHARDS) if pending[index::SHARDS]]
        failed += sum(f.result()[1] for f in [pool.submit(_shard, shard, 0.5, interval, interval) for shard in shards])
        deadline = time.monotonic() + FIRST_WAIT_S
        while True:
            moved = _moved(admin)
            pending = [node for node in nodes if f"store-{node[1]:05d}" not in moved]
            if not pending or time.monotonic() > deadline:
                break
            time.sleep(fleet_controller.POLL_S)
        if not pending:
            return failed
    raise RuntimeError(f"{len(pending)} Sites did not move to InProgress after {FIRST_ATTEMPTS} first reports")


def once(nodes: int, seconds: float, interval: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="snoreloc-bench-reports-") as scratch, HubSimulator() as hub:
        admin = kube.Client.from_kubeconfig(str(hub.kubeconfig_path), clock=clock.SystemClock())
        fleet_controller.populate(admin, nodes)
        controller = fleet_controller.Running(hub, 0.0)
        while _ready(admin) < nodes:
            time.sleep(fleet_controller.POLL_S)
        hub_sites._ask(admin, nodes)
        while hub_sites._issued(admin) < nodes:
            time.sleep(fleet_controller.POLL_S)
        kubeconfigs = _credentials(admin, nodes, Path(scratch))
        shards = [kubeconfigs[index::SHARDS] for index in range(SHARDS)]
        store = hub.cluster.store
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(SHARDS, mp_context=context) as pool:
            warm = [pool.submit(os.getpid) for _ in range(SHARDS)]  # the children import before the clock starts
            [future.result() for future in warm]
            first_before = controller.writes
            first_failed = _first_reports(pool, admin, kubeconfigs, interval)
            time.sleep(2.0)  # the controller's last reconciles of the first reports end
            writes_before, controller_before = store.writes, controller.writes
            futures = [pool.submit(_shard, shard, 2.0, interval, seconds) for shard in shards]
            results = [future.result() for future in futures]
        writes, controller_writes = store.writes - writes_before, controller.writes - controller_before
        controller.stop()
        admin.close()
    latencies = sorted(lat for shard_latencies, _ in results for lat in shard_latencies)
    reports = len(latencies)
    quantiles = statistics.quantiles(latencies, n=100, method="inclusive") if reports > 1 else latencies * 99
    return {
        "reports": reports,
        "failed": sum(failed for _, failed in results),
        "p50_s": quantiles[49],
        "p99_s": quantiles[98],
        "max_s": latencies[-1] if latencies else 0.0,
        "writes_per_report": writes / max(1, reports),
        "node_writes_per_report": (writes - controller_writes) / max(1, reports),
        "controller_writes": controller_writes,
        "controller_writes_per_report": controller_writes / max(1, reports),
        "first_report_controller_writes_per_site": (controller_before - first_before) / nodes,
        "first_reports_failed": first_failed,
    }


def measure(nodes: int, seconds: float, interval: float, repetitions: int) -> dict[str, Any]:
    runs = [once(nodes, seconds, interval) for _ in range(repetitions)]
    results: dict[str, Any] = {"nodes": nodes, "seconds": seconds, "interval": interval, "repetitions": repetitions}
    for key in runs[0]:
        results[key] = common.summary([float(run[key]) for run in runs])
    targets = {
        "p99_s": common.target(results["p99_s"]["median"], P99_S, at_most=True),
        "node_writes_per_report": common.exactly(max(r["node_writes_per_report"] for r in runs), WRITES_PER_REPORT),
        "writes_per_report": common.exactly(max(r["writes_per_report"] for r in runs), WRITES_PER_REPORT),
        "failed": common.exactly(max(r["failed"] for r in runs), 0),
    }
    return common.document(NAME, results, targets)


def _report(payload: dict[str, Any]) -> str:
    r = payload["results"]
    lines = [f"{r['nodes']} nodes reporting every {r['interval']:g} s for {r['seconds']:g} s:"]
    keys = ("p50_s", "p99_s", "max_s", "writes_per_report", "node_writes_per_report", "reports", "failed")
    extra = ("controller_writes", "controller_writes_per_report", "first_report_controller_writes_per_site")
    for key in (*keys, *extra, "first_reports_failed"):
        figures = r[key]
        lines.append(f"  {key}: {figures['median']:.3f} (min {figures['min']:.3f}, max {figures['max']:.3f})")
    return "\n".join(lines + common.verdict_lines(payload))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Simulated nodes reporting to the fleet hub.")
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--interval", type=float, default=10.0)
    parser.add_argument("--repetitions", type=int, default=1)
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    payload = measure(args.nodes, args.seconds, args.interval, args.repetitions)
    common.publish(NAME, payload, args.output_dir, _report(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

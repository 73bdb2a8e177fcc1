"""Benchmark: the simulator's own CPU per route write, which caps every scale benchmark and the test suite.

The simulated API server is Python under one GIL, so its CPU per write is a floor under the time of any
benchmark that writes many objects. This one starts a simulator with N user routes in this process and a small
client in a child process (so the client's CPU is not counted here) that PATCHes every route's `spec.host` over
HTTPS, one keep-alive connection, the way the agent does it (a JSON merge patch guarded by resourceVersion). The
figure is this process's CPU time (`time.process_time()`, every thread: HTTP, admission, storage, the route
controller reacting) during the PATCH phase, divided by N. The same PATCHes handed straight to the simulator's
request handler in this process (no socket, no TLS, no HTTP parsing) give the write path's share. A warm-up of a
few writes first pays the one-off costs (CEL parser tables, RE2 compiles) so they do not blur the figure.

Run: `.venv/bin/python bench/sim_cpu.py [--routes 1000] [--repetitions 3]`.
"""

from __future__ import annotations

import argparse
import http.client
import json
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common

from snoreloc_sim.kube import messages
from snoreloc_sim.openshift import simulator

NAME = "sim_cpu"
CPU_PER_WRITE_MAX_MS = 0.8
WARM_UP = 20
SPEED = 60.0
NEW_DOMAIN = "apps.bench-sim-cpu.example.com"
ROUTES_PATH = "/apis/route.openshift.io/v1/routes"


def _client(url: str, token: str, ca_file: str, first: int, last: int) -> int:
    """The child: list the routes, then PATCH `spec.host` of the bulk routes `first` to `last` (exclusive)."""
    host, port = url.removeprefix("https://").rsplit(":", 1)
    context = ssl.create_default_context(cafile=ca_file)
    connection = http.client.HTTPSConnection(host, int(port), context=context, timeout=60)
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    connection.request("GET", ROUTES_PATH, headers=headers)
    listed = json.loads(connection.getresponse().read())["items"]
    bulk = [r for r in listed if r["metadata"]["name"].startswith("app-")][first:last]
    for item in bulk:
        meta = item["metadata"]
        body = json.dumps(
            {"metadata": {"resourceVersion": meta["resourceVersion"]}, "spec": {"host": f"{meta['name']}.{NEW_DOMAIN}"}}
        )
        path = f"/apis/route.openshift.io/v1/namespaces/{meta['namespace']}/routes/{meta['name']}"
        connection.request("PATCH", path, body, {**headers, "Content-Type": "application/merge-patch+json"})
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise SystemExit(f"PATCH {path}: {response.status}")
    print(len(bulk))
    return 0


def _patch_in_child(sim: simulator.Simulator, ca_file: Path, first: int, last: int) -> int:
    argv = [sys.executable, __file__, "--client", sim.api_url, str(ca_file), str(first), str(last)]
    done = subprocess.run(argv, input=sim.token, capture_output=True, text=True, timeout=900, check=True)
    return int(done.stdout.strip())


def _patch_in_process(sim: simulator.Simulator, first: int, last: int) -> int:
    """The same PATCHes as the child sends, handed to the request handler directly."""
    api = sim.running.front.api
    listed = api.handle(messages.Request("GET", ROUTES_PATH, {}, "", b"")).body
    assert isinstance(listed, dict)
    bulk = [r for r in listed["items"] if r["metadata"]["name"].startswith("app-")][first:last]
    for item in bulk:
        meta = item["metadata"]
        body = json.dumps(
            {
                "metadata": {"resourceVersion": meta["resourceVersion"]},
                "spec": {"host": f"{meta['name']}.in.{NEW_DOMAIN}"},
            }
        )
        path = f"/apis/route.openshift.io/v1/namespaces/{meta['namespace']}/routes/{meta['name']}"
        answer = api.handle(messages.Request("PATCH", path, {}, "application/merge-patch+json", body.encode()))
        if answer.code != 200:
            raise RuntimeError(f"PATCH {path}: {answer.code}")
    return len(bulk)


def measure_once(routes: int) -> dict[str, Any]:
    """One fresh simulator with `routes` user routes; the CPU it spends answering a PATCH of each."""
    with (
        tempfile.TemporaryDirectory(prefix="snoreloc-bench-") as scratch,
        simulator.Simulator(speed=SPEED, routes=routes + WARM_UP) as sim,
    ):
        ca_file = Path(scratch) / "ca.crt"
        ca_file.write_bytes(sim.ca_pem)
        _patch_in_child(sim, ca_file, 0, WARM_UP)
        writes_before = sim.cluster.store.writes
        cpu, wall = time.process_time(), time.monotonic()
        patched = _patch_in_child(sim, ca_file, WARM_UP, WARM_UP + routes)
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        writes = sim.cluster.store.writes - writes_before
        direct_cpu = time.process_time()
        direct = _patch_in_process(sim, WARM_UP, WARM_UP + routes)
        direct_cpu = time.process_time() - direct_cpu
    return {
        "routes": patched,
        "simulator_cpu_s": cpu,
        "wall_s": wall,
        "cpu_per_route_ms": 1000 * cpu / patched,
        "write_path_cpu_per_route_ms": 1000 * direct_cpu / direct,
        "store_writes": writes,
    }


def measure(routes: int = 1000, repetitions: int = 3) -> dict[str, Any]:
    runs = [measure_once(routes) for _ in range(repetitions)]
    per_route = common.summary([r["cpu_per_route_ms"] for r in runs])
    write_path = common.summary([r["write_path_cpu_per_route_ms"] for r in runs])
    targets = {"cpu_per_route_write_ms": common.target(per_route["median"], CPU_PER_WRITE_MAX_MS, at_most=True)}
    results = {"routes": routes, "cpu_per_route_ms": per_route, "write_path_cpu_per_route_ms": write_path, "runs": runs}
    return common.document(NAME, results, targets)


def _report(payload: dict[str, Any]) -> str:
    found = payload["results"]["cpu_per_route_ms"]
    lines = [
        f"simulator CPU per route PATCH over {payload['results']['routes']} routes: median {found['median']:.3f} ms "
        f"(min {found['min']:.3f}, max {found['max']:.3f}, n={found['n']})"
    ]
    direct = payload["results"]["write_path_cpu_per_route_ms"]
    lines.append(
        f"  of which the write path (handler called in-process, no HTTP/TLS): median {direct['median']:.3f} ms "
        f"(min {direct['min']:.3f}, max {direct['max']:.3f})"
    )
    return "\n".join(lines + common.verdict_lines(payload))


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["--client"]:
        url, ca_file, first, last = arguments[1:5]
        token = sys.stdin.read().strip()
        return _client(url, token, ca_file, int(first), int(last))
    parser = argparse.ArgumentParser(description="The simulator's CPU per route write.")
    parser.add_argument("--routes", type=int, default=1000, help="routes patched per run (default 1000)")
    parser.add_argument("--repetitions", type=int, default=3, help="fresh simulators measured (default 3)")
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args(arguments)
    payload = measure(args.routes, args.repetitions)
    common.publish(NAME, payload, args.output_dir, _report(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

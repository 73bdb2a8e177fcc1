"""Benchmark: the agent's own CPU per route and its route throughput, against a server that costs nothing.

Against the simulator, the agent's route rate is capped by the simulator's CPU (one Python process, one GIL). To
see the agent alone, this benchmark starts a stand-in API server in a child process: a small asyncio HTTPS server
on 127.0.0.1 that answers the requests the routes step makes (the Ingress `cluster` read, the route list, route
PATCHes) after a fixed latency, with no validation and no storage beyond a host per route. It serves at most a
bounded number of requests and stops on its own after a bounded time. This process then drives the agent's routes
step (`snoreloc.steps.cluster.routes.Routes`: plan from one list, then the pooled, resourceVersion-guarded merge
patches)
with the agent's kube client, and measures its own CPU time (`time.process_time()`: the client's threads, TLS,
JSON) and wall time around the patching. Agent CPU per route = CPU / routes; routes/s = routes / wall. Beside the
row the rate target is judged at, the same PATCHes are sent with urllib3 alone (the library under the kubernetes
client) from as many threads: the floor any agent on the official client pays on this machine, printed, not judged.

Run: `.venv/bin/python bench/agent_cpu.py [--routes 2000] [--latencies 2,10] [--workers 1,16,32]`.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import json
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import common
import harness
import urllib3
import yaml

from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.siteconfig import loader
from snoreloc.steps import context
from snoreloc.steps.cluster import routes as routes_step
from snoreloc_sim.kube import certs

NAME = "agent_cpu"
CPU_PER_ROUTE_MAX_MS = 0.4
RATE_MIN = 1000.0
RATE_AT = (10.0, 16)  # (latency ms, workers) the routes/s target is judged at
OLD_APPS = "apps.factory.example.com"
NAMESPACE = "shop"
TOKEN = "stand-in-token"
MAX_SECONDS = 600.0


# the stand-in server (child process) ------------------------------------------------------------------------------


def _route(index: int) -> dict[str, Any]:
    name = f"app-{index:05d}"
    return {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": name, "namespace": NAMESPACE, "resourceVersion": str(1000 + index), "uid": f"u{index}"},
        "spec": {"host": f"{name}.{OLD_APPS}", "to": {"kind": "Service", "name": name, "weight": 100}},
        "status": {"ingress": [{"host": f"{name}.{OLD_APPS}", "routerName": "default"}]},
    }


def _patched_host(patch: Any) -> str | None:
    """The host a PATCH body sets: a JSON patch's `replace` of /spec/host (its `test` is not checked: no
    validation here) or a merge patch's spec.host."""
    if isinstance(patch, list):
        return next(
            (op.get("value") for op in patch if op.get("path") == "/spec/host" and op.get("op") != "test"), None
        )
    return ((patch.get("spec") if isinstance(patch, dict) else None) or {}).get("host")


class StandIn:
    """Answers after `latency` seconds; counts requests and refuses nothing (bounded by the caller)."""

    def __init__(self, routes: int, latency: float, max_requests: int) -> None:
        self.routes = {r["metadata"]["name"]: r for r in (_route(i) for i in range(routes))}
        self.latency = latency
        self.left = max_requests
        self.done = asyncio.Event()

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        if path.endswith("/ingresses/cluster"):
            return 200, {"kind": "Ingress", "metadata": {"name": "cluster"}, "spec": {"domain": OLD_APPS}}
        if method == "GET" and path.endswith("/routes"):
            items = list(self.routes.values())
            return 200, {"kind": "RouteList", "metadata": {"resourceVersion": "1"}, "items": items}
        name = path.rsplit("/", 1)[-1]
        if "/routes/" in path and name in self.routes:
            route = self.routes[name]
            if method == "PATCH":
                host = _patched_host(json.loads(body or b"{}")) or route["spec"]["host"]
                route = {**route, "spec": {**route["spec"], "host": host}}
                self.routes[name] = route
            return 200, route
        return 404, {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404}

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            while self.left > 0:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                self.left -= 1
                await asyncio.sleep(self.latency)
                code, payload = self.answer(method, target.split("?", 1)[0], body)
                data = json.dumps(payload).encode()
                reply = f"HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
                writer.write(reply.encode() + data)
                await writer.drain()
        if self.left <= 0:
            self.done.set()
        writer.close()


async def _serve(config: dict[str, Any]) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(config["cert"], config["key"])
    stand_in = StandIn(config["routes"], config["latency_ms"] / 1000.0, config["max_requests"])
    server = await asyncio.start_server(stand_in.serve, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    async with server:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stand_in.done.wait(), timeout=config["max_seconds"])


# the measuring side ----------------------------------------------------------------------------------------------


class _NoBackups:
    def save(self, ref: Any, original: Any) -> None:
        return None

    def save_many(self, originals: Any) -> None:
        return None


class _NoRollouts:
    def pending(self) -> dict[str, Any]:
        return {}

    def settled(self, names: list[str]) -> None:
        return None


def _tls_files(directory: Path) -> tuple[Path, Path, Path]:
    ca = certs.make_ca("stand-in")
    leaf = certs.issue(ca, ["127.0.0.1", "localhost"])
    paths = directory / "ca.crt", directory / "tls.crt", directory / "tls.key"
    for path, data in zip(paths, (ca.cert_pem, leaf.cert_pem, leaf.key_pem), strict=True):
        path.write_bytes(data)
    return paths


def _kubeconfig(directory: Path, port: int, ca: Path) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "s", "cluster": {"server": f"https://127.0.0.1:{port}", "certificate-authority": str(ca)}}
        ],
        "users": [{"name": "u", "user": {"token": TOKEN}}],
        "contexts": [{"name": "c", "context": {"cluster": "s", "user": "u"}}],
        "current-context": "c",
    }
    path = directory / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def _context(kubeconfig: Path, site_config: Path, workers: int) -> Any:
    clock = clock_mod.SystemClock()
    return context.Context(
        site=loader.load(str(site_config)),
        kube=kube.Client.from_kubeconfig(str(kubeconfig), clock=clock),
        clock=clock,
        backups=_NoBackups(),
        rollouts=_NoRollouts(),
        settings=context.Settings(route_workers=workers),
    )


@contextlib.contextmanager
def _stand_in(routes: int, latency_ms: float) -> Iterator[tuple[Path, int, Path]]:
    """A stand-in server in a child process: yields a scratch directory, its port and its CA file."""
    with tempfile.TemporaryDirectory(prefix="snoreloc-bench-") as scratch:
        directory = Path(scratch)
        ca, cert, key = _tls_files(directory)
        config = {"routes": routes, "latency_ms": latency_ms, "max_requests": routes + 100, "max_seconds": MAX_SECONDS}
        config.update(cert=str(cert), key=str(key))
        argv = [sys.executable, __file__, "--serve", json.dumps(config)]
        server = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            yield directory, int(server.stdout.readline()), ca
        finally:
            server.kill()
            server.wait()


def _row(routes: int, latency_ms: float, workers: int, migrated: int, cpu: float, wall: float) -> dict[str, Any]:
    return {
        "routes": routes,
        "latency_ms": latency_ms,
        "workers": workers,
        "migrated": migrated,
        "wall_s": wall,
        "agent_cpu_s": cpu,
        "cpu_per_route_ms": 1000 * cpu / max(migrated, 1),
        "routes_per_s": migrated / wall if wall > 0 else 0.0,
    }


def measure_one(routes: int, latency_ms: float, workers: int) -> dict[str, Any]:
    """One stand-in server, one routes step (plan, then patch every route) driven from this process."""
    with _stand_in(routes, latency_ms) as (directory, port, ca):
        ctx = _context(_kubeconfig(directory, port, ca), harness.write_site(directory / "site"), workers)
        step = routes_step.Routes()
        cpu, wall = time.process_time(), time.monotonic()
        plan = step.plan(ctx)
        results = step._patch_all(ctx, routes_step.rewrites(plan.data["infos"]))
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        ctx.kube.close()
    migrated = sum(result == "migrated" for result in results.values())
    return _row(routes, latency_ms, workers, migrated, cpu, wall)


def floor_one(routes: int, latency_ms: float, workers: int) -> dict[str, Any]:
    """The same PATCHes sent with urllib3 alone (the HTTP library under the kubernetes client: same TLS, same
    pooled connections, same threads), with none of the agent's or the client's own work: what any agent built on
    the official client pays per route on this machine."""
    with _stand_in(routes, latency_ms) as (_directory, port, ca):
        pool = urllib3.PoolManager(maxsize=workers, ca_certs=str(ca), retries=False)
        base = f"https://127.0.0.1:{port}{kube.ROUTES.path(namespace=NAMESPACE)}/"
        headers = {"Content-Type": kube.JSON_PATCH, "Accept": "application/json", "Authorization": f"Bearer {TOKEN}"}

        def patch(index: int) -> bool:
            route = _route(index)
            old = route["spec"]["host"]
            host = old.replace(OLD_APPS, "apps.site.example.com")
            body = [
                {"op": "test", "path": "/spec/host", "value": old},
                {"op": "replace", "path": "/spec/host", "value": host},
            ]
            url = base + route["metadata"]["name"]
            answer = pool.request("PATCH", url, body=json.dumps(body), headers=headers, preload_content=False)
            done = json.loads(answer.read())["spec"]["host"] == host
            answer.release_conn()
            return bool(done)

        cpu, wall = time.process_time(), time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as threads:
            migrated = sum(threads.map(patch, range(routes)))
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        pool.clear()
    return {**_row(routes, latency_ms, workers, migrated, cpu, wall), "floor": True}


def measure(
    routes: int = 2000, latencies: Sequence[float] = (2.0, 10.0), workers: Sequence[int] = (1, 16, 32)
) -> dict[str, Any]:
    rows = [measure_one(routes if w > 1 else min(routes, 500), lat, w) for lat in latencies for w in workers]
    cpu = common.summary([row["cpu_per_route_ms"] for row in rows if row["workers"] > 1] or [0.0])
    targets = {"agent_cpu_per_route_ms": common.target(cpu["median"], CPU_PER_ROUTE_MAX_MS, at_most=True)}
    judged = next((r for r in rows if (r["latency_ms"], r["workers"]) == RATE_AT), None)
    if judged is not None:
        name = f"routes_per_s_at_{RATE_AT[0]:g}ms_{RATE_AT[1]}_workers"
        targets[name] = common.target(judged["routes_per_s"], RATE_MIN, at_most=False)
        rows.append(floor_one(routes, *RATE_AT))  # not judged: the yardstick the agent's row is read against
    return common.document(NAME, {"routes": routes, "cpu_per_route_ms": cpu, "rows": rows}, targets)


def _report(payload: dict[str, Any]) -> str:
    lines = [f"{'latency ms':>11} {'workers':>8} {'routes':>7} {'routes/s':>9} {'agent CPU ms/route':>19}"]
    for row in payload["results"]["rows"]:
        lines.append(
            f"{row['latency_ms']:>11g} {row['workers']:>8} {row['migrated']:>7} {row['routes_per_s']:>9.0f} "
            f"{row['cpu_per_route_ms']:>19.3f}" + ("  (urllib3 alone, no agent)" if row.get("floor") else "")
        )
    return "\n".join(lines + common.verdict_lines(payload))


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["--serve"]:
        asyncio.run(_serve(json.loads(arguments[1])))
        return 0
    parser = argparse.ArgumentParser(description="Agent CPU per route and routes/s against a fixed-latency stand-in.")
    parser.add_argument("--routes", type=int, default=2000, help="routes per pooled run (one worker: at most 500)")
    parser.add_argument("--latencies", default="2,10", help="server latency in ms, comma-separated (default 2,10)")
    parser.add_argument("--workers", default="1,16,32", help="route workers, comma-separated (default 1,16,32)")
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args(arguments)
    latencies = [float(x) for x in args.latencies.split(",")]
    payload = measure(args.routes, latencies, [int(x) for x in args.workers.split(",")])
    common.publish(NAME, payload, args.output_dir, _report(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

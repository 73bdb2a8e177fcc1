"""Benchmark: the fleet hub's controller taking on a burst of new Sites.

A hub simulator (in this process) gets the Site CRD and a pull-secret Secret; a controller (kopf in a thread, over
HTTPS) runs with a given write limit; `--sites` Sites are created at once, and the time until every one is Ready
(validated with the agent's rules, credential issued, status written) is measured, repeated `--repetitions` times
with a fresh hub each time, for each `--qps` (0: no limit). Quoted: the median seconds per Site, and the API writes
the controller made per Site (nine: ServiceAccount, Role, RoleBinding, binding Secret, TokenRequest, report Secret,
label, status, Event; one status write each, however many events a Site's own writes cause).

Targets: writes per Site exactly 9 and status writes exactly 1 (writes only on change); at a write limit, the pace
is the limit: seconds per Site at most 1.2 x 9 / qps.

Run: `.venv/bin/python bench/hub_sites.py [--sites 200] [--qps 20,0] [--repetitions 3]`.
"""

from __future__ import annotations

import argparse
import base64
import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common
from snoreloc_fleet import credentials, install
from snoreloc_fleet.controller import operator, reconcile

from snoreloc.adapters import clock, kube
from snoreloc_sim.hub.simulator import HubSimulator

NAME = "hub_sites"
NS = "fleet"
WRITES_PER_SITE = 9
PACE_MARGIN = 1.2
PULL_SECRET = {"auths": {"registry.example.net:5000": {"auth": base64.b64encode(b"bench:bench-pw").decode()}}}


def _prepare(admin: kube.Client) -> None:
    crd = next(obj for obj in install.manifests() if obj["kind"] == "CustomResourceDefinition")
    admin.create(install.KINDS[(crd["apiVersion"], crd["kind"])], crd)
    admin.create(install.KINDS[("v1", "Namespace")], {"metadata": {"name": NS}})
    data = {".dockerconfigjson": base64.b64encode(json.dumps(PULL_SECRET).encode()).decode()}
    admin.create(kube.SECRETS, {"metadata": {"name": "pull-secret", "namespace": NS}, "data": data})


def _site(name: str) -> dict[str, Any]:
    config = {"domain": f"sno.{name}.example.com", "pullSecret": {"file": "pull-secret.json", "mode": "merge"}}
    files = {"pull-secret.json": {"secretKeyRef": {"name": "pull-secret", "key": ".dockerconfigjson"}}}
    return {"metadata": {"name": name, "namespace": NS}, "spec": {"siteConfig": config, "files": files}}


def _ready(admin: kube.Client) -> int:
    return sum(1 for obj in admin.list(reconcile.SITES, NS) if (obj.get("status") or {}).get("phase") == "Ready")


def once(sites: int, qps: float) -> dict[str, float]:
    """One burst on a fresh hub: seconds until all Ready, and the controller's writes."""
    with HubSimulator() as hub:
        admin = kube.Client.from_kubeconfig(str(hub.kubeconfig_path), clock=clock.SystemClock())
        _prepare(admin)
        config = reconcile.Config(credentials.Hub(hub.api_url, hub.ca_pem))
        options = operator.Options(
            config=config, kubeconfig=str(hub.kubeconfig_path), sweep=3600.0,
            qps=qps or 1e6, burst=int(2 * qps) or 1_000_000,
        )  # fmt: skip
        controller = operator.Controller(options)
        stop, ready = threading.Event(), threading.Event()
        thread = threading.Thread(target=controller.run, args=(stop, ready), daemon=True)
        thread.start()
        ready.wait(30)
        started = time.monotonic()
        for index in range(sites):
            admin.create(reconcile.SITES, _site(f"store-{index:05d}"))
        while _ready(admin) < sites:
            time.sleep(0.2)
        seconds = time.monotonic() - started
        writes, counters = controller.client.writes, controller.counters
        stop.set()
        thread.join(30)
        admin.close()
    return {"seconds": seconds, "writes": writes, "status_writes": counters.status_writes}


def measure(sites: int, qps_values: Sequence[float], repetitions: int) -> dict[str, Any]:
    results: dict[str, Any] = {"sites": sites}
    targets: dict[str, Any] = {}
    for qps in qps_values:
        runs = [once(sites, qps) for _ in range(repetitions)]
        per_site = common.summary([run["seconds"] / sites for run in runs])
        writes = max(run["writes"] for run in runs) / sites
        status_writes = max(run["status_writes"] for run in runs) / sites
        label = f"qps_{qps:g}" if qps else "unlimited"
        results[label] = {
            "seconds_per_site": per_site,
            "writes_per_site": writes,
            "status_writes_per_site": status_writes,
        }
        targets[f"{label}_writes_per_site"] = common.exactly(writes, WRITES_PER_SITE)
        targets[f"{label}_status_writes_per_site"] = common.exactly(status_writes, 1)
        if qps:
            limit = PACE_MARGIN * WRITES_PER_SITE / qps
            targets[f"{label}_seconds_per_site"] = common.target(per_site["median"], limit, at_most=True)
    return common.document(NAME, results, targets)


def _report(payload: dict[str, Any]) -> str:
    lines = [f"hub_sites: {payload['results']['sites']} new Sites at once"]
    for label, figures in payload["results"].items():
        if isinstance(figures, dict):
            seconds = figures["seconds_per_site"]
            lines.append(
                f"  {label}: {seconds['median'] * 1000:.0f} ms a Site (min {seconds['min'] * 1000:.0f}, max "
                f"{seconds['max'] * 1000:.0f}), {figures['writes_per_site']:g} writes a Site"
            )
    return "\n".join([*lines, *common.verdict_lines(payload)])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The hub controller taking on a burst of new Sites.")
    parser.add_argument("--sites", type=int, default=200)
    parser.add_argument("--qps", default="20,0", help="write limits to measure, comma-separated (0: none)")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    payload = measure(args.sites, [float(q) for q in args.qps.split(",")], args.repetitions)
    common.publish(NAME, payload, args.output_dir, _report(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

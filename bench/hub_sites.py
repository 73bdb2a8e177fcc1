"""Benchmark: the fleet hub's controller taking on a burst of new Sites.

A hub simulator (in this process) gets the Site CRD and a pull-secret Secret; a controller (kopf in a thread, over
HTTPS) runs with a given write limit. Two bursts, repeated `--repetitions` times with a fresh hub each time, for
each `--qps` (0: no limit):

- **new**: `--sites` Sites are created at once; the time until every one is Ready (validated with the agent's
  rules, status written) and the controller's API writes per Site: two (the phase label and the status; no
  credential yet, no Event for Ready);
- **asked**: then every Site's stick is asked for at once (the `fleet.snoreloc.io/media-requested` annotation
  `fleet make-media` sets, written here by the admin); the time until every one has its reporting credential
  (MediaReady True) and the controller's writes per Site for it: seven (ServiceAccount, Role, RoleBinding, binding
  Secret, TokenRequest, report Secret, status).

Each burst makes one status write per Site, however many events a Site's own writes cause. Targets: those counts
exactly (writes only on change; issue 23: at most 2 writes per Site to a steady state); at a write limit, the pace
is the limit: seconds per Site at most 1.2 x writes / qps.

Run: `.venv/bin/python bench/hub_sites.py [--sites 200] [--qps 20,0] [--repetitions 3]`.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import common
from snoreloc_fleet.controller import operator, reconcile
from snoreloc_fleet.hub import credentials
from snoreloc_fleet.resource import site
from snoreloc_fleet.verbs import install

from snoreloc.adapters import clock, kube
from snoreloc_sim.hub.simulator import HubSimulator

NAME = "hub_sites"
NS = "fleet"
WRITES_PER_NEW_SITE = 2
WRITES_PER_ASKED_SITE = 7
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


def _issued(admin: kube.Client) -> int:
    """Sites whose reporting credential is issued (MediaReady True, the credential in status)."""
    return sum(1 for obj in admin.list(reconcile.SITES, NS) if (obj.get("status") or {}).get(site.STATUS_CREDENTIAL))


def _until(count: Callable[[], int], sites: int) -> float:
    """Seconds until `count()` reaches `sites` (polled every 0.2 s)."""
    started = time.monotonic()
    while count() < sites:
        time.sleep(0.2)
    return time.monotonic() - started


def _ask(admin: kube.Client, sites: int) -> None:
    """Ask for every Site's stick, as `fleet make-media` asks (its annotation), at once."""
    stamp = dt.datetime.now(dt.UTC).isoformat()
    for index in range(sites):
        ref = kube.Ref(reconcile.SITES, f"store-{index:05d}", NS)
        admin.patch(ref, {"metadata": {"annotations": {site.MEDIA_REQUESTED: stamp}}})


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
        new_s = time.monotonic() - started + _until(lambda: _ready(admin), sites)
        new = (controller.client.writes, controller.counters.status_writes)
        started = time.monotonic()
        _ask(admin, sites)
        asked_s = time.monotonic() - started + _until(lambda: _issued(admin), sites)
        asked = (controller.client.writes - new[0], controller.counters.status_writes - new[1])
        stop.set()
        thread.join(30)
        admin.close()
    return {
        "new_seconds": new_s, "new_writes": new[0], "new_status_writes": new[1],
        "asked_seconds": asked_s, "asked_writes": asked[0], "asked_status_writes": asked[1],
    }  # fmt: skip


def measure(sites: int, qps_values: Sequence[float], repetitions: int) -> dict[str, Any]:
    results: dict[str, Any] = {"sites": sites}
    targets: dict[str, Any] = {}
    for qps in qps_values:
        runs = [once(sites, qps) for _ in range(repetitions)]
        for burst, expected in (("new", WRITES_PER_NEW_SITE), ("asked", WRITES_PER_ASKED_SITE)):
            per_site = common.summary([run[f"{burst}_seconds"] / sites for run in runs])
            writes = max(run[f"{burst}_writes"] for run in runs) / sites
            status_writes = max(run[f"{burst}_status_writes"] for run in runs) / sites
            label = f"{burst}_qps_{qps:g}" if qps else f"{burst}_unlimited"
            results[label] = {
                "seconds_per_site": per_site,
                "writes_per_site": writes,
                "status_writes_per_site": status_writes,
            }
            targets[f"{label}_writes_per_site"] = common.exactly(writes, expected)
            targets[f"{label}_status_writes_per_site"] = common.exactly(status_writes, 1)
            if qps:
                limit = PACE_MARGIN * expected / qps
                targets[f"{label}_seconds_per_site"] = common.target(per_site["median"], limit, at_most=True)
    return common.document(NAME, results, targets)


def _report(payload: dict[str, Any]) -> str:
    lines = [f"hub_sites: {payload['results']['sites']} new Sites at once, then all their sticks asked for at once"]
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

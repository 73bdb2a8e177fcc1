"""Benchmark: `snoreloc fleet status` over 10,000 Sites on the hub simulator, beside kubectl listing the same Sites.

A fleet owner asks "where is the fleet?" many times a day; at 10,000 sites the answer must still come in seconds.
The hub is the project's simulator of a plain Kubernetes API over HTTPS, with the Site CRD `fleet install` applies;
10,000 Sites are created and their status written through the status subresource as the controller and the nodes
write it (a fifth relocated with eight reported steps, the rest spread over the other phases). The subject is the
command as a person runs it (a fresh process, `-o json`, all pages of 500); beside it the same command reading the
whole list in one request (`--chunk-size 100000`), which tells the simulator's cost per page from the command's.
The floor is Debian's `kubectl get sites -o json --chunk-size=500` over the same Sites: the same pages, served by
the same hub, parsed by a Go client and printed, nothing counted. The three alternate, 3 runs each, after one
run of the subject alone (`status_first`): the first list after the Sites were written, in which the hub encodes
each Site once (`snoreloc_sim.hub.encodings`); later lists join the kept encodings, as kube-apiserver serves a
list from its watch cache and encodes it in Go. The agent's and the fleet's bytecode is compiled first, as
installing their wheels does.

Run: `.venv/bin/python bench/fleet_status.py [--sites 10000] [--repetitions 3]`.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime as dt
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common
import snoreloc_fleet
from snoreloc_fleet.resource import site
from snoreloc_fleet.verbs import install

import snoreloc
from snoreloc.adapters import clock, kube
from snoreloc_sim.hub.simulator import HubSimulator

NAME = "fleet_status"
NAMESPACE = "fleet"
TARGET_S = 2.0  # issue 23: `fleet status` over 10,000 Sites in under 2 s
STEPS = ("preflight", "network", "kubelet-start", "api-wait", "certificates", "domain", "settle", "routes")
PHASES = (  # (phase, reason, run state, share of the fleet in tenths of a percent)
    (site.Phase.RELOCATED, site.Reason.DONE, "done", 600),
    (site.Phase.READY, site.Reason.CREDENTIAL_ISSUED, None, 250),
    (site.Phase.IN_PROGRESS, site.Reason.RUNNING, "running", 100),
    (site.Phase.FAILED, site.Reason.RUN_FAILED, "failed", 30),
    (site.Phase.STALE, site.Reason.SILENT, "running", 10),
    (site.Phase.INVALID, site.Reason.INVALID_SITE_CONFIG, None, 10),
)


def _agent(number: int, state: str, now: dt.datetime) -> dict[str, Any]:
    done = len(STEPS) if state == "done" else number % len(STEPS)
    steps = [
        {"name": n, "state": "done" if i < done else "pending", "seconds": 30.0 + number % 90 if i < done else None}
        for i, n in enumerate(STEPS)
    ]
    failed = state == "failed"
    if failed:
        steps[done]["state"] = "failed"
    reported = now - dt.timedelta(seconds=60 * (number % 180))
    return {
        "reportedAt": reported.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "agentVersion": "0.1.0",
        "source": "node",
        "siteConfigDigest": "sha256:" + f"{number:064x}",
        "runState": state,
        "step": STEPS[min(done, len(STEPS) - 1)],
        "stepsDone": done,
        "stepsTotal": len(STEPS),
        "todo": "re-insert the stick and run `snoreloc run` again" if failed else "",
        "steps": steps,
        "failure": {"step": STEPS[done], "message": "timed out", "hint": "check the network"} if failed else None,
    }


def _phase(number: int) -> tuple[site.Phase, site.Reason, str | None]:
    slot = number % 1000
    for phase, reason, state, share in PHASES:
        if slot < share:
            return phase, reason, state
        slot -= share
    return PHASES[0][:3]


def _put(client: kube.Client, number: int, now: dt.datetime) -> None:
    name = f"store-{number:05d}"
    phase, reason, state = _phase(number)
    body = {
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {site.PHASE_LABEL: phase.value}},
        "spec": {"siteConfig": {"domain": f"sno.{name}.example.com", "pullSecret": {"file": "pull-secret.json"}}},
    }
    resource = kube.Resource(site.GROUP, site.VERSION, site.PLURAL, site.KIND, namespaced=True)
    client.create(resource, body)
    status: dict[str, Any] = {site.STATUS_PHASE: phase.value, site.STATUS_REASON: reason.value}
    if state is not None:
        status[site.STATUS_AGENT] = _agent(number, state, now)
    if phase is site.Phase.INVALID:
        status[site.STATUS_VALIDATION] = {"errors": [{"path": "spec.domain", "line": 3, "message": "bad"}], "more": 0}
    path = kube.Ref(resource, name, NAMESPACE).path("status")
    client.request("PATCH", path, body={"status": status}, content_type=kube.MERGE_PATCH)


def populate(hub: HubSimulator, sites: int) -> float:
    """The CRD, the namespace and `sites` Sites with their status; the seconds it took."""
    started = time.monotonic()
    client = kube.Client.from_kubeconfig(str(hub.kubeconfig_path), clock=clock.SystemClock())
    try:
        crd = next(obj for obj in install.manifests() if obj["kind"] == "CustomResourceDefinition")
        client.create(install.KINDS[(crd["apiVersion"], crd["kind"])], crd)
        client.create(install.KINDS[("v1", "Namespace")], {"metadata": {"name": NAMESPACE}})
        now = dt.datetime.now(dt.UTC)
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda n: _put(client, n, now), range(sites)))
    finally:
        client.close()
    return time.monotonic() - started


def _runs(hub: HubSimulator, repetitions: int, scratch: Path) -> dict[str, list[common.ChildRun]]:
    config = str(hub.kubeconfig_path)
    status = [*common.snoreloc_argv(), "fleet", "status", "--kubeconfig", config, "-n", NAMESPACE, "-o", "json"]
    subjects = {"status": status, "status_one_page": [*status, "--chunk-size", "100000"]}
    kubectl = shutil.which("kubectl")
    if kubectl:
        cache = ["--cache-dir", str(scratch / "kubectl-cache")]
        subjects["kubectl"] = [kubectl, "--kubeconfig", config, *cache, "get", "sites", "-n", NAMESPACE]
        subjects["kubectl"] += ["-o", "json", "--chunk-size=500"]
    env = {**os.environ, "HOME": str(scratch)}
    runs: dict[str, list[common.ChildRun]] = {"status_first": [_run(scratch, "status_first", status, env)]}
    runs.update({name: [] for name in subjects})
    for _ in range(repetitions):
        for name, argv in subjects.items():
            runs[name].append(_run(scratch, name, argv, env))
    return runs


def _run(scratch: Path, name: str, argv: list[str], env: dict[str, str]) -> common.ChildRun:
    run = common.run_child(argv, env=env, timeout=600, stderr=scratch / f"{name}.err")
    if run.exit_code != 0:
        raise RuntimeError(f"{name} exited {run.exit_code}: {(scratch / f'{name}.err').read_text()[-2000:]}")
    return run


def measure(sites: int, repetitions: int) -> dict[str, Any]:
    common.compile_bytecode(snoreloc, snoreloc_fleet)
    with tempfile.TemporaryDirectory(prefix="snoreloc-bench-status-") as scratch_name, HubSimulator() as hub:
        populate_s = populate(hub, sites)
        runs = _runs(hub, repetitions, Path(scratch_name))
    results: dict[str, Any] = {"sites": sites, "repetitions": repetitions, "populate_s": populate_s}
    for name, measured in runs.items():
        results[name] = {
            "wall_s": common.summary([r.wall_s for r in measured]),
            "cpu_s": common.summary([r.cpu_s for r in measured]),
            "peak_rss_mb": common.summary([r.peak_rss_kb / 1024 for r in measured]),
        }
    wall = results["status"]["wall_s"]["median"]
    return common.document(NAME, results, {"status_wall_s": common.target(wall, TARGET_S, at_most=True)})


def _report(payload: dict[str, Any]) -> str:
    r = payload["results"]
    lines = [f"fleet status over {r['sites']} Sites on the hub simulator, {r['repetitions']} runs:"]
    for name in ("status_first", "status", "status_one_page", "kubectl"):
        if name in r:
            f = r[name]
            wall = f["wall_s"]
            lines.append(
                f"  {name:15s} wall {wall['median']:.2f} s (min {wall['min']:.2f}, max {wall['max']:.2f}),"
                f" CPU {f['cpu_s']['median']:.2f} s, peak RSS {f['peak_rss_mb']['median']:.0f} MB"
            )
    lines.append(f"  populating the hub: {r['populate_s']:.0f} s")
    return "\n".join(lines + common.verdict_lines(payload))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sites", type=int, default=10_000)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    payload = measure(args.sites, args.repetitions)
    common.publish(NAME, payload, args.output_dir, _report(payload))
    return 0


if __name__ == "__main__":
    sys.exit(main())

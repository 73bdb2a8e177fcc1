"""Benchmark: a wave over 500 reporting nodes with a seeded systematic defect, beside today's fleet without a wave.

A hub simulator in this process gets `--nodes` Sites labelled for a wave and `--canary` more in no wave ("today"),
and the real controller (kopf in a thread, over HTTPS, no write limit) validates them all. Every node that may go
has its stick asked for (the annotation `fleet make-media` sets) and its credential issued; each then reports as the
node does (a JSON merge patch of `status.agent`, here sent with the admin's client): `running` at its first step,
then `failed` at step `domain` with exit class 69, agent 1.2.3 and one template digest: the same defect everywhere.
After each report the controller is left to settle (no write for `SETTLE_S`) before the next, so each report's
writes are its own.

Measured side by side in one run, per repetition:
- today: the `--canary` Sites in no wave, each reporting `running` then `failed`: the controller's writes per report,
  and the failures the fleet takes (every one: nothing stops it);
- the wave (`canary` Sites in batch 0, `sameCause` 3): the controller's writes per report until the brake halts the
  wave, the reports it takes to halt and the Sites failed by then, the writes of the report that halts it (each
  held Site's gate rewritten with the cause: one write per held Site, once), and the one-off writes that gate the
  wave's Sites when it is created (per Site); the credentials issued (only the canary's).
The wave's success threshold is 0 here, so that the same-cause brake alone stops it. Targets: the brake halts after
`sameCause` failures (reports to halt == 2 x sameCause); the controller's Site writes per report before the halt at
most today's, and the Wave's own status written at most once per `waves.COUNTS_PERIOD` besides its state changes; the
halting report costs, beyond what a failed report costs today, at most 1.2 writes per held Site.

Run: `.venv/bin/python bench/fleet_waves.py [--nodes 500] [--canary 10] [--repetitions 3]` (about half a minute a
repetition at 500 nodes on an idle two-core machine: the controller validates every Site once).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import common
import hub_sites
from snoreloc_fleet.controller import operator, reconcile, waves
from snoreloc_fleet.hub import credentials
from snoreloc_fleet.resource import site
from snoreloc_fleet.resource import wave as wave_mod
from snoreloc_fleet.verbs import install

from snoreloc.adapters import clock, kube
from snoreloc_sim.hub.simulator import HubSimulator

NAME = "fleet_waves"
NS = hub_sites.NS
SAME_CAUSE = 3
SETTLE_S = 0.4  # no controller write for this long: the report's effects are done
BUDGET_S = 120.0  # any one wait
TEMPLATE = "4f2a9c0de1b27788"


def _until(what: str, check: Callable[[], Any], budget: float = BUDGET_S) -> Any:
    deadline = time.monotonic() + budget
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise TimeoutError(f"{what}: not within {budget:g}s")


def _settle(controller: operator.Controller) -> int:
    """Wait until the controller has written nothing for SETTLE_S; its writes so far."""
    last, quiet_since = controller.client.writes, time.monotonic()
    deadline = time.monotonic() + BUDGET_S
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = controller.client.writes
        if now != last:
            last, quiet_since = now, time.monotonic()
        elif time.monotonic() - quiet_since >= SETTLE_S:
            return int(now)
    raise TimeoutError("the controller did not settle")


def _prepare(admin: kube.Client) -> None:
    hub_sites._prepare(admin)  # the Site CRD, the namespace, the pull secret
    crd = next(
        o for o in install.manifests() if o["kind"] == "CustomResourceDefinition" and "wave" in o["metadata"]["name"]
    )
    admin.create(install.KINDS[(crd["apiVersion"], crd["kind"])], crd)


def _create(admin: kube.Client, name: str, wave: str) -> None:
    obj = hub_sites._site(name)
    obj["metadata"]["annotations"] = {site.TEMPLATE_DIGEST: TEMPLATE}
    if wave:
        obj["metadata"]["labels"] = {"rollout": wave}
    admin.create(reconcile.SITES, obj)


def _phases(admin: kube.Client) -> dict[str, int]:
    counts: dict[str, int] = {}
    for obj in admin.list(reconcile.SITES, NS):
        phase = str((obj.get("status") or {}).get("phase", ""))
        counts[phase] = counts.get(phase, 0) + 1
    return counts


def _issue(admin: kube.Client, names: Sequence[str]) -> dict[str, str]:
    """Ask for the sticks of `names` as make-media does; their media digests once their credentials are issued."""
    for name in names:
        stamp = f"2026-01-01T00:00:00.{len(name):06d}Z"
        admin.patch(kube.Ref(reconcile.SITES, name, NS), {"metadata": {"annotations": {site.MEDIA_REQUESTED: stamp}}})

    def issued() -> dict[str, str] | None:
        found = {}
        for name in names:
            status = admin.get(kube.Ref(reconcile.SITES, name, NS)).get("status") or {}
            if not status.get(site.STATUS_CREDENTIAL):
                return None
            found[name] = status[site.STATUS_MEDIA]["digest"]
        return found

    result: dict[str, str] = _until("credentials issued", issued)
    return result


def _node_report(admin: kube.Client, name: str, digest: str, state: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    agent: dict[str, Any] = {"runState": state, "source": "node", "agentVersion": "1.2.3", "siteConfigDigest": digest,
                             "step": "domain", "reportedAt": stamp}  # fmt: skip
    if state == "failed":
        agent |= {"exitCode": 69, "failure": {"step": "domain", "message": f"{name}: the mirror did not answer"}}
    ref = kube.Ref(reconcile.SITES, name, NS)
    admin.request(
        "PATCH", ref.path("status"), body={"status": {site.STATUS_AGENT: agent}}, content_type=kube.MERGE_PATCH
    )


def _stream(
    admin: kube.Client, controller: operator.Controller, digests: dict[str, str], stop: Callable[[], bool]
) -> tuple[list[int], list[int]]:
    """Each node reports running then failed, one report at a time, until `stop`: the controller's writes for each
    report, and of those the Wave status writes."""
    writes, wave_writes = [], []
    before, wave_before = _settle(controller), controller.wave_counters.status_writes
    for name, digest in digests.items():
        for state in ("running", "failed"):
            _node_report(admin, name, digest, state)
            after, wave_after = _settle(controller), controller.wave_counters.status_writes
            writes.append(after - before)
            wave_writes.append(wave_after - wave_before)
            before, wave_before = after, wave_after
            if stop():
                return writes, wave_writes
    return writes, wave_writes


def once(nodes: int, canary: int) -> dict[str, float]:
    with HubSimulator() as hub:
        admin = kube.Client.from_kubeconfig(str(hub.kubeconfig_path), clock=clock.SystemClock())
        _prepare(admin)
        options = operator.Options(
            config=reconcile.Config(credentials.Hub(hub.api_url, hub.ca_pem)), kubeconfig=str(hub.kubeconfig_path),
            sweep=3600.0, qps=1e6, burst=1_000_000,
        )  # fmt: skip
        controller = operator.Controller(options)
        stop, ready = threading.Event(), threading.Event()
        thread = threading.Thread(target=controller.run, args=(stop, ready), daemon=True)
        thread.start()
        ready.wait(60)
        wave_sites = [f"store-{i:05d}" for i in range(nodes)]
        today_sites = [f"today-{i:05d}" for i in range(canary)]
        for name in wave_sites:
            _create(admin, name, "bench")
        for name in today_sites:
            _create(admin, name, "")
        _until("every Site Ready", lambda: _phases(admin).get("Ready") == nodes + canary)
        _settle(controller)
        # today: no wave; the same defect fails every Site that goes
        today, _ = _stream(admin, controller, _issue(admin, today_sites), lambda: False)
        # the wave
        before = _settle(controller)
        body = {
            "apiVersion": site.API_VERSION,
            "kind": wave_mod.KIND,
            "metadata": {"name": "bench", "namespace": NS},
            "spec": {
                "selector": {"matchLabels": {"rollout": "bench"}},
                "canary": canary,
                "batches": ["10%"],
                "successThreshold": 0,
                "sameCause": SAME_CAUSE,
            },
        }  # fmt: skip (threshold 0: the same-cause brake alone)
        admin.create(waves.WAVES, body)
        _until("every wave Site gated", lambda: controller.wave_counters.gate_writes >= nodes)
        setup = _settle(controller) - before
        issued_before = sum(1 for o in admin.list(kube.SECRETS, NS) if o["metadata"]["name"].endswith("-report"))
        digests = _issue(admin, wave_sites[:canary])

        def halted() -> bool:
            status = admin.get(waves.wave_ref(NS, "bench")).get("status") or {}
            return bool(status.get("halt"))

        started = time.monotonic()
        wave, wave_status = _stream(admin, controller, digests, halted)
        stream_s = time.monotonic() - started
        stopped = halted()
        issued = sum(1 for o in admin.list(kube.SECRETS, NS) if o["metadata"]["name"].endswith("-report"))
        failed = _phases(admin).get("Failed", 0) - canary
        stop.set()
        thread.join(30)
        admin.close()
    return {
        "today_writes_per_report": statistics.fmean(today),
        "today_failed": float(len(today) // 2),
        "today_writes_of_a_failure": float(max(today[1::2])),
        "wave_reports_to_halt": float(len(wave)) if stopped else float("nan"),
        "wave_failed_at_halt": float(failed),
        "wave_writes_per_report_before_halt": statistics.fmean(wave[:-1]),
        "wave_site_writes_per_report_before_halt": statistics.fmean(
            w - v for w, v in zip(wave[:-1], wave_status[:-1], strict=True)
        ),
        "wave_status_writes_before_halt": float(sum(wave_status[:-1])),
        "wave_stream_seconds": stream_s,
        "wave_writes_of_the_halting_report": float(wave[-1]),
        "wave_held_sites": float(nodes - failed),
        "wave_setup_writes_per_site": setup / nodes,
        "wave_credentials_issued": float(issued - issued_before),
    }


def measure(nodes: int, canary: int, repetitions: int) -> dict[str, Any]:
    runs = [once(nodes, canary) for _ in range(repetitions)]
    results: dict[str, Any] = {"nodes": nodes, "canary": canary, "same_cause": SAME_CAUSE}
    for key in runs[0]:
        results[key] = common.summary([run[key] for run in runs])
    ratio = [run["wave_writes_per_report_before_halt"] / run["today_writes_per_report"] for run in runs]
    results["writes_per_report_ratio_wave_to_today"] = common.summary(ratio)
    site_ratio = [run["wave_site_writes_per_report_before_halt"] / run["today_writes_per_report"] for run in runs]
    results["site_writes_per_report_ratio_wave_to_today"] = common.summary(site_ratio)
    # the Wave's own status: one write a COUNTS_PERIOD at most for counts, besides its state changes (none before
    # the halt but batch 0 opening, written when it was created)
    over = max(
        run["wave_status_writes_before_halt"] - (1 + run["wave_stream_seconds"] / waves.COUNTS_PERIOD) for run in runs
    )
    # the halting report's writes beyond a failed report's today (its Site's status, label, Event), per held Site
    halt_per_held = max(
        (run["wave_writes_of_the_halting_report"] - run["today_writes_of_a_failure"]) / run["wave_held_sites"]
        for run in runs
    )
    targets = {
        "reports_to_halt": common.exactly(max(run["wave_reports_to_halt"] for run in runs), 2 * SAME_CAUSE),
        "site_writes_per_report_ratio": common.target(max(site_ratio), 1.0, at_most=True),
        "wave_status_writes_over_one_a_period": common.target(over, 0.0, at_most=True),
        "halt_writes_per_held_site": common.target(halt_per_held, 1.2, at_most=True),
    }
    return common.document(NAME, results, targets)


def _report(payload: dict[str, Any]) -> str:
    results = payload["results"]

    def shown(key: str) -> str:
        figure = results[key]
        return f"{figure['min']:.3g}/{figure['median']:.3g}/{figure['max']:.3g}"

    lines = [
        f"{results['nodes']} nodes in a wave (canary {results['canary']}, same cause {results['same_cause']}) "
        f"beside {results['canary']} in no wave; min/median/max of {results['today_failed']['n']} runs",
        f"  today: {shown('today_writes_per_report')} controller writes per report; "
        f"{shown('today_failed')} Sites failed, nothing stops the rest",
        f"  wave: halted after {shown('wave_reports_to_halt')} reports, {shown('wave_failed_at_halt')} Sites failed; "
        f"{shown('wave_writes_per_report_before_halt')} writes per report before the halt "
        f"(ratio to today {shown('writes_per_report_ratio_wave_to_today')}; the Sites' alone "
        f"{shown('site_writes_per_report_ratio_wave_to_today')}, the Wave's status "
        f"{shown('wave_status_writes_before_halt')} "
        f"in {shown('wave_stream_seconds')} s); the halting report "
        f"{shown('wave_writes_of_the_halting_report')} writes (held Sites' gates); gating it "
        f"{shown('wave_setup_writes_per_site')} writes a Site; credentials issued {shown('wave_credentials_issued')}",
    ]
    return "\n".join(lines + common.verdict_lines(payload))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--canary", type=int, default=10)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--out-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    payload = measure(args.nodes, args.canary, args.repetitions)
    common.publish(NAME, payload, args.out_dir, _report(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

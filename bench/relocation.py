"""Benchmark 1: a full relocation's wall time against the physical limit, and how many rollouts it caused.

A relocation is mostly waiting for operators to roll out the agent's changes. Whatever a tool does, once the API
answers one chain cannot be avoided: the node's pending CSRs approved and signed (so the node can run the new
pods), then one kube-apiserver revision carrying the new serving certificates. Everything else (ingress, console,
authentication, openshift-apiserver, machine-config, the route migration) can overlap it. So the yardstick is

- physical limit = (CSR signing + node Ready + one kube-apiserver revision) / speed, taken from the simulator's own
  model of those durations (the constants its controllers schedule with) for the same seed and speed, not from the
  run, so an extra rollout the agent causes lengthens the run but never the yardstick. The CSR part exists only
  when the node needs it: on the default seed the node is Ready and nothing waits for a CSR, so the limit is the
  revision alone; `--shelved-node` starts the simulator with the kubelet's certificate expired on the shelf (the
  field case of issue 12: the kubelet asks 3 s after start, signing takes 2 s, the node is Ready 5 s later, and no
  rollout starts before that), and then the chain begins with the CSRs;
- actual / physical limit (target <= 1.10), and the rollouts per operator the simulator recorded; more than one
  kube-apiserver revision fails the bench (target: exactly 1).

Beside the judged limit it prints the limit of the agent's own design: the agent writes the APIServer change only once
the authentication operator has published the new oauth host (`snoreloc.steps.openshift.apiserver_revision`, so that a
slow oauth rollout cannot cost a second kube-apiserver restart), which puts the operator's publication (30 cluster
seconds in the simulator) on the chain. And it splits the run along its critical chain (`chain`): start-up before the
first step, from there to the revision's start (CSRs, node Ready, the writes, the oauth wait), the revision, the settle
noticing its end, the steps after, the process exit.

The count comes from the simulator's `Recorder.rollouts` (one entry per rollout an operator performed, with its
trigger): the kube-apiserver operator records one per revision it rolls out. The critical path of the rollouts
this run triggered is still printed (and drawn in the timeline) to show where the time went.

The simulator divides every cluster duration by `speed`; the agent's own work (start-up, certificates, API calls)
is not scaled, so the faster the simulation the larger its share. The benchmark runs at more than one speed and
judges at the slowest. `--routes N` adds N user routes to the seed (the 5,000-route row of the targets).

`--shelved-days N` (issue 37) starts the simulator as a node sealed N days before (`operators.shelf`: every
certificate aged by N days) and judges the run against that node's own chain: the control plane regenerating its
expired `csr-signer` (`shelf.REGEN_DELAY` after start) before kube-controller-manager signs the kubelet's CSRs, then
node Ready and the revision (`shelf_chain_cluster_s`). It measures that row and today's `--shelved-node` row beside
it, each `--repeats` times, and prints min / median / max of each ratio.

Run: `.venv/bin/python bench/relocation.py [--speeds 20,5] [--routes 0] [--shelved-node] [--shelved-days N]
[--repeats N] [--svg FILE]`.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common
import harness
import timeline

from snoreloc_sim.openshift.operators import component_routes, kube_apiserver, kubelet, shelf

NAME = "relocation"
ROUTING_OPERATOR = "openshift-apiserver"
ROUTING_TRIGGER = "routing domain"
REVISION_OPERATOR = kube_apiserver.OPERATOR
ACTUAL_OVER_LIMIT_MAX = 1.10
REVISIONS_EXPECTED = 1
DEFAULT_SVG = common.ROOT / "docs" / "relocation-timeline.svg"


def _chains(rollouts: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Each operator's rollouts back to back: an operator never runs two at once."""
    chains: dict[str, float] = {}
    for rollout in rollouts:
        chains[rollout["operator"]] = chains.get(rollout["operator"], 0.0) + rollout["seconds"]
    return chains


def _routes_chain(rollouts: Sequence[dict[str, Any]], routes_work: float) -> float:
    """openshift-apiserver up to its last routing-domain rollout, then the agent migrating the routes."""
    ordered = sorted((r for r in rollouts if r["operator"] == ROUTING_OPERATOR), key=lambda r: r["start"])
    last = max((i for i, r in enumerate(ordered) if ROUTING_TRIGGER in r["trigger"]), default=-1)
    return float(sum(r["seconds"] for r in ordered[: last + 1])) + routes_work


def bounds(rollouts: Sequence[dict[str, Any]], routes_work: float) -> dict[str, Any]:
    """Critical-path lower bound and sequential bound (seconds) of recorded rollouts plus route migration work."""
    chains = _chains(rollouts)
    candidates = {operator: seconds for operator, seconds in chains.items()}
    candidates["routes"] = _routes_chain(rollouts, routes_work)
    longest = max(candidates, key=lambda name: candidates[name])
    chain = [ROUTING_OPERATOR, "routes"] if longest == "routes" else [longest]
    return {
        "critical_s": candidates[longest],
        "critical_chain": chain,
        "sequential_s": sum(chains.values()) + routes_work,
        "chains_s": candidates,
    }


def _expired_after(name: str, days: int) -> bool:
    """Whether the model's certificate `name` has expired on a node sealed `days` ago (`shelf.kubelet_expired`'s
    rule: installed `shelf.INSTALL_AGE_DAYS` before the seal)."""
    return shelf.BY_NAME[name].lifetime <= days + shelf.INSTALL_AGE_DAYS


def shelf_chain_cluster_s(days: int) -> float:
    """Cluster seconds before the node is Ready on a node sealed `days` ago: nothing when its kubelet certificates
    still hold; else the kubelet asks (`CSR_DELAY`) and its CSRs are signed (`SIGN_DELAY`), but not before the
    control plane has regenerated an expired `csr-signer` (`shelf.REGEN_DELAY`: kube-controller-manager signs with
    it), then the node turns Ready (`READY_DELAY`)."""
    if not shelf.kubelet_expired(days):
        return 0.0
    signed = kubelet.CSR_DELAY + kubelet.SIGN_DELAY
    if _expired_after("csr-signer", days):
        signed = max(signed, shelf.REGEN_DELAY)
    return signed + kubelet.READY_DELAY


def physical_limit_cluster_s(shelved: bool = False, shelved_days: int = 0) -> float:
    """Cluster seconds of the unavoidable chain in the simulator's model: on a shelved node its CSRs asked for,
    signed and the node Ready (after `shelved_days`, once the recovery it waits on is done); then one
    kube-apiserver revision from installer start to the operator reporting it done."""
    csr = kubelet.CSR_DELAY + kubelet.SIGN_DELAY + kubelet.READY_DELAY if shelved else 0.0
    if shelved_days:
        csr = shelf_chain_cluster_s(shelved_days)
    revision = (
        kube_apiserver.INSTALLER_SECONDS
        + kube_apiserver.WARN_SECONDS
        + kube_apiserver.DOWN_SECONDS
        + kube_apiserver.SETTLE_SECONDS
    )
    return csr + revision


def design_limit_cluster_s(shelved: bool = False, shelved_days: int = 0) -> float:
    """The physical limit plus the authentication operator publishing the oauth host, which the agent waits for
    before it writes the APIServer change (one restart even when that publication is slow)."""
    return physical_limit_cluster_s(shelved, shelved_days) + component_routes.APPLY_SECONDS


def chain(run: harness.AgentRun) -> dict[str, float]:
    """Wall seconds of the run along its critical chain (they add up to the run's wall time)."""
    steps = run.steps()
    revision = [r for r in run.rollouts if r["operator"] == REVISION_OPERATOR]
    if not steps or not revision:
        return {}
    first, last = steps[0]["start"], max(s["end"] for s in steps)
    begun, ended = min(r["start"] for r in revision), max(r["end"] for r in revision)
    settle = run.step("settle")
    noticed = settle["end"] if settle else ended
    return {
        "start-up": first,
        "to the revision": begun - first,
        "of which the oauth-host wait": oauth_wait(run),
        "the revision": ended - begun,
        "settle noticing": noticed - ended,
        "steps after the settle": last - noticed,
        "exit": run.child.wall_s - last,
    }


def oauth_wait(run: harness.AgentRun) -> float:
    """Wall seconds the domain step waited for the oauth host (the journal's finished waits)."""
    waited = [w for w in run.status.get("wait_log") or [] if w.get("step") == "domain"]
    return sum(run.at(w["finished"]) - run.at(w["started"]) for w in waited)


def rollouts_per_operator(rollouts: Sequence[dict[str, Any]]) -> dict[str, int]:
    counted: dict[str, int] = {}
    for rollout in rollouts:
        counted[rollout["operator"]] = counted.get(rollout["operator"], 0) + 1
    return counted


def analyse(run: harness.AgentRun, speed: float, shelved: bool = False, shelved_days: int = 0) -> dict[str, Any]:
    """The figures of one relocation: wall time, both bounds, their ratios, where the time outside them went."""
    routes_step = run.step("routes")
    routes_work = routes_step["end"] - routes_step["start"] if routes_step else 0.0
    found = bounds(run.rollouts, routes_work)
    actual = run.child.wall_s
    first = min((r["start"] for r in run.rollouts), default=0.0)
    last = max((r["end"] for r in run.rollouts), default=0.0)
    limit = physical_limit_cluster_s(shelved, shelved_days) / speed
    design = design_limit_cluster_s(shelved, shelved_days) / speed
    counted = rollouts_per_operator(run.rollouts)
    return {
        "speed": speed,
        "actual_wall_s": actual,
        "actual_cluster_s": actual * speed,
        "physical_limit_s": limit,
        "actual_over_limit": actual / limit,
        "design_limit_s": design,
        "actual_over_design_limit": actual / design,
        "chain": chain(run),
        "kube_apiserver_revisions": counted.get(REVISION_OPERATOR, 0),
        **found,
        "critical_cluster_s": found["critical_s"] * speed,
        "actual_over_critical": actual / found["critical_s"],
        "routes_work_s": routes_work,
        "first_rollout_start_s": first,
        "after_last_rollout_s": actual - last,
        "rollouts_per_operator": counted,
        "peak_rss_mb": run.child.peak_rss_kb / 1024,
        "exit_code": run.child.exit_code,
        "requests": len(run.requests),
        "writes": sum(r.method != "GET" for r in run.requests),
        "steps": run.steps(),
        "rollouts": run.rollouts,
    }


def measure_one(speed: float, routes: int = 0, shelved: bool = False, shelved_days: int = 0) -> dict[str, Any]:
    """One fresh simulator at `speed`, one full relocation, analysed."""
    with harness.Bench(speed=speed, routes=routes, shelved=shelved, shelved_days=shelved_days) as bench:
        return analyse(bench.relocate(), speed, shelved, shelved_days)


def _spread(values: Sequence[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def shelf_rows(speed: float, days: int, repeats: int) -> list[dict[str, Any]]:
    """Issue 37's row (`days` on the shelf) and today's shelved-node row, each `repeats` fresh relocations at
    `speed`: each one's physical limit, and min / median / max of the wall time and of actual / limit."""
    rows = []
    for label, shelved, shelved_days in ((f"shelved {days} days", False, days), ("shelved node", True, 0)):
        runs = [measure_one(speed, 0, shelved, shelved_days) for _ in range(repeats)]
        rows.append({
            "row": label, "speed": speed, "shelved_days": shelved_days, "repeats": repeats,
            "physical_limit_s": runs[0]["physical_limit_s"],
            "chain_cluster_s": physical_limit_cluster_s(shelved, shelved_days),
            "actual_wall_s": _spread([r["actual_wall_s"] for r in runs]),
            "actual_over_limit": _spread([r["actual_over_limit"] for r in runs]),
            "kube_apiserver_revisions": max(r["kube_apiserver_revisions"] for r in runs),
        })  # fmt: skip
    return rows


def measure_shelf(speed: float, days: int, repeats: int) -> dict[str, Any]:
    """`--shelved-days`: the two rows, judged on the median ratio of the shelved-days row."""
    rows = shelf_rows(speed, days, repeats)
    targets = {
        "actual_over_physical_limit": common.target(
            rows[0]["actual_over_limit"]["median"], ACTUAL_OVER_LIMIT_MAX, at_most=True
        ),
        "kube_apiserver_revisions": common.exactly(max(r["kube_apiserver_revisions"] for r in rows), 1),
    }
    return common.document(f"{NAME}_shelved_{days}days", {"rows": rows}, targets)


def _shelf_report(payload: dict[str, Any]) -> str:
    lines = [f"{'row':>20} {'speed':>6} {'chain cl s':>10} {'limit s':>8}  {'actual s min/med/max':>22}  "
             f"{'actual/limit min/med/max':>26}  revisions"]  # fmt: skip
    for row in payload["results"]["rows"]:
        wall, ratio = row["actual_wall_s"], row["actual_over_limit"]
        lines.append(
            f"{row['row']:>20} {row['speed']:>6g} {row['chain_cluster_s']:>10.0f} {row['physical_limit_s']:>8.2f}  "
            f"{wall['min']:>6.2f} {wall['median']:>6.2f} {wall['max']:>6.2f}        "
            f"{ratio['min']:>7.3f} {ratio['median']:>7.3f} {ratio['max']:>7.3f}     {row['kube_apiserver_revisions']}"
        )
    return "\n".join(lines + common.verdict_lines(payload))


def measure(speeds: Sequence[float] = (20.0, 5.0), routes: int = 0, shelved: bool = False) -> dict[str, Any]:
    """A relocation per speed, in one run; targets judged at the slowest (most realistic) speed."""
    runs = [measure_one(speed, routes, shelved) for speed in speeds]
    realistic = min(runs, key=lambda r: r["speed"])
    worst_revisions = max(run["kube_apiserver_revisions"] for run in runs)
    targets = {
        "actual_over_physical_limit": common.target(
            realistic["actual_over_limit"], ACTUAL_OVER_LIMIT_MAX, at_most=True
        ),
        "kube_apiserver_revisions": common.exactly(worst_revisions, REVISIONS_EXPECTED),
    }
    results = {"user_routes": routes, "shelved_node": shelved, "judged_at_speed": realistic["speed"], "runs": runs}
    return common.document(result_name(routes), results, targets)


def _report(payload: dict[str, Any]) -> str:
    lines = [
        f"{'speed':>6} {'routes':>7} {'actual s':>9} {'limit s':>8} {'actual/limit':>13} {'critical s':>11}  "
        "critical chain; rollouts per operator"
    ]
    routes = payload["results"]["user_routes"]
    for run in payload["results"]["runs"]:
        counted = ", ".join(f"{op} {n}" for op, n in sorted(run["rollouts_per_operator"].items()))
        lines.append(
            f"{run['speed']:>6g} {routes:>7} {run['actual_wall_s']:>9.2f} {run['physical_limit_s']:>8.2f} "
            f"{run['actual_over_limit']:>13.3f} {run['critical_s']:>11.2f}  "
            f"{timeline.chain_text(run['critical_chain'])}; {counted}"
        )
    for run in payload["results"]["runs"]:
        lines.append(
            f"speed {run['speed']:g}: with the oauth host on the chain (the agent's design) the limit is "
            f"{run['design_limit_s']:.2f} s, actual / that {run['actual_over_design_limit']:.3f}; the run along "
            "its chain: " + ", ".join(f"{part} {seconds:.2f} s" for part, seconds in run["chain"].items())
        )
    lines += common.verdict_lines(payload)
    return "\n".join(lines)


def write_svg(payload: dict[str, Any], path: Path) -> None:
    run = min(payload["results"]["runs"], key=lambda r: r["speed"])
    title = (
        f"snoreloc relocation on the simulator at speed {run['speed']:g} "
        f"(wall seconds; x{run['speed']:g} for cluster seconds)"
    )
    path.write_text(timeline.svg(run, title))


def result_name(routes: int) -> str:
    """`relocation`, or `relocation_<N>routes` for a run with extra user routes (its own result file)."""
    return NAME if routes == 0 else f"{NAME}_{routes}routes"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A full relocation against the physical limit; rollouts per operator.")
    parser.add_argument("--speeds", default="20,5", help="simulator speeds, comma-separated (default 20,5)")
    parser.add_argument("--routes", type=int, default=0, help="extra user routes in the seed (default 0)")
    parser.add_argument("--shelved-node", action="store_true", help="the node's CSRs must be approved first")
    parser.add_argument(
        "--shelved-days", type=int, default=0, metavar="N",
        help="a node sealed N days before (issue 37), beside the --shelved-node row, at the slowest speed",
    )  # fmt: skip
    parser.add_argument("--repeats", type=int, default=3, help="relocations per --shelved-days row (default 3)")
    parser.add_argument("--svg", type=Path, default=DEFAULT_SVG, help="timeline chart to write (default docs/)")
    parser.add_argument("--name", default=None, help="result name (default relocation[_<N>routes])")
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.shelved_days:
        speed = min(float(s) for s in args.speeds.split(","))
        shelf_payload = measure_shelf(speed, args.shelved_days, max(1, args.repeats))
        path = common.write_result(args.name or shelf_payload["benchmark"], shelf_payload, args.output_dir)
        print(_shelf_report(shelf_payload))
        print(f"wrote {path}")
        return 0
    payload = measure([float(s) for s in args.speeds.split(",")], args.routes, args.shelved_node)
    name = args.name or result_name(args.routes)
    payload["benchmark"] = name
    path = common.write_result(name, payload, args.output_dir)
    write_svg(payload, args.svg)
    print(_report(payload))
    print(timeline.gantt(min(payload["results"]["runs"], key=lambda r: r["speed"])))
    print(f"wrote {path} and {args.svg}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Settle: wait, bounded, until the cluster has really taken our changes, not merely looks calm.

A ClusterOperator that reports Available/not Progressing/not Degraded a second after our write may simply not
have noticed it yet. So for every operator our writes set in motion (the journal keeps them with the time of
our write) we also require a condition transition at or after that time; the MachineConfigPool `master` must
be Updated likewise. Finally the endpoints are dialled with SNI: `api.<domain>` must present our API
certificate and the console host our ingress certificate. The kube-apiserver rollout takes the API away while
we wait; the probes ride that out (bounded by the settle timeout and the run's deadline). Settle also requires
the Node Ready (approving its CSRs as the kubelet asks again), and waits only for the operators the relocation
needs (`health`): any other unhealthy one is a warning, so an unrelated degraded operator cannot hold the site.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc.pki import certs
from snoreloc.siteconfig.settings import timeouts as timeouts_setting
from snoreloc.steps import base, context
from snoreloc.steps.openshift import health, node_csrs, rollouts, serving

MCP_MASTER_REF = kube.Ref(kube.MCPS, "master")


def operator_waits(ctx: context.Context, pending: Mapping[str, datetime]) -> list[str]:
    """What still keeps the required operators from being settled (empty: all settled), each with the operator's
    own condition message. Operators the relocation does not need are not waited for (see `health`)."""
    needed = health.required(ctx.site, pending)
    waiting = [f"ClusterOperator {item}" for item in health.survey(ctx, pending).blocking]
    for co in ctx.kube.list(kube.CLUSTEROPERATORS):
        name = co["metadata"]["name"]
        rollouts.condition(ctx, name, co, "Progressing")
        healthy = not base.operator_problems(co)
        if name in pending and name in needed and healthy and not rollouts.rolled_out(co, pending[name]):
            waiting.append(f"ClusterOperator {name}: no transition since our change")
    return waiting


def pool_waits(ctx: context.Context, pending: Mapping[str, datetime]) -> list[str]:
    pool = ctx.kube.get(MCP_MASTER_REF)
    rollouts.condition(ctx, base.MCP_MASTER, pool, "Updating")
    conds = base.conditions(pool)
    updated = conds.get("Updated", {})
    if updated.get("status") != "True" or conds.get("Degraded", {}).get("status") == "True":
        return [f"MachineConfigPool master: Updated={updated.get('status', 'unknown')}"]
    changed = pending.get(base.MCP_MASTER)
    moved = base.parse_time(updated.get("lastTransitionTime"))
    if changed is not None and not rollouts.moved_since(moved, changed):
        return ["MachineConfigPool master: no update since our change"]
    return []


def _leaf(pem: bytes) -> Any:
    return certs.parse_chain(pem)[0]


def served_waits(ctx: context.Context) -> list[str]:
    """Endpoints not (yet) presenting our certificates."""
    checks = (
        ("API", ctx.api_endpoint, ctx.site.api_host, serving.API_SECRET_CONFIG),
        ("console", ctx.ingress_endpoint, ctx.site.console_host, serving.INGRESS_SECRET_CONFIG),
    )
    waiting = []
    for what, address, sni, ref in checks:
        pair = serving.tls_pair(ctx.kube.find(ref))
        if pair is None:
            waiting.append(f"{what}: secret {ref} missing")
            continue
        try:
            served = ctx.dial(address, sni)
        except errors.TemporaryError as exc:
            waiting.append(f"{what}: {exc.message}")
            continue
        if _leaf(served) != _leaf(pair[0]):
            waiting.append(f"{what}: {address[0]}:{address[1]} does not yet present our certificate for {sni}")
    return waiting


def all_waits(ctx: context.Context, seen: node_csrs.Approvals | None = None, *, approve: bool = True) -> list[str]:
    """Everything settle still waits for, the node first (its CSRs approved on the way, unless `approve` is off)."""
    pending = ctx.rollouts.pending()
    node = node_csrs.tend(ctx, seen, approve=approve)
    return node + operator_waits(ctx, pending) + pool_waits(ctx, pending) + served_waits(ctx)


class Settle:
    description = "waiting for the cluster to settle"

    def __init__(self, name: str = "settle") -> None:
        self.name = name

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {"domain": ctx.site.domain}

    def plan(self, ctx: context.Context) -> base.Plan:
        pending = ctx.rollouts.pending()
        notes = [f"wait for {name} to roll out (changed {when.isoformat()})" for name, when in pending.items()]
        notes.append(f"wait for {ctx.site.api_host} and {ctx.site.console_host} to serve the new certificates")
        return base.Plan(self.name, notes=tuple(notes))

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
        pending = list(ctx.rollouts.pending())
        last: list[str] = []
        seen = node_csrs.Approvals()

        def probe() -> bool | None:
            last[:] = all_waits(ctx, seen)
            return True if not last else None

        try:
            base.wait_for(
                ctx, self.name, "the cluster to settle", float(ctx.site.get(timeouts_setting.SETTING).settle), probe
            )
        except errors.WaitTimeout as exc:
            raise errors.WaitTimeout(
                self.name, "the cluster to settle (still waiting for: " + "; ".join(last) + ")", exc.seconds
            ) from exc
        ctx.rollouts.settled(pending)
        others = health.survey(ctx, pending).warnings
        details = {"settled": pending, "warnings": list(others), "csrs_approved": seen.approved}
        return base.StepOutcome(warnings=tuple(health.warning_text(others)), details=details)

    def verify(self, ctx: context.Context) -> None:
        waits = all_waits(ctx, approve=False)
        if waits:
            raise errors.TemporaryError(f"{self.name}: not settled: {'; '.join(waits)}")

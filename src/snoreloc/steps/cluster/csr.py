"""The csr step: approve this node's pending certificate requests first, and wait for it to be Ready.

Until the kubelet's CSRs are approved the node is NotReady and every rollout we would cause waits, so this step
runs first, right after the API answers; the rules, and the approving the later waits keep doing, are in
`steps.openshift.node_csrs`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from snoreloc import errors
from snoreloc.siteconfig.settings import kubelet as kubelet_setting
from snoreloc.siteconfig.settings import timeouts as timeouts_setting
from snoreloc.steps import base, context
from snoreloc.steps.openshift import node_csrs


class Csr:
    name = "csr"
    description = "approving this node's pending certificate requests and waiting for it to be Ready"

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {
            "node": ctx.settings.node_name or ctx.site.get(kubelet_setting.SETTING).node_name,
            "approve": ctx.site.get(kubelet_setting.SETTING).approve_csrs,
        }

    def plan(self, ctx: context.Context) -> base.Plan:
        node = node_csrs.this_node(ctx)
        notes = [problem for problem in [node_csrs.not_ready(node_csrs.node_object(ctx))] if problem]
        if not ctx.site.get(kubelet_setting.SETTING).approve_csrs:
            return base.Plan(self.name, notes=("CSR approval disabled in the site-config", *notes))
        names = [c["metadata"]["name"] for c in node_csrs.approvable(ctx, node)]
        notes += [f"approve CSR {n} of node {node.name}" for n in names]
        return base.Plan(self.name, notes=tuple(notes))

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
        node = node_csrs.this_node(ctx)
        seen = node_csrs.Approvals()
        started = ctx.clock.monotonic()

        def settled() -> bool | None:
            waiting = node_csrs.tend(ctx, seen)
            if waiting:
                raise errors.TemporaryError("; ".join(waiting))
            if ctx.site.get(kubelet_setting.SETTING).approve_csrs and node_csrs.approvable(ctx, node):
                return None
            return True if ctx.clock.monotonic() - started >= ctx.settings.csr_wait else None

        what = f"node {node.name} to be Ready with its certificate requests approved"
        base.wait_for(ctx, self.name, what, float(ctx.site.get(timeouts_setting.SETTING).settle), settled)
        return base.StepOutcome(
            changed=tuple(f"approve CSR {n}" for n in seen.approved),
            details={"approved": seen.approved, "decided_elsewhere": seen.decided_elsewhere},
        )

    def verify(self, ctx: context.Context) -> None:
        problem = node_csrs.not_ready(node_csrs.node_object(ctx))
        if problem:
            raise errors.TemporaryError(f"csr: {problem}")
        if ctx.site.get(kubelet_setting.SETTING).approve_csrs and node_csrs.approvable(ctx, node_csrs.this_node(ctx)):
            raise errors.TemporaryError("csr: this node still has pending certificate requests")

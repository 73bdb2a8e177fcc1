"""Step `api`: wait, bounded by the site's `timeouts.api`, until the API answers on the node-local kubeconfig."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from snoreloc import errors
from snoreloc.host import kubelet
from snoreloc.siteconfig.settings import timeouts as timeouts_setting
from snoreloc.steps import base, context


class WaitForApi:
    """The API behind `https://localhost:6443` answers: from here on the cluster steps can run."""

    name = "api"
    description = "waiting for the API on the node-local kubeconfig"

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {}

    def plan(self, ctx: context.Context) -> base.Plan:
        return base.Plan(self.name, notes=(f"wait up to {ctx.site.get(timeouts_setting.SETTING).api}s for the API",))

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
        waited = kubelet.wait_for_api(
            ctx.kube.ready,
            ctx.clock,
            budget=float(ctx.site.get(timeouts_setting.SETTING).api),
            poll=ctx.settings.poll_interval,
        )
        return base.StepOutcome(details={"waited_seconds": round(waited, 1)})

    def verify(self, ctx: context.Context) -> None:
        if not ctx.kube.ready():
            raise errors.TemporaryError("api: the API does not answer on the node-local kubeconfig")

"""Step `network`: the site's nmstate network as an engine step, journalled and skipped on a re-run when done.

The transaction itself (apply without commit, probe, commit or roll back) lives in `snoreloc.host.network`; this
module only fits it to the step contract, with the probe window the site-config sets (`timeouts.networkProbe`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from snoreloc import errors
from snoreloc.host import network
from snoreloc.host.services import HostServices
from snoreloc.siteconfig import model
from snoreloc.steps import base, context

LOG = logging.getLogger(__name__)
# How long NetworkManager waits past the probe window before it rolls back by itself (the Policy wants >= 30 s).
ROLLBACK_MARGIN = 60


def policy_for(timeouts: model.Timeouts) -> network.Policy:
    """Probe for `timeouts.network_probe` seconds; the automatic rollback fires a margin later."""
    window = timeouts.network_probe
    return network.Policy(probe_window=float(window), rollback_timeout=window + ROLLBACK_MARGIN)


class SiteNetwork:
    """Apply the site's nmstate network: probe before commit, roll back if the probe fails."""

    name = "network"
    description = "applying the site network (rolled back if it fails its probe)"

    def __init__(self, host: HostServices) -> None:
        self.host = host

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {"network": ctx.site.network}

    def plan(self, ctx: context.Context) -> base.Plan:
        desired = ctx.site.network
        if desired is None:
            return base.Plan(self.name, notes=("the site-config has no network section: the node keeps its own",))
        if network.matches(desired, self.host.nmstate.show()):
            return base.Plan(self.name, notes=("the node's network already matches the site-config",))
        targets = ", ".join(f"{t.kind.value} {t.address}" for t in network.probe_targets(desired))
        return base.Plan(self.name, notes=(f"apply the nmstate state, then probe: {targets or 'nothing to probe'}",))

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.Outcome:
        if ctx.site.network is None:
            return base.Outcome()
        outcome = network.converge(
            self.host.nmstate,
            self.host.prober,
            ctx.clock,
            ctx.site.network,
            policy=policy_for(ctx.site.timeouts),
            progress=LOG.info,
        )
        checks = [f"{c.target.kind.value} {c.target.address}: {'ok' if c.ok else 'failed'}" for c in outcome.checks]
        return base.Outcome(details={"change": outcome.change.value, "attempts": outcome.attempts, "probes": checks})

    def verify(self, ctx: context.Context) -> None:
        desired = ctx.site.network
        if desired is not None and not network.matches(desired, self.host.nmstate.show()):
            raise errors.TemporaryError("network: the node's network does not match the site-config")

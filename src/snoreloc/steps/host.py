"""The node's own steps as engine steps: network, kubelet and the API wait, journalled like the cluster steps.

The host logic lives in `network`, `kubelet` and the adapters; this module only fits it to the step contract
(`inputs` / `plan` / `apply` / `verify`) so that one journal covers the whole relocation and a re-run skips what
is already done. The host services come in through `Host`, built by the engine (real adapters on a node, fakes in
tests and the demo).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from snoreloc import errors
from snoreloc.adapters import fs, nmstate, probe, systemd
from snoreloc.steps import base, context, kubelet, network

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Host:
    """The host systems the node steps act on."""

    fs: fs.HostFS
    nmstate: nmstate.NmstateBackend
    prober: probe.Prober
    units: systemd.Systemd


class Network:
    """Apply the site's nmstate network: probe before commit, roll back if the probe fails."""

    name = "network"
    description = "applying the site network (rolled back if it fails its probe)"

    def __init__(self, host: Host, policy: network.Policy | None = None) -> None:
        self.host = host
        self.policy = policy or network.Policy()

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
            self.host.nmstate, self.host.prober, ctx.clock, ctx.site.network, policy=self.policy, progress=LOG.info
        )
        checks = [f"{c.target.kind.value} {c.target.address}: {'ok' if c.ok else 'failed'}" for c in outcome.checks]
        return base.Outcome(details={"change": outcome.change.value, "attempts": outcome.attempts, "probes": checks})

    def verify(self, ctx: context.Context) -> None:
        desired = ctx.site.network
        if desired is not None and not network.matches(desired, self.host.nmstate.show()):
            raise errors.TemporaryError("network: the node's network does not match the site-config")


class Kubelet:
    """Start kubelet (disabled at the factory by `snoreloc seal`)."""

    name = "kubelet"
    description = "starting kubelet"

    def __init__(self, host: Host) -> None:
        self.host = host

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {}

    def plan(self, ctx: context.Context) -> base.Plan:
        running = self.host.units.is_active(kubelet.KUBELET)
        return base.Plan(self.name, notes=("kubelet already runs" if running else "start kubelet",))

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.Outcome:
        started = kubelet.start_kubelet(self.host.units, progress=LOG.info)
        return base.Outcome(details={"started": started})

    def verify(self, ctx: context.Context) -> None:
        if not self.host.units.is_active(kubelet.KUBELET):
            raise errors.TemporaryError("kubelet: the unit is not active", hint="Check `journalctl -u kubelet -b`.")


class ApiWait:
    """Wait, bounded by the site's `timeouts.api`, until the API answers on the node-local kubeconfig."""

    name = "api"
    description = "waiting for the API on the node-local kubeconfig"

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {}

    def plan(self, ctx: context.Context) -> base.Plan:
        return base.Plan(self.name, notes=(f"wait up to {ctx.site.timeouts.api}s for the API",))

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.Outcome:
        policy = kubelet.ApiWait(timeout=float(ctx.site.timeouts.api), poll=ctx.settings.poll_interval)
        waited = kubelet.wait_for_api(ctx.kube.ready, ctx.clock, policy=policy, progress=LOG.info)
        return base.Outcome(details={"waited_seconds": round(waited, 1)})

    def verify(self, ctx: context.Context) -> None:
        if not ctx.kube.ready():
            raise errors.TemporaryError("api: the API does not answer on the node-local kubeconfig")


def node_steps(host: Host) -> list[base.Step]:
    """The host steps, in the order they run before the cluster steps."""
    return [Network(host), Kubelet(host), ApiWait()]

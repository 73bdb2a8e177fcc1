"""Step `network`: the site's nmstate network as an engine step, journalled and skipped on a re-run when done.

The transaction itself (apply without commit, probe, commit or roll back) lives in `snoreloc.host.network`; this
module only fits it to the step contract, with the probe window the site-config sets (`timeouts.networkProbe`).
The desired state is the site's, plus the node's internal addresses on the interface that carries them
(`snoreloc.host.internal_ip` says why).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from snoreloc import errors
from snoreloc.host import internal_ip, network
from snoreloc.host.services import HostServices
from snoreloc.siteconfig import locate, model
from snoreloc.siteconfig.settings import network_probes
from snoreloc.siteconfig.settings import timeouts as timeouts_setting
from snoreloc.steps import base, context

LOG = logging.getLogger(__name__)
# How long NetworkManager waits past the probe window before it rolls back by itself (the Policy wants >= 30 s).
ROLLBACK_MARGIN = 60


def policy_for(timeouts: model.Timeouts) -> network.Policy:
    """Probe for `timeouts.network_probe` seconds; the automatic rollback fires a margin later."""
    window = timeouts.network_probe
    return network.Policy(probe_window=float(window), rollback_timeout=window + ROLLBACK_MARGIN)


NETWORK_BEFORE, NETWORK_AFTER = "network_before", "network_after"  # the collect-logs bundle reads them
_KEPT_INTERFACE_FIELDS = ("name", "type", "state", "mac-address", "mtu", "ipv4", "ipv6", "bridge", "controller")


def state_summary(state: Mapping[str, Any]) -> dict[str, Any]:
    """What support needs of an nmstate state (interfaces with their addresses, routes, DNS), kept in the journal:
    the whole of `show` on a real host carries every OVS and veth detail, many kilobytes that status.json would
    rewrite on every save."""
    interfaces = [
        {key: iface[key] for key in _KEPT_INTERFACE_FIELDS if key in iface}
        for iface in state.get("interfaces") or []
        if isinstance(iface, Mapping)
    ]
    return {
        "interfaces": interfaces,
        "routes": state.get("routes") or {},
        "dns-resolver": state.get("dns-resolver") or {},
    }


class SiteNetwork:
    """Apply the site's nmstate network: probe before commit, roll back if the probe fails."""

    name = "network"
    description = "applying the site network (rolled back if it fails its probe)"

    def __init__(self, host: HostServices) -> None:
        self.host = host

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {"network": ctx.site.network}

    def desired(self, ctx: context.Context) -> dict[str, Any] | None:
        """The site's network with the internal addresses kept; None when the site-config has no network."""
        return self.desired_for(ctx.site)

    def desired_for(self, site: model.SiteConfig) -> dict[str, Any] | None:
        """As `desired`; ConfigError (nothing touched) when a site subnet overlaps an internal address."""
        if site.network is None:
            return None
        internal = internal_ip.read(self.host.fs)
        overlaps = internal_ip.located_conflicts(site.network, internal)
        if overlaps:
            raise errors.ConfigError(
                "network: " + "; ".join(message for _path, message in overlaps),
                problems=locate.network_problems(site.source_path, overlaps),
                hint="Choose site addresses outside the internal subnet the factory MachineConfig set "
                f"({internal_ip.CONFIG_PATH}).",
            )
        return internal_ip.with_internal(site.network, internal)

    def plan(self, ctx: context.Context) -> base.Plan:
        return self.plan_for(ctx.site)

    def plan_for(self, site: model.SiteConfig) -> base.Plan:
        """The plan for `site`, with what would change per interface (needs no cluster)."""
        desired = self.desired_for(site)
        if desired is None:
            return base.Plan(self.name, notes=("the site-config has no network section: the node keeps its own",))
        current = self.host.nmstate.show()
        if network.matches(desired, current):
            return base.Plan(self.name, notes=("the node's network already matches the site-config",))
        probes = site.get(network_probes.SETTING)
        targets = ", ".join(str(t) for t in network.probe_targets(desired, probes))
        if not probes.enabled:
            targets = f"nothing ({network_probes.NONE_SAID})"
        probe_note = f"apply the nmstate state, then probe: {targets or 'what DHCP gives'}"
        return base.Plan(self.name, notes=(*network.describe(desired, current), probe_note))

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
        desired = self.desired(ctx)
        if desired is None:
            return base.StepOutcome()
        before = state_summary(self.host.nmstate.show())
        outcome = network.converge(
            self.host.nmstate,
            self.host.prober,
            ctx.clock,
            desired,
            probes=ctx.site.get(network_probes.SETTING),
            policy=policy_for(ctx.site.get(timeouts_setting.SETTING)),
            progress=LOG.info,
        )
        checks = [f"{c.target}: {'ok' if c.ok else 'failed'} ({c.detail})" for c in outcome.checks]
        details: dict[str, Any] = {"change": outcome.change.value, "attempts": outcome.attempts, "probes": checks}
        details |= {NETWORK_BEFORE: before, NETWORK_AFTER: state_summary(self.host.nmstate.show())}
        names = ", ".join(str(i.get("name")) for i in desired.get("interfaces") or []) or "routes and DNS only"
        applied = outcome.change is network.Convergence.APPLIED
        changed = (f"applied and committed the site network ({names})",) if applied else ()
        return base.StepOutcome(changed=changed, details=details)

    def verify(self, ctx: context.Context) -> None:
        desired = self.desired(ctx)
        if desired is not None and not network.matches(desired, self.host.nmstate.show()):
            raise errors.TemporaryError("network: the node's network does not match the site-config")

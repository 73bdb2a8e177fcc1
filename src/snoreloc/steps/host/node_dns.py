"""Step `node-dns`: the node answers for its new names (api, api-int, *.apps) itself, before kubelet starts.

With `spec.dns.nodeLocal` (the default) on a node that has the SNO dnsmasq configuration, the step sets the
overrides the configuration's script reads (cluster name and base domain split from the site's domain, the node's
internal address), keeps the factory names answered, restarts `dnsmasq.service` (no reboot) and checks that the
node resolves `api`, `api-int` and a name under `apps` of the new domain, and the factory `api-int`, to itself;
`snoreloc.host.node_dns` says why this is enough and keeps the originals for `rollback`. Before the switch it asks
the same resolver for the new names, which dnsmasq then still forwards to the site's servers: if the site DNS
lacks them, the step warns who can reach the cluster by name and which records the site DNS needs. Off
(`nodeLocal: false`), or on a node without the configuration, the step changes nothing and preflight requires the
site's DNS to resolve the names; except that when an earlier run of ours made the node answer (its originals are
kept), turning it off puts the factory's files back and restarts dnsmasq, as `rollback` does, so the node stops
answering for a domain the site-config no longer asks for. Either switch away from a site's domain keeps that
domain answered (the earlier-sites file) while the cluster's routes are still on it: `node-dns-prune`, right after
the cluster's first settle, lets it go once they have moved (issue 35).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from snoreloc import errors
from snoreloc.host import node_dns
from snoreloc.host.services import HostServices
from snoreloc.siteconfig import model
from snoreloc.siteconfig.settings import dns as dns_setting
from snoreloc.steps import base, context
from snoreloc.steps.openshift import dns_names

LOG = logging.getLogger(__name__)
RESOLVE_BUDGET = 60.0  # dnsmasq answers within a second of its restart; a minute covers a slow unit start


class NodeDns:
    """Make the node-local dnsmasq answer the site's domain with the node's internal address."""

    name = "node-dns"
    setting = dns_setting.SETTING  # the setting this step applies
    description = "making the node answer for its new names (node-local DNS)"

    def __init__(self, host: HostServices, state_dir: Path) -> None:
        self.host = host
        self.state_dir = state_dir

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {
            "domain": ctx.site.domain,
            "node_local": ctx.site.get(dns_setting.SETTING).node_local,
            "ip": node_dns.node_ip(self.host.fs),
        }

    def _values(self, site: model.SiteConfig) -> dict[str, str]:
        return node_dns.wanted(site.domain, node_dns.node_ip(self.host.fs))

    def _off_note(self, site: model.SiteConfig) -> str | None:
        if not site.get(dns_setting.SETTING).node_local:
            return "off (spec.dns.nodeLocal: false): the site DNS must resolve api and *.apps of the new domain"
        if not node_dns.configured(self.host.fs):
            return (
                f"this node has no SNO dnsmasq configuration ({node_dns.SCRIPT}): the site DNS must resolve api and "
                "*.apps of the new domain (`snoreloc seal` said so at the factory)"
            )
        return None

    def plan(self, ctx: context.Context) -> base.Plan:
        return self.plan_for(ctx.site)

    def check_host(self, site: model.SiteConfig) -> None:
        """The overrides file judged before any step of the run (`base.ChecksHostFirst`): planning reads it as the
        step will, and refuses what bash would read otherwise (69) or a link (77)."""
        self.plan_for(site)

    def plan_for(self, site: model.SiteConfig) -> base.Plan:
        """What the step would do for `site` (needs no cluster)."""
        off = self._off_note(site)
        if off is not None:
            return base.Plan(self.name, notes=(off, *self._undo_note()))
        values = self._values(site)
        if node_dns.up_to_date(self.host.fs, values):
            return base.Plan(self.name, notes=(f"on: {node_dns.OVERRIDES} already names {site.domain}",))
        settings = ", ".join(f"{key}={value}" for key, value in values.items())
        earlier = node_dns.still_answered(self.host.fs, values)
        keeps = (
            (f"keep answering {', '.join(earlier)} (an earlier site's) until the cluster is off it (node-dns-prune)",)
            if earlier
            else ()
        )
        return base.Plan(
            self.name,
            notes=(
                f"on: set {settings} in {node_dns.OVERRIDES} (the original is kept for rollback)",
                *keeps,
                f"restart {node_dns.UNIT} (no reboot), then check that {', '.join(node_dns.names(site.domain))} "
                f"resolve to {values.get(node_dns.IP, 'the node')}",
            ),
        )

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
        off = self._off_note(ctx.site)
        if off is not None:
            undone = self._undo()
            put_back = (f"put back the factory's {node_dns.OVERRIDES}; restarted {node_dns.UNIT}",) if undone else ()
            return base.StepOutcome(changed=put_back, details={"node_local": False, "why": off, **undone})
        values = self._values(ctx.site)
        warnings: tuple[str, ...] = ()
        changed: tuple[str, ...] = ()
        if not node_dns.up_to_date(self.host.fs, values):
            missing = [n for n in (ctx.site.api_host, f"*.{ctx.site.apps_domain}") if not ctx.resolve(_probe(n))]
            warnings = (dns_names.clients_warning(ctx.site, missing),) if missing else ()
            node_dns.write(self.host.fs, self.state_dir, values)
            LOG.info("node-dns: wrote %s; restarting %s", node_dns.OVERRIDES, node_dns.UNIT)
            self.host.units.restart(node_dns.UNIT)
            changed = (f"set {ctx.site.domain} in {node_dns.OVERRIDES}; restarted {node_dns.UNIT}",)
        answered = self._wait_resolved(ctx, values.get(node_dns.IP))
        details = {"node_local": True, "overrides": values, "answers": answered}
        return base.StepOutcome(changed=changed, warnings=warnings, details=details)

    def _undo_note(self) -> tuple[str, ...]:
        if not node_dns.backed_up(self.state_dir):
            return ()
        try:
            found = node_dns.parse(node_dns.read(self.host.fs) or "")
        except node_dns.Unreadable:  # edited since by hand: the backup goes back over it all the same
            found = {}
        answering = ".".join(found.get(k, "") for k in node_dns.SPLIT)
        return (
            f"an earlier run made the node answer for {answering.strip('.') or 'a domain of its own'}: the factory's "
            f"{node_dns.OVERRIDES} is put back and {node_dns.UNIT} restarts (as rollback does; no reboot); its "
            "names stay answered until the cluster is off them (node-dns-prune)",
        )

    def _undo(self) -> dict[str, Any]:
        """Turned off after an earlier run turned it on: the factory's files back, dnsmasq restarted."""
        restored = node_dns.restore(self.host.fs, self.host.units, self.state_dir, keep_used=True)
        if restored is None:
            return {}
        LOG.info("node-dns: off now; put the factory's %s back and restarted %s", node_dns.OVERRIDES, node_dns.UNIT)
        return {"restored": "the factory's file" if restored.existed else "no file (the factory had none)"}

    def _wait_resolved(self, ctx: context.Context, ip: str | None) -> dict[str, list[str]]:
        """The new names, and the factory's api-int the kubelet uses, resolve to the node."""
        kept = tuple(name for name in node_dns.kept_domains(self.host.fs) if name.startswith("api-int."))
        wanted = node_dns.names(ctx.site.domain) + kept

        def resolved() -> dict[str, list[str]] | None:
            found = {name: ctx.resolve(name) for name in wanted}
            wrong = [n for n, got in found.items() if not got or (ip is not None and ip not in got)]
            if wrong:
                raise errors.TemporaryError(f"{', '.join(wrong)} do not resolve to {ip or 'the node'} yet")
            return found

        what = f"{', '.join(wanted)} to resolve to {ip or 'the node'}"
        return base.wait_for(ctx, self.name, what, RESOLVE_BUDGET, resolved, poll=1.0)

    def verify(self, ctx: context.Context) -> None:
        if self._off_note(ctx.site) is not None:
            if node_dns.backed_up(self.state_dir):
                raise errors.TemporaryError(f"node-dns: off, but the factory's {node_dns.OVERRIDES} is not back yet")
            return
        if not node_dns.up_to_date(self.host.fs, self._values(ctx.site)):
            raise errors.TemporaryError(f"node-dns: {node_dns.OVERRIDES} does not name {ctx.site.domain}")
        ip = self._values(ctx.site).get(node_dns.IP)
        for name in node_dns.names(ctx.site.domain):
            got = ctx.resolve(name)
            if not got or (ip is not None and ip not in got):
                raise errors.TemporaryError(f"node-dns: {name} does not resolve to {ip or 'the node'}")

    def rollback_host(self) -> list[str]:
        """`rollback`: put back the overrides the factory had (or remove ours); what was done, one line."""
        restored = node_dns.restore(self.host.fs, self.host.units, self.state_dir)
        if restored is None:
            return []
        what = "restored" if restored.existed else "removed (the factory had none)"
        return [f"{node_dns.OVERRIDES} {what}; {node_dns.UNIT} restarted"]


def _probe(name: str) -> str:
    """A concrete name to look up for a record (a wildcard is asked through a name under it)."""
    return name.replace("*", node_dns.APPS_PROBE, 1)

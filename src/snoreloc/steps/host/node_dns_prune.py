"""Step `node-dns-prune`: the node stops answering an earlier site's names once the cluster no longer uses them.

A second relocation (site A, then a corrected stick for B) switches the node's dnsmasq to B at the `node-dns` step,
before the cluster steps move the routes off A; until they have, the cluster still looks A's route names up (the
authentication and console operators check their routes by name), and at a site without DNS records only the
node answers them. So `node-dns` keeps A answered (`snoreloc.host.node_dns`, the earlier-sites file) and this
step, right after the cluster has settled on its new names (`engine.order.settled_host_steps`), asks the cluster
which of those domains anything is still on (`steps.openshift.site_domains.in_use`: the Ingress's appsDomain, a
route's host) and drops the others, restarting dnsmasq once. A domain still in use (a route kept on its host by
`routes.ownCertificates: keep-host`) stays answered and is named; a later run drops it once it is free. A run cut
off before this step leaves the earlier names answered, which is harmless (they point at this node) and is what
the cluster needs until its routes move; the next run finishes the job. `rollback` removes the file with the rest
of node-local DNS.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from snoreloc import errors
from snoreloc.host import node_dns
from snoreloc.host.services import HostServices
from snoreloc.steps import base, context
from snoreloc.steps.openshift import site_domains

LOG = logging.getLogger(__name__)


class NodeDnsPrune:
    """Drop the earlier sites' names the node answers that nothing in the cluster is on any more."""

    name = "node-dns-prune"
    description = "the node stops answering earlier sites' names the cluster no longer uses"

    def __init__(self, host: HostServices, state_dir: Path) -> None:
        self.host = host
        self.state_dir = state_dir

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {"earlier": list(node_dns.earlier_domains(self.host.fs))}

    def _survey(self, ctx: context.Context) -> tuple[dict[str, str], tuple[str, ...]]:
        """(the earlier domains still in use, with what is on each; those free)."""
        earlier = node_dns.earlier_domains(self.host.fs)
        used = site_domains.in_use(ctx, earlier) if earlier else {}
        return used, tuple(d for d in earlier if d not in used)

    def plan(self, ctx: context.Context) -> base.Plan:
        used, free = self._survey(ctx)
        notes = [f"keep answering {domain}: {why}" for domain, why in used.items()]
        if free:
            notes.append(
                f"stop answering {', '.join(free)} (nothing in the cluster is on it any more): drop its lines from "
                f"{node_dns.EARLIER} and restart {node_dns.UNIT} (no reboot)"
            )
        return base.Plan(self.name, notes=tuple(notes) or ("the node answers no earlier site's names",))

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
        used, free = self._survey(ctx)
        dropped = node_dns.drop_earlier(self.host.fs, self.state_dir, free) if free else []
        if dropped:
            LOG.info("node-dns-prune: the node no longer answers %s; restarting %s", ", ".join(free), node_dns.UNIT)
            self.host.units.restart(node_dns.UNIT)
        changed = (f"{node_dns.EARLIER}: dropped {', '.join(dropped)}; {node_dns.UNIT} restarted",) if dropped else ()
        return base.StepOutcome(changed=changed, details={"dropped": list(free) if dropped else [], "kept": used})

    def verify(self, ctx: context.Context) -> None:
        _used, free = self._survey(ctx)
        if free:
            raise errors.TemporaryError(f"node-dns-prune: the node still answers {', '.join(free)}, which is free")

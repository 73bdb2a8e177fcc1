"""One kube-apiserver revision per relocation: the new OAuth metadata must be out before the APIServer change.

The kube-apiserver operator makes a revision whenever one of its revisioned inputs differs from the latest
revision, and `oauth-metadata` is one of them (cluster-kube-apiserver-operator `RevisionConfigMaps`). Moving the
oauth route (componentRoute `openshift-authentication/oauth-openshift`) changes that metadata about half a minute
later, once the authentication operator has rolled it out. Written back to back with the APIServer change, the
metadata lands during that revision and costs a second one (4-6 minutes on SNO, with another API outage). So the
domain step writes everything else first, waits until the Ingress status shows the new oauth host (the operator
publishes it together with the metadata), and writes the APIServer change right then, so both inputs reach the
operator within one revision. The wait is bounded by `operator_regen_timeout`; if it runs out the APIServer change
is written anyway and the run warns that a second revision may follow. This wait lies on the run's critical chain
(the revision starts when it ends), so it looks every `OAUTH_POLL` seconds, one GET each, not at the settle's pace.
"""

from __future__ import annotations

import dataclasses
import logging

from snoreloc import errors
from snoreloc.steps import base, context

LOG = logging.getLogger(__name__)

OAUTH_ROUTE = ("openshift-authentication", "oauth-openshift")
OAUTH_POLL = 1.0  # seconds between looks at the Ingress status while the oauth host is being published


def published_oauth_hosts(ctx: context.Context) -> list[str]:
    """The oauth route's current hosts, as the authentication operator publishes them in Ingress status."""
    status = ctx.kube.get(base.INGRESS_CLUSTER).get("status") or {}
    for entry in status.get("componentRoutes") or []:
        if (entry.get("namespace"), entry.get("name")) == OAUTH_ROUTE:
            return [str(h) for h in entry.get("currentHostnames") or []]
    return []


def _moves_oauth(ctx: context.Context) -> bool:
    spec = ctx.kube.get(base.INGRESS_CLUSTER).get("spec") or {}
    wanted = [
        e.get("hostname")
        for e in spec.get("componentRoutes") or []
        if (e.get("namespace"), e.get("name")) == OAUTH_ROUTE
    ]
    return bool(wanted) and wanted[0] not in published_oauth_hosts(ctx)


def wait_for_oauth_metadata(ctx: context.Context, step: str) -> list[str]:
    """Wait until the oauth host we asked for is published; warnings when it was not in time."""
    if not _moves_oauth(ctx):
        return []
    what = f"the authentication operator to publish {ctx.site.oauth_host} (so one kube-apiserver revision takes both)"

    def published() -> bool | None:
        return True if ctx.site.oauth_host in published_oauth_hosts(ctx) else None

    try:
        base.wait_for(ctx, step, what, ctx.settings.operator_regen_timeout, published, poll=OAUTH_POLL)
    except errors.WaitTimeout as exc:
        LOG.warning("%s: %s", step, exc.message)
        return [f"{ctx.site.oauth_host} was not published in time; the kube-apiserver may roll out a second time"]
    return []


def apply(ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
    """`base.apply_changes`, with the APIServer change held until the OAuth metadata is out."""
    last = tuple(c for c in plan.changes if c.ref == base.APISERVER_CLUSTER)
    first = tuple(c for c in plan.changes if c.ref != base.APISERVER_CLUSTER)
    before = base.apply_changes(ctx, dataclasses.replace(plan, changes=first))
    if not last:
        return before
    warnings = wait_for_oauth_metadata(ctx, plan.step)
    after = base.apply_changes(ctx, dataclasses.replace(plan, changes=last))
    return base.StepOutcome(
        changed=before.changed + after.changed,
        rollouts={**before.rollouts, **after.rollouts},
        warnings=before.warnings + tuple(warnings) + after.warnings,
    )

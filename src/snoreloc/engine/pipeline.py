"""The cluster relocation as one call: the cluster steps (in `engine.order`'s order), the lock, the journal, backups
and the report.

The CLI parses arguments into a `Request` and calls `execute`; tests and the demo do the same without a
process boundary. Everything stateful lives under `Paths`, so a temporary root makes a run self-contained.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.engine import backups, journal, lock, order, paths, report, restore, runner, view
from snoreloc.siteconfig import model
from snoreloc.siteconfig.settings import timeouts as timeouts_setting
from snoreloc.steps import base, context
from snoreloc.steps.openshift import mirrors

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Request:
    site: model.SiteConfig
    paths: paths.Paths
    options: runner.Options = field(default_factory=runner.Options)
    settings: context.Settings = field(default_factory=context.Settings)
    dial: context.Dialer = field(default=kube.dial_tls)
    resolve: context.Resolver = field(default=kube.resolve)


def _context(request: Request, client: kube.Client, clock: clock_mod.Clock, jour: journal.Journal) -> context.Context:
    return context.Context(
        site=request.site,
        kube=client,
        clock=clock,
        backups=backups.Store(request.paths.backups, clock).usable(),
        rollouts=jour,
        settings=request.settings,
        dial=request.dial,
        resolve=request.resolve,
        deadline=clock.monotonic() + request.site.get(timeouts_setting.SETTING).total,
    )


def admit(ctx: context.Context) -> None:
    """What this cluster cannot express of the site-config, refused before the first cluster step writes (the
    runner journals it as the run's error): tag mirrors on a cluster without ImageTagMirrorSet."""
    mirrors.require_mirror_support(ctx.site, base.cluster_version(ctx))


def admission() -> runner.Admission:
    """`admit`, before the first cluster step, named as the site-config's check (`view.SITE_CONFIG_STEP`)."""
    names = frozenset(step.name for step in order.cluster_steps())
    return runner.Admission(admit, names, view.SITE_CONFIG_STEP)


def execute(
    request: Request,
    client: kube.Client,
    clock: clock_mod.Clock,
    *,
    steps: list[base.Step] | None = None,
    progress: runner.Progress | None = None,
) -> runner.Result:
    """Run (or with dry_run, plan) the cluster steps. Holds the run lock unless dry-running."""
    steps = steps or order.cluster_steps()
    if request.options.dry_run:
        jour = journal.Journal(request.paths.status, clock)
        ctx = _context(request, client, clock, jour)
        return runner.Runner(steps, ctx, jour, request.options, progress, admission=admission()).run()
    request.paths.ensure()
    with lock.RunLock(request.paths.lock):
        jour = journal.Journal(request.paths.status, clock)
        ctx = _context(request, client, clock, jour)
        try:
            return runner.Runner(steps, ctx, jour, request.options, progress, admission=admission()).run()
        finally:
            built = report.build(request.site, jour.doc, ctx.warnings, speed=getattr(clock, "speed", 1.0))
            report.write(request.paths.report, built)


def rollback(
    paths_: paths.Paths,
    client: kube.Client,
    clock: clock_mod.Clock,
    *,
    site: model.SiteConfig | None = None,
    settings: context.Settings | None = None,
    announce: restore.Announce | None = None,
) -> restore.Outcome:
    """Restore every original we saved, delete what we created, wait until the cluster has settled again, and
    journal it (`engine.restore`). `site` gives the settle budget, the node and the operators to require: the
    site-config the relocation used, when it is at hand."""
    paths_.ensure()
    with lock.RunLock(paths_.lock):
        return restore.run(
            client,
            backups.Store(paths_.backups, clock),
            journal.Journal(paths_.status, clock),
            clock,
            site=site or model.SiteConfig(name="", domain=""),
            settings=settings or context.Settings(),
            announce=announce or LOG.info,
        )

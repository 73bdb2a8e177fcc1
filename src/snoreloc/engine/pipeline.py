"""The cluster relocation as one call: the ordered cluster steps, the lock, the journal, backups and the report.

The CLI parses arguments into a `Request` and calls `execute`; tests and the demo do the same without a
process boundary. Everything stateful lives under `Paths`, so a temporary root makes a run self-contained.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass, field

from snoreloc import errors
from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.engine import backups, journal, lock, paths, report, restore, runner
from snoreloc.siteconfig import model, registry
from snoreloc.steps import base, context
from snoreloc.steps.cluster import certificates, cluster_config, csr, domain, preflight, routes, settle
from snoreloc.steps.openshift import name_clashes

LOG = logging.getLogger(__name__)


def cluster_steps() -> list[base.Step]:
    """The cluster steps in the order they run (issue 4): changes of one kind together, settles after them. The
    node's CSRs come first (issue 12): while the node is NotReady no rollout can happen; preflight and settle
    keep approving while they wait. The routes need only openshift-apiserver's rollout, so they run before the settle,
    overlapping the kube-apiserver revision (issue 14); the settle still waits for everything."""
    optional = setting_steps()
    checks = [step.preflight_check for step in optional.values() if isinstance(step, base.ChecksFirst)]
    core: list[base.Step] = [
        csr.Csr(),
        preflight.Preflight(checks=[name_clashes.preflight_check, *checks]),
        certificates.Certificates(),
        cluster_config.ClusterConfig(),
        domain.Domain(),
        routes.Routes(),
        settle.Settle("settle"),
        settle.Settle("final-settle"),
    ]
    steps = {step.name: step for step in core} | optional
    return [steps[name] for name in registry.run_order([step.name for step in core])]


def setting_steps() -> dict[str, base.Step]:
    """The steps of the site settings, by name, in registry order. Each setting names its step's module (below it in
    the layers, so by name, as cloud-init loads its `cc_<name>` modules); the module holds the step as `STEP`. Their
    places: the site's extra manifests once the cluster carries its new names; then the last writers, the proxy and
    NTP, whose changes reboot the node (only the final settle rides that out): written back to back they land in one
    pool update (the MCO renders after a 5 s pause) and one reboot."""
    found: dict[str, base.Step] = {}
    for declared in registry.steps():
        step = importlib.import_module(declared.module).STEP
        if step.name != declared.name:
            raise errors.InternalError(f"{declared.module}.STEP is {step.name!r}, the setting names {declared.name!r}")
        found[declared.name] = step
    return found


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
        deadline=clock.monotonic() + request.site.timeouts.total,
    )


def execute(
    request: Request,
    client: kube.Client,
    clock: clock_mod.Clock,
    *,
    steps: list[base.Step] | None = None,
    progress: runner.Progress | None = None,
) -> runner.Result:
    """Run (or with dry_run, plan) the cluster steps. Holds the run lock unless dry-running."""
    if request.options.dry_run:
        jour = journal.Journal(request.paths.status, clock)
        ctx = _context(request, client, clock, jour)
        return runner.Runner(steps or cluster_steps(), ctx, jour, request.options, progress).run()
    request.paths.ensure()
    with lock.RunLock(request.paths.lock):
        jour = journal.Journal(request.paths.status, clock)
        ctx = _context(request, client, clock, jour)
        try:
            return runner.Runner(steps or cluster_steps(), ctx, jour, request.options, progress).run()
        finally:
            report.write(request.paths.report, report.build(request.site, jour.doc, ctx.warnings))


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

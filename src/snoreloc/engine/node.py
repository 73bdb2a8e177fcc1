"""The whole relocation on the node, in one resumable journal: find and validate the site-config, move the node to
the site's network, start kubelet, wait for the API, run the cluster steps, then make later boots ordinary.

Discovery and validation happen before anything is touched: a bad site-config ends the run with exit 65 and no
change to the node or the cluster. From then on each step reports through one `Reporter`, which feeds the three
places people look: stderr (journald under systemd), the console banner, and systemd's STATUS= line.
"""

from __future__ import annotations

import logging
import pathlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from snoreloc import errors, logs, waits
from snoreloc.adapters import blockdev, command, console, fs, kube, nmstate, probe, systemd
from snoreloc.adapters import clock as clock_mod
from snoreloc.engine import fleetgate, hubreport, journal, order, page, paths, pipeline, report, runner, view
from snoreloc.host import kubelet
from snoreloc.host.services import HostServices
from snoreloc.siteconfig import discovery, loader, model
from snoreloc.siteconfig.settings import progress_page as progress_page_setting
from snoreloc.siteconfig.settings import timeouts as timeouts_setting
from snoreloc.steps import base, context

LOG = logging.getLogger(__name__)

ClientFactory = Callable[[], kube.Client]
Echo = Callable[[str], None]


@dataclass(frozen=True)
class NodeRequest:
    """What `snoreloc run` (without --cluster-only) was asked to do."""

    paths: paths.Paths
    site_config: str | None = None  # None: look in /etc/snoreloc, then for a labelled device
    options: runner.Options = field(default_factory=runner.Options)
    settings: context.Settings = field(default_factory=context.Settings)
    discovery: discovery.WaitPolicy = field(default_factory=discovery.WaitPolicy)
    page_host: str = "0.0.0.0"  # noqa: S104 (the progress page is for the site network)
    page_port: int | None = None  # None: the site-config's progressPage.port


@dataclass(frozen=True)
class Services:
    """What the node flow acts through: real adapters on a node, fakes in tests and the demo."""

    host: HostServices
    devices: blockdev.BlockDevices
    banner: console.Banner
    client_factory: ClientFactory
    clock: clock_mod.Clock
    echo: Echo
    pages: list[page.PageServer] = field(default_factory=list)  # the progress page, once started
    resolve: context.Resolver = kube.resolve  # the node's resolver (tests and the demo: the simulator's)


class Reporter:
    """Says where the run is on stderr, on the console banner and in systemd's STATUS=."""

    def __init__(self, banner: console.Banner, echo: Echo, total: int) -> None:
        self.banner = banner
        self.echo = echo
        self.total = total
        self.order: list[str] = []
        self.current = "site-config"
        self.page = ""  # the progress page's address, once it serves
        self.changed: Callable[[], None] = lambda: None  # the hub reporter's kick, once it runs

    def __call__(self, step: str, what: str) -> None:
        self.changed()
        if step not in self.order:
            self.order.append(step)
        self.current = step
        index = self.order.index(step) + 1
        self.echo(f"{step}: {what}")
        self.banner.progress(step, what, index=index, total=self.total, now=view.todo("running"), page=self.page)
        systemd.status(f"step {index}/{self.total} {step}: {what}")

    def failed(self, exc: errors.SnorelocError) -> None:
        now = view.todo("failed", step=self.current, exit_code=int(exc.exit_code), hint=exc.hint)
        self.banner.failed(self.current, exc.message, exc.hint, now=now, page=self.page)
        self.echo(f"{self.current}: failed: {exc.message}")
        systemd.status(f"failed at {self.current}: {exc.message}")

    def done(self, console_url: str, warnings: list[str]) -> None:
        state = "done-with-warnings" if warnings else "done"
        self.banner.done(console_url, warnings, now=view.todo(state, console_url=console_url), page=self.page)
        systemd.status(f"done: web console at {console_url}")


def find_site_config(req: NodeRequest, svc: Services, say: Reporter) -> model.SiteConfig:
    """Discover the site-config (bounded wait for a device) and load it; ConfigError (65) changes nothing."""
    say("site-config", "looking for the site-config")
    found = discovery.discover(
        svc.host.fs, svc.devices, svc.clock, explicit=req.site_config, policy=req.discovery, progress=say.echo
    )
    say("site-config", f"found {found.path} ({found.source.value}); validating")
    return loader.load(str(found.path))


@dataclass(frozen=True)
class NodePlan:
    """What `run` would do on this node before the cluster steps, and the site-config it would use."""

    site: model.SiteConfig
    site_config: str
    plans: tuple[base.Plan, ...]
    kubelet_running: bool


def plan_node(req: NodeRequest, svc: Services) -> NodePlan:
    """Where the site-config comes from, the network change per interface, whether kubelet would start.

    Nothing on the node changes, except that a medium's site-config is copied into the state directory as `run`
    would copy it. Discovery looks once and does not wait.
    """
    policy = replace(req.discovery, timeout=0)
    found = discovery.discover(svc.host.fs, svc.devices, svc.clock, explicit=req.site_config, policy=policy)
    site = loader.load(str(found.path))
    origin = found.source.value + (f" {found.device}" if found.device else "")
    running = svc.host.units.is_active(kubelet.KUBELET)
    steps = order.host_steps(svc.host, req.paths.state_dir)
    plans = (
        base.Plan("site-config", notes=(f"{found.path} ({origin}): valid",)),
        *(step.plan_for(site) for step in steps if isinstance(step, base.PlansOffline)),
        base.Plan("kubelet", notes=("kubelet already runs",) if running else ("start kubelet (seal stopped it)",)),
        *_gate_plan(req, site, found.path, svc),
    )
    return NodePlan(site, str(found.path), plans, running)


def _gate_plan(req: NodeRequest, site: model.SiteConfig, found: pathlib.Path, svc: Services) -> list[base.Plan]:
    """Whether the fleet would hold this node now (asking the hub once), or which offline policy applies."""
    target = hubreport.find_target(found)
    if target is None:
        return []
    hold = site.get(timeouts_setting.SETTING).fleet_hold
    later = [step.name for step in order.cluster_steps()]
    return [fleetgate.preview(target, req.paths.status, later, hold=hold, clock=svc.clock)]


def _gate(req: NodeRequest, site: model.SiteConfig, say: Reporter) -> fleetgate.FleetGate | None:
    """The fleet's gate when the medium names a hub (None: it names none, or this is a dry run)."""
    found = pathlib.Path(site.source_path) if site.source_path else None
    target = hubreport.find_target(found) if found is not None and not req.options.dry_run else None
    if target is None:
        return None
    # while held, systemd's start timeout must still cover what comes after: the whole run and the page's keep time
    after = site.get(timeouts_setting.SETTING).total + 60.0 * site.get(progress_page_setting.SETTING).keep_minutes
    return fleetgate.FleetGate(
        target,
        req.paths.status,
        [step.name for step in order.cluster_steps()],
        show=lambda line: say(fleetgate.STEP, line),
        keepalive=lambda: systemd.extend_timeout(after + fleetgate.POLL * 2),
    )


def check_host_files(req: NodeRequest, site: model.SiteConfig, svc: Services) -> None:
    """The node's own files the host steps will edit, judged before the first step changes anything (each
    `base.ChecksHostFirst`): an overrides file bash would read otherwise than snoreloc (69, with its line) or one
    that is a link (77) stops the run here, not after the site network is committed."""
    for step in order.host_steps(svc.host, req.paths.state_dir):
        if isinstance(step, base.ChecksHostFirst):
            step.check_host(site)


def rollback_host(paths_: paths.Paths, host: HostServices) -> list[str]:
    """Put back what the host steps changed and kept originals of (each `base.RestoresHost`); what was done."""
    steps = order.host_steps(host, paths_.state_dir)
    return [line for step in steps if isinstance(step, base.RestoresHost) for line in step.rollback_host()]


def relocate(req: NodeRequest, svc: Services) -> runner.Result:
    """Run the whole relocation; on success kubelet is enabled again and the seal marker is removed. Everything is
    also logged (debug, redacted) to the state directory's `snoreloc.log`, as `run --cluster-only` does."""
    if req.options.dry_run:
        return _relocate(req, svc)
    req.paths.ensure()
    with logs.file_log(req.paths.log):
        return _relocate(req, svc)


def _relocate(req: NodeRequest, svc: Services) -> runner.Result:
    steps = order.node_steps(svc.host, req.paths.state_dir)
    say = Reporter(svc.banner, svc.echo, total=len(steps) + 1)
    try:
        site = find_site_config(req, svc, say)
        check_host_files(req, site, svc)
    except errors.SnorelocError as exc:
        exc.extend(journal.what_changed(journal.read(req.paths.status), new_run=True))
        say.failed(exc)
        raise
    gate = _gate(req, site, say)
    if gate is not None:
        steps = order.node_steps(svc.host, req.paths.state_dir, gate)
        say.total = len(steps) + 1
    served = _serve_page(req, site, svc, say)
    hub = None if req.options.dry_run else hubreport.start(req.paths.status, svc.clock)
    say.changed = hub.kick if hub else say.changed
    try:
        result = _run_steps(req, site, steps, svc, say)
        if not req.options.dry_run:
            kubelet.finish(svc.host.units, svc.host.fs)
            say.done(report.console_url(site, journal.read(req.paths.status)), list(result.warnings))
    except errors.SnorelocError as exc:
        say.failed(exc)
        raise
    finally:
        if hub is not None:
            hub.finish()  # the last report, bounded; a hub that does not answer changes nothing here
        if served is not None:
            served.finish(60.0 * site.get(progress_page_setting.SETTING).keep_minutes)
    return result


def _serve_page(req: NodeRequest, site: model.SiteConfig, svc: Services, say: Reporter) -> page.PageServer | None:
    """Start the progress page unless the site-config turns it off; a page that cannot start is only logged."""
    if not site.get(progress_page_setting.SETTING).enabled or req.options.dry_run:
        return None
    port = site.get(progress_page_setting.SETTING).port if req.page_port is None else req.page_port
    try:
        source = page.Source(req.paths.status, site, svc.clock)
        served = page.PageServer((req.page_host, port), source).start()
    except OSError as exc:
        source.unsubscribe()
        LOG.warning("the progress page cannot listen on port %s: %s", port, exc)
        return None
    svc.pages.append(served)
    say.page = page.url(site, req.page_host, served.port)
    unpublish = view.publish_page(req.paths.state_dir, say.page)

    def stopped() -> None:
        source.unsubscribe()
        unpublish()

    served.on_stop = stopped
    say.echo(f"progress page: {say.page}")
    return served


def linger(pages: list[page.PageServer]) -> None:
    """Keep the process (and so the page) alive until the page stops by itself after its keep time."""
    for served in pages:
        if served.stopping_at:
            waits.PROGRESS.info("the progress page stays up until %s", served.stopping_at)
        served.wait(served.keep + 5.0)


def _run_steps(
    req: NodeRequest, site: model.SiteConfig, steps: list[base.Step], svc: Services, say: Reporter
) -> runner.Result:
    settings = replace(req.settings, on_node=True)
    request = pipeline.Request(site, req.paths, replace(req.options, mode="node"), settings, resolve=svc.resolve)
    client = svc.client_factory()
    try:
        return pipeline.execute(request, client, svc.clock, steps=steps, progress=say)
    finally:
        client.close()


def summary(req: NodeRequest) -> str:
    """The report of the last run, as text (what `snoreloc run` prints at the end)."""
    rep = report.read(req.paths.report)
    return "" if rep is None else report.render(rep)


class _LazyNmstate:
    """Picks libnmstate or nmstatectl on first use, so a bad site-config fails as bad input (65) before that."""

    def __init__(self, runner_: command.Runner, host_fs: fs.HostFS) -> None:
        self._args = (runner_, host_fs)
        self._backend: nmstate.NmstateBackend | None = None

    def _get(self) -> nmstate.NmstateBackend:
        if self._backend is None:
            self._backend = nmstate.select_backend(*self._args)
        return self._backend

    def show(self) -> dict[str, Any]:
        return self._get().show()

    def apply(self, desired: dict[str, Any], *, commit: bool, rollback_timeout: int) -> nmstate.Checkpoint | None:
        return self._get().apply(desired, commit=commit, rollback_timeout=rollback_timeout)

    def commit(self, checkpoint: nmstate.Checkpoint) -> None:
        self._get().commit(checkpoint)

    def rollback(self, checkpoint: nmstate.Checkpoint) -> None:
        self._get().rollback(checkpoint)


def host_services(root: str, client_factory: ClientFactory, clock: clock_mod.Clock, echo: Echo) -> Services:
    """The real adapters of a node (the agent in its container enters the host's namespaces for commands)."""
    runner_ = command.SubprocessRunner(enter_host=command.in_container())
    host_fs = fs.HostFS(root)
    node_host = HostServices(
        fs=host_fs,
        nmstate=_LazyNmstate(runner_, host_fs),
        prober=probe.NetworkProber(runner_),
        units=systemd.Systemd(runner_),
    )
    return Services(
        host=node_host,
        devices=blockdev.BlockDevices(runner_, host_fs),
        banner=console.Banner(host_fs, runner_),
        client_factory=client_factory,
        clock=clock,
        echo=echo,
    )

"""Routes: move every route from the factory apps domain to the site's, keeping each route object.

The old apps domains are the factory's and those of every site snoreloc set here before (`site_domains`), so a
second relocation (a corrected stick, a move back) moves the routes the first one moved. Prior tools deleted stale
routes and let owners recreate them, which loses every user route. Here each route under an old apps domain is kept
and handled by kind:

- an explicit host: its suffix is rewritten by a merge patch of `spec.host`; TLS, annotations and everything
  else stay as they are;
- a generated host (`openshift.io/host.generated: "true"`) of an operator's route (an `openshift-*` or `kube-*`
  namespace): the operator regenerates it, we wait (bounded) and report;
- a generated host of a user's route: we write the host that regeneration would give (same prefix, new suffix).
  OpenShift allocates a host only when a route is created, so clearing the host of an existing route is not
  guaranteed to regenerate it; writing it is one deterministic write, and the route keeps its identity;
- a route with its own certificate (`spec.tls.certificate`) that would not cover its new host is named in the
  plan and the report; the site-config's `routes.ownCertificates` says whether it moves anyway (`move-and-warn`,
  the default) or stays on its factory host (`keep-host`). Either way it is a warning, never silent;
- console, downloads and oauth-openshift are moved by componentRoutes (the domain step) and are left alone, and
  so are the console operator's `console-custom` and `downloads-custom`, which follow those componentRoutes with
  their certificate (`serving.COMPONENT_CUSTOM_ROUTES`);
- anything outside the old apps domain is untouched.

Patches run on a bounded thread pool, so thousands of routes take seconds. The step keeps a few facts per route
(`RouteInfo`), never the route objects: the list is read in pages; each page's originals are saved as one backup
batch, then its routes are patched while the next page is read. Each patch is one request (no GET per route):
a JSON patch that replaces the host only if it is still the old one, so a route whose host changed since is left
as it is and reported. The step runs while the kube-apiserver revision restarts the API: the workers and the
listing then pause together until it answers (`_Outage`) rather than each retrying on its own.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import enum
import logging
import queue
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc.pki import certs
from snoreloc.siteconfig import model
from snoreloc.siteconfig.settings import routes as routes_setting
from snoreloc.siteconfig.settings import timeouts as timeouts_setting
from snoreloc.steps import base, context
from snoreloc.steps.openshift import rollouts, serving, site_domains

LOG = logging.getLogger(__name__)

GENERATED = "openshift.io/host.generated"
OPENSHIFT_APISERVER = "openshift-apiserver"
OUTAGE_ROUNDS = 6  # attempts per route, each after the API answered again: a revision restarts it once
OUTAGE_POLL = 1.0  # seconds between two probes of the route API while it is away
COMPONENT = {(namespace, name) for namespace, name, _prefix, _op in serving.COMPONENT_ROUTES}
COMPONENT |= set(serving.COMPONENT_CUSTOM_ROUTES)  # the console operator's, following the componentRoutes


class Handling(enum.Enum):
    REWRITE = "rewrite"  # we patch spec.host
    KEEP = "keep-host"  # its own certificate would not cover the new host, and the site-config says keep it
    OWNER = "owner"  # the owning operator regenerates it
    COMPONENT = "component-route"
    ARRIVED = "arrived"  # already under the new apps domain (regenerated, or created there)
    UNTOUCHED = "untouched"


@dataclass(frozen=True, slots=True)
class RouteInfo:
    """What the step keeps of a route (there may be tens of thousands): never the object itself."""

    namespace: str
    name: str
    host: str
    new_host: str
    handling: Handling
    uncovered: tuple[str, ...] | None = None  # the names of its own certificate when they miss the new host
    earlier: str = ""  # the apps domain of an earlier site it is on (`site_domains`), not the factory's

    @property
    def certificate_warning(self) -> str | None:
        """What to tell the user about the route's own certificate, when it would not serve the new host."""
        if self.uncovered is None:
            return None
        names = ", ".join(self.uncovered) or "no readable names"
        where = f"stays on {self.host}" if self.handling is Handling.KEEP else f"moves to {self.new_host}"
        return (
            f"route {self.namespace}/{self.name} has its own certificate ({names}), which does not cover "
            f"{self.new_host}: it {where}; give it a certificate for {self.new_host}"
        )

    @property
    def ref(self) -> kube.Ref:
        return kube.Ref(kube.ROUTES, self.name, self.namespace)


def _operator_owned(namespace: str) -> bool:
    return namespace.startswith(("openshift-", "kube-")) or namespace == "openshift"


def own_certificate_names(route: kube.Obj) -> tuple[str, ...] | None:
    """The names the route's own certificate serves; None without one, () when it cannot be read."""
    pem = (((route.get("spec") or {}).get("tls") or {}).get("certificate")) or ""
    if not pem:
        return None
    try:
        return certs.sans(certs.parse_chain(str(pem).encode())[0])
    except certs.CertError:
        return ()


def classify(
    route: kube.Obj,
    old: str,
    new: str,
    own: model.OwnCertificates = model.OwnCertificates.MOVE_AND_WARN,
    earlier: tuple[str, ...] = (),
) -> RouteInfo:
    """How one route is handled. `old` is the factory apps domain, `earlier` those of sites snoreloc set before:
    a route on any of them is ours to move (the longest matching domain decides its prefix)."""
    host = str((route.get("spec") or {}).get("host") or "")
    source = max((d for d in (old, *earlier) if d and host.endswith("." + d)), key=len, default=old)
    info = _classify_from(route, source, new, own)
    moved = source != old and info.handling not in (Handling.ARRIVED, Handling.UNTOUCHED)
    return dataclasses.replace(info, earlier=source) if moved else info


def _classify_from(route: kube.Obj, old: str, new: str, own: model.OwnCertificates) -> RouteInfo:
    meta = route["metadata"]
    namespace, name = meta.get("namespace", ""), meta["name"]
    host = str((route.get("spec") or {}).get("host") or "")
    arrived = host.endswith("." + new)  # checked first: the new apps domain may lie inside the old one
    under_old = host.endswith("." + old) and not arrived
    new_host = host[: -len(old)] + new if under_old else host
    generated = (meta.get("annotations") or {}).get(GENERATED) == "true"
    if not under_old:
        handling = Handling.ARRIVED if arrived else Handling.UNTOUCHED
    elif (namespace, name) in COMPONENT:
        handling = Handling.COMPONENT
    elif generated and _operator_owned(namespace):
        handling = Handling.OWNER
    else:
        names = own_certificate_names(route)
        if names is not None and not certs.covers(names, new_host):
            keep = own is model.OwnCertificates.KEEP_HOST
            handling = Handling.KEEP if keep else Handling.REWRITE
            return RouteInfo(namespace, name, host, new_host, handling, names)
        handling = Handling.REWRITE
    return RouteInfo(namespace, name, host, new_host, handling)


def moved_from(ctx: context.Context) -> tuple[str, tuple[str, ...]]:
    """The factory apps domain, and those of the sites snoreloc set before: routes on any of them are ours."""
    ingress = ctx.kube.get(base.INGRESS_CLUSTER)
    factory = str((ingress.get("spec") or {}).get("domain") or "") or base.factory_apps_domain(ctx)
    return factory, site_domains.earlier_apps_domains(ctx, ingress)


def survey(ctx: context.Context) -> tuple[str, list[RouteInfo]]:
    """The old apps domain and how each route is handled, read page by page (see `_listed`)."""
    return base.factory_apps_domain(ctx), _listed(ctx, {})


def _listed(ctx: context.Context, held: Mapping[kube.Ref, RouteInfo]) -> list[RouteInfo]:
    """How each route is handled, read page by page: only a `RouteInfo` per route is kept, never the objects, so
    memory grows by a few hundred bytes a route. A route `held` by an earlier plan the same (same host and
    handling) is that plan's object, not a second copy. A listing the API refuses (or forgets between
    pages) is started over once it answers, within the API timeout."""

    def once() -> list[RouteInfo]:
        (old, earlier), new = moved_from(ctx), ctx.site.apps_domain
        own = ctx.site.get(routes_setting.SETTING).own_certificates
        pages = ctx.kube.pages(kube.ROUTES)
        return [_shared(classify(route, old, new, own, earlier), held) for page in pages for route in page]

    return base.wait_for(ctx, "routes", "the route list", ctx.site.get(timeouts_setting.SETTING).api, once)


def _shared(info: RouteInfo, held: Mapping[kube.Ref, RouteInfo]) -> RouteInfo:
    earlier = held.get(info.ref)
    return earlier if earlier == info and earlier is not None else info


def _original(route: kube.Obj) -> kube.Obj:
    """What a rollback needs of a route: all of it but its status and managedFields, which the server writes."""
    route.pop("status", None)
    route["metadata"].pop("managedFields", None)
    return route


def rewrites(infos: list[RouteInfo]) -> list[RouteInfo]:
    """The routes whose host we patch."""
    return [info for info in infos if info.handling is Handling.REWRITE]


def _rewrite(info: RouteInfo) -> base.ObjectChange:
    """The change of one route as the plan shows it: its host (all the patch writes; everything else stays)."""
    before, after = {"spec": {"host": info.host}}, {"spec": {"host": info.new_host}}
    return base.ObjectChange(info.ref, base.Action.UPDATE, before, after, why=f"{info.host} -> {info.new_host}")


def _patch_route(ctx: context.Context, info: RouteInfo) -> str:
    """Rewrite one route's host if it is still the old one: a JSON patch that tests `spec.host` and replaces it,
    one request, atomic on the server. Not guarded by the resourceVersion: the router rewrites every route's status
    when the apps domain changes, which is when this step runs, so a resourceVersion guard would fail nearly every
    patch with 409 and cost a read and a second write per route (OpenShift's own patch helper forbids testing
    resourceVersion for that reason: openshift/library-go, pkg/apiserver/jsonpatch/jsonpatch.go). Its original is
    already saved. One attempt: an outage is `_Outage`'s to wait for. Returns the route's result for the table."""
    operations = [
        {"op": "test", "path": "/spec/host", "value": info.host},
        {"op": "replace", "path": "/spec/host", "value": info.new_host},
    ]
    try:
        try:
            result = ctx.kube.json_patch(info.ref, operations, retry=False)
        except kube.Invalid as refused:  # the test failed (changed meanwhile), or the new host is refused
            result = ctx.kube.get(info.ref, retry=False)
            if (result.get("spec") or {}).get("host") == info.host:
                return f"failed: {refused.message}"
    except kube.NotFound:
        return "gone"
    host = (result.get("spec") or {}).get("host")
    return "migrated" if host == info.new_host else f"skipped: changed meanwhile to {host or 'no host'}"


class _Outage:
    """The API as every route worker sees it. The routes overlap the kube-apiserver revision, whose restart refuses
    every request for about a minute on SNO (no second instance; shutdown delay 0 s: cluster-kube-apiserver-operator
    PRs 1164 and 1168). The first worker that meets it closes the gate and waits, bounded and visibly, until the
    route API answers again; the others hold at the gate meanwhile instead of each backing off on its own (up to
    `Policy.backoff_max` after the API is back), and all resume the moment it answers."""

    def __init__(self, ctx: context.Context, step: str) -> None:
        self._ctx = ctx
        self._step = step
        self._open = threading.Event()
        self._open.set()
        self._lock = threading.Lock()
        self.failed: errors.TemporaryError | None = None  # the wait ran out: every worker stops

    def hold(self) -> None:
        """Return once requests may go out: at once while the API answers; raise once the wait for it ran out."""
        if not self._open.is_set():
            self._open.wait(
                self._ctx.site.get(timeouts_setting.SETTING).api
            )  # the waiting worker opens it within that budget
        if self.failed is not None:
            raise self.failed

    def away(self, refused: kube.Unreachable) -> None:
        """A request met the outage: wait for the API (one worker waits, the others hold)."""
        with self._lock:
            leader = self._open.is_set()
            self._open.clear()
        if not leader:
            return self.hold()
        clock = self._ctx.clock
        not_before = clock.monotonic() + refused.delay  # a Retry-After the server named is honoured

        def back() -> bool | None:
            return True if clock.monotonic() >= not_before and self._ctx.kube.serves(kube.ROUTES) else None

        LOG.info("routes: the API refused a patch (%s); holding every route worker until it answers", refused.message)
        budget = self._ctx.site.get(timeouts_setting.SETTING).api
        try:
            base.wait_for(self._ctx, self._step, "the route API to answer again", budget, back, poll=OUTAGE_POLL)
        except errors.TemporaryError as exc:
            self.failed = exc
        finally:
            self._open.set()
        return self.hold()


def _patch_through(ctx: context.Context, outage: _Outage, info: RouteInfo) -> str:
    """Patch one route, riding out outages: a route refused `OUTAGE_ROUNDS` times (each after the API answered
    again) is given up for this run."""
    for _round in range(OUTAGE_ROUNDS - 1):
        outage.hold()
        try:
            return _patch_route(ctx, info)
        except kube.Unreachable as exc:
            outage.away(exc)
    outage.hold()
    return _patch_route(ctx, info)


class _Patcher:
    """A bounded pool of workers patching the routes handed to it, each taking the next one when done with one,
    so the patches of one page run while the next page is read. `finish` waits for them all."""

    def __init__(self, ctx: context.Context, outage: _Outage) -> None:
        self._ctx = ctx
        self._outage = outage
        self.results: dict[kube.Ref, str] = {}
        self.refused: dict[kube.Ref, errors.TemporaryError] = {}
        self._queue: queue.SimpleQueue[RouteInfo | None] = queue.SimpleQueue()
        # more workers than pooled connections would only open connections to throw them away after one request
        self._workers = min(max(ctx.settings.route_workers, 1), ctx.kube.policy.pool_size)
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=self._workers)
        self._running = [self._pool.submit(self._work) for _ in range(self._workers)]

    def submit(self, info: RouteInfo) -> None:
        self._queue.put(info)

    def _work(self) -> None:
        while (info := self._queue.get()) is not None:
            try:
                self.results[info.ref] = _patch_through(self._ctx, self._outage, info)
            except errors.TemporaryError as exc:
                self.refused[info.ref], self.results[info.ref] = exc, "failed"
            except errors.SnorelocError as exc:
                self.results[info.ref] = f"failed: {exc.message}"

    def finish(self) -> dict[kube.Ref, str]:
        """Every route's result, once all are patched; routes the API still refused fail the step (a re-run
        resumes: it finds only those left to rewrite)."""
        self.stop()
        if self.refused:
            ref, exc = next(iter(self.refused.items()))
            raise errors.TemporaryError(
                f"routes: {len(self.refused)} route(s) could not be patched ({ref}: {exc.message})"
            )
        return self.results

    def stop(self) -> None:
        """Let the workers patch what they were given, and end."""
        for _worker in range(self._workers):
            self._queue.put(None)  # each worker stops at the first None it takes, after the routes before it
        try:
            for running in self._running:
                running.result()
        finally:
            self._pool.shutdown()


def _relisted(
    ctx: context.Context, held: Mapping[kube.Ref, RouteInfo], outage: _Outage, patcher: _Patcher
) -> list[RouteInfo]:
    """The routes listed again (they may have changed since the plan), page by page: each page's originals of the
    routes to rewrite are saved as one backup batch, then handed to `patcher` while the next page is read, so
    every original is kept before its route's patch. An outage pauses the listing with the patches (`_Outage`) and
    it reads on from the page it had reached; a listing the server forgot (410) starts over, skipping the routes
    already handed over."""
    (old, earlier), new = moved_from(ctx), ctx.site.apps_domain
    own = ctx.site.get(routes_setting.SETTING).own_certificates
    found: dict[kube.Ref, RouteInfo] = {}
    token: str | None = None
    refusals = expiries = 0
    while True:
        outage.hold()
        try:
            page, following = ctx.kube.page(kube.ROUTES, token, retry=False)
        except kube.ListExpired as exc:
            expiries, token = _count(expiries, ctx.kube.policy.conflict_attempts, exc), None
            continue
        except kube.Unreachable as exc:
            refusals = _count(refusals, OUTAGE_ROUNDS, exc)
            outage.away(exc)
            continue
        refusals = 0
        originals: list[tuple[kube.Ref, kube.Obj | None]] = []
        fresh: list[RouteInfo] = []
        for route in page:
            info = _shared(classify(route, old, new, own, earlier), held)
            if info.ref in found:
                continue
            found[info.ref] = info
            if info.handling is Handling.REWRITE:
                originals.append((info.ref, _original(route)))
                fresh.append(info)
        if originals:
            ctx.backups.save_many(originals)
        for info in fresh:
            patcher.submit(info)
        if not following:
            return list(found.values())
        token = following


def _count(count: int, limit: int, exc: errors.TemporaryError) -> int:
    """One more failed page read; the listing gives up (with `exc`) after `limit` in a row."""
    if count + 1 >= limit:
        raise exc
    return count + 1


class Routes(base.ObjectStep):
    name = "routes"
    description = "moving routes to the new apps domain"

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {
            "domain": ctx.site.domain,
            "own_certificates": ctx.site.get(routes_setting.SETTING).own_certificates.value,
        }

    def plan(self, ctx: context.Context) -> base.Plan:
        infos = _listed(ctx, {})
        owners = [f"{i.namespace}/{i.name}" for i in infos if i.handling is Handling.OWNER]
        notes = tuple(f"wait for its operator to regenerate route {name}" for name in owners)
        notes += certificate_warnings(infos) + earlier_notes(infos)
        changes = tuple(_rewrite(info) for info in rewrites(infos))
        return base.Plan(self.name, changes, notes, data={"infos": infos})

    def _wait_routing(self, ctx: context.Context) -> None:
        """Rewrite only once openshift-apiserver generates hosts under the new apps domain: it has rolled out
        since the domain step's Ingress write. That is all the routes need, so this step runs before the settle,
        overlapping the kube-apiserver revision (whose outage the kube client's retries ride out)."""
        changed = ctx.rollouts.pending().get(OPENSHIFT_APISERVER)

        def ready() -> bool | None:
            co = ctx.kube.get(kube.Ref(kube.CLUSTEROPERATORS, OPENSHIFT_APISERVER))
            return True if rollouts.rolled_out(co, changed) else None

        base.wait_for(
            ctx,
            self.name,
            "openshift-apiserver to use the new apps domain",
            ctx.site.get(timeouts_setting.SETTING).settle,
            ready,
        )

    def _patch_all(self, ctx: context.Context, targets: list[RouteInfo]) -> dict[kube.Ref, str]:
        """Patch every route in `targets` (their originals already saved); see `_Patcher`."""
        patcher = _Patcher(ctx, _Outage(ctx, self.name))
        for info in targets:
            patcher.submit(info)
        return patcher.finish()

    def _wait_owners(self, ctx: context.Context, owners: list[RouteInfo]) -> dict[kube.Ref, str]:
        if not owners:
            return {}
        domains = moved_from(ctx)

        def moved() -> dict[kube.Ref, str] | None:
            return None if _stale(ctx, owners, domains) else {o.ref: "regenerated" for o in owners}

        try:
            return base.wait_for(
                ctx, self.name, "operators to regenerate their routes", ctx.settings.operator_regen_timeout, moved
            )
        except errors.WaitTimeout:
            stale = _stale(ctx, owners, domains)
            return {o.ref: "not regenerated by its operator" if o.ref in stale else "regenerated" for o in owners}

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
        self._wait_routing(ctx)
        held = {info.ref: info for info in plan.data["infos"]}
        outage = _Outage(ctx, self.name)
        patcher = _Patcher(ctx, outage)
        try:
            infos = _relisted(ctx, held, outage, patcher)
        except BaseException:
            patcher.stop()
            raise
        results = patcher.finish()
        del held
        results.update(self._wait_owners(ctx, [i for i in infos if i.handling is Handling.OWNER]))
        table = [_row(info, results) for info in infos]
        warnings = (
            tuple(
                f"route {row['namespace']}/{row['name']}: {row['result']}"
                for row in table
                if row["result"].startswith(("failed", "skipped", "not regenerated"))
            )
            + certificate_warnings(infos)
            + not_moved_from_earlier(table)
        )
        changed = tuple(f"update {ref}" for ref, result in results.items() if result == "migrated")
        details = {"routes": table, "counts": counts(table), EARLIER_KEY: from_earlier(table)}
        return base.StepOutcome(changed=changed, warnings=warnings, details=details)


def _stale(ctx: context.Context, owners: list[RouteInfo], domains: tuple[str, tuple[str, ...]]) -> set[kube.Ref]:
    """The operators' routes still on an old apps domain (`domains`: `moved_from`): one read each (a handful), not
    a list of every route."""
    (old, earlier), new = domains, ctx.site.apps_domain
    found = ((owner.ref, ctx.kube.find(owner.ref)) for owner in owners)
    return {
        ref
        for ref, route in found
        if route is not None and classify(route, old, new, earlier=earlier).handling is Handling.OWNER
    }


def earlier_notes(infos: list[RouteInfo]) -> tuple[str, ...]:
    """The plan's line per earlier site apps domain: how many of its routes move (they are ours, like the
    factory's)."""
    counts: dict[str, int] = {}
    for info in infos:
        if info.earlier:
            counts[info.earlier] = counts.get(info.earlier, 0) + 1
    return tuple(
        f"{n} route(s) on {domain}, an earlier site's apps domain: moved like the factory's"
        for domain, n in counts.items()
    )


def not_moved_from_earlier(table: list[dict[str, str]]) -> tuple[str, ...]:
    """Every route left on an earlier site's apps domain, named with why (a kept own certificate, a failure)."""
    return tuple(
        f"route {row['namespace']}/{row['name']} stays on {row['old_host']} (an earlier site's apps domain): "
        f"{row['result']}"
        for row in table
        if row.get("earlier") and row["result"] not in ("migrated", "regenerated", "already migrated")
    )


def certificate_warnings(infos: list[RouteInfo]) -> tuple[str, ...]:
    """One line per route whose own certificate would not cover its new host (plan notes and run warnings)."""
    return tuple(w for w in (info.certificate_warning for info in infos) if w is not None)


def _row(info: RouteInfo, results: Mapping[kube.Ref, str]) -> dict[str, str]:
    default = {
        Handling.KEEP: "kept on its host: its own certificate does not cover the new one",
        Handling.UNTOUCHED: "untouched",
        Handling.ARRIVED: "on the new domain",
        Handling.COMPONENT: "moved by componentRoutes",
        Handling.REWRITE: "already migrated",
        Handling.OWNER: "regenerated",
    }[info.handling]
    result = results.get(info.ref, default)
    new_host = info.new_host if result in ("migrated", "regenerated") else info.host
    row = {"namespace": info.namespace, "name": info.name, "old_host": info.host, "new_host": new_host}
    row["result"] = result
    if info.uncovered is not None:
        row["certificate"] = f"own certificate for {', '.join(info.uncovered) or 'no readable names'}"
    if info.earlier:
        row["earlier"] = info.earlier
    return row


EARLIER_COUNT = "from an earlier site domain"  # how counts of journals before issue 35 named `from_earlier`
EARLIER_KEY = "from_earlier"  # the step's detail (and the report's `routes_from_earlier`): routes that were on one


def counts(table: list[dict[str, str]]) -> dict[str, int]:
    """The routes by result: a partition, so the counts add up to the routes in the table (issue 35: a count of
    those from an earlier site domain was mixed in, and 21 routes added up to 32). That view is `from_earlier`."""
    found: dict[str, int] = {}
    for row in table:
        key = row["result"].split(":")[0]
        found[key] = found.get(key, 0) + 1
    return found


def from_earlier(table: list[dict[str, str]]) -> int:
    """How many of the routes were on an earlier site's apps domain (a relocation after a relocation), whatever
    their result: another view of the same routes, not a category beside the results."""
    return sum(1 for row in table if row.get("earlier"))

"""Routes: move every route from the factory apps domain to the site's, keeping each route object.

Prior tools deleted stale routes and let owners recreate them, which loses every user route. Here each route
under the old apps domain is kept and handled by kind:

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
- console, downloads and oauth-openshift are moved by componentRoutes (the domain step) and are left alone;
- anything outside the old apps domain is untouched.

Patches run on a bounded thread pool, so thousands of routes take seconds. The routes' originals are saved as one
backup batch before the first patch. Each patch is written from the route as the list returned it, guarded by
its resourceVersion (no GET per route); a route changed since is read again and rewritten only if its host is
still the old one.
"""

from __future__ import annotations

import concurrent.futures
import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc.pki import certs
from snoreloc.siteconfig import model
from snoreloc.steps import base, context, domain, settle

LOG = logging.getLogger(__name__)

GENERATED = "openshift.io/host.generated"
OPENSHIFT_APISERVER = "openshift-apiserver"
OUTAGE_ROUNDS = 4  # patch rounds at most: a revision restarts the API once; a route refused four times fails
COMPONENT = {(namespace, name) for namespace, name, _prefix, _op in domain.COMPONENT_ROUTES}


class Handling(enum.Enum):
    REWRITE = "rewrite"  # we patch spec.host
    KEEP = "keep-host"  # its own certificate would not cover the new host, and the site-config says keep it
    OWNER = "owner"  # the owning operator regenerates it
    COMPONENT = "component-route"
    ARRIVED = "arrived"  # already under the new apps domain (regenerated, or created there)
    UNTOUCHED = "untouched"


@dataclass(frozen=True)
class RouteInfo:
    namespace: str
    name: str
    host: str
    new_host: str
    handling: Handling
    uncovered: tuple[str, ...] | None = None  # the names of its own certificate when they miss the new host

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
    route: kube.Obj, old: str, new: str, own: model.OwnCertificates = model.OwnCertificates.MOVE_AND_WARN
) -> RouteInfo:
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
            return RouteInfo(namespace, name, host, new_host, Handling.KEEP if keep else Handling.REWRITE, names)
        handling = Handling.REWRITE
    return RouteInfo(namespace, name, host, new_host, handling)


Held = Mapping[kube.Ref, kube.Obj]  # routes an earlier plan holds, by reference


def survey(ctx: context.Context) -> tuple[str, list[RouteInfo]]:
    old, infos, _changes = _listed(ctx, {})
    return old, infos


def _listed(ctx: context.Context, held: Held) -> tuple[str, list[RouteInfo], list[base.Change]]:
    """The old apps domain, how each route is handled, and the rewrites. Read page by page, keeping only the
    routes to rewrite (without their status); a route `held` at the same resourceVersion is reused, so a second
    plan shares the first one's objects instead of holding a second copy of thousands of routes. The step runs
    while the kube-apiserver restarts, so a listing the API refuses (or forgets between pages) is started over
    once it answers, within the API timeout."""
    return base.wait_for(ctx, "routes", "the route list", ctx.site.timeouts.api, lambda: _listed_once(ctx, held))


def _listed_once(ctx: context.Context, held: Held) -> tuple[str, list[RouteInfo], list[base.Change]]:
    old, new = base.factory_apps_domain(ctx), ctx.site.apps_domain
    own = ctx.site.routes.own_certificates
    infos: list[RouteInfo] = []
    changes: list[base.Change] = []
    for page in ctx.kube.pages(kube.ROUTES):
        for route in page:
            info = classify(route, old, new, own)
            infos.append(info)
            if info.handling is Handling.REWRITE:
                changes.append(_rewrite(info, _kept(route, held.get(info.ref))))
    return old, infos, changes


def _kept(route: kube.Obj, earlier: kube.Obj | None) -> kube.Obj:
    """What we hold of a route: the earlier plan's object when unchanged since, else the route without its status
    and managedFields, which the server writes and neither the patch, the backup nor a rollback uses."""
    version = route["metadata"].get("resourceVersion")
    if earlier is not None and version and earlier["metadata"].get("resourceVersion") == version:
        return earlier
    route.pop("status", None)
    route["metadata"].pop("managedFields", None)
    return route


def _host_setter(old_host: str, new_host: str) -> Any:
    """The route's change: its host, if it is still `old_host` (re-applied to a fresh read after a 409)."""

    def mutate(route: kube.Obj) -> kube.Obj | None:
        spec = route.setdefault("spec", {})
        if spec.get("host") != old_host:
            return None
        spec["host"] = new_host
        return route

    return mutate


def _rewrite(info: RouteInfo, route: kube.Obj) -> base.Change:
    """The change of one route, without copying the whole object (there may be thousands)."""
    after = {**route, "spec": {**(route.get("spec") or {}), "host": info.new_host}}
    mutate = _host_setter(info.host, info.new_host)
    return base.Change(info.ref, base.Action.UPDATE, route, after, mutate, why=f"{info.host} -> {info.new_host}")


def _answers(ctx: context.Context) -> Any:
    def probe() -> bool | None:
        return True if ctx.kube.ready() else None

    return probe


def _patch_route(ctx: context.Context, change: base.Change) -> str:
    """Patch one route (its original is already saved); returns the route's result for the table."""
    assert change.before is not None and change.mutate is not None
    wanted = (change.after or {}).get("spec", {}).get("host")
    try:
        result = ctx.kube.patch_from(change.ref, change.before, change.mutate)
    except kube.NotFound:
        return "gone"
    host = (result.get("spec") or {}).get("host")
    return "migrated" if host == wanted else f"skipped: changed meanwhile to {host or 'no host'}"


class Routes:
    name = "routes"
    description = "moving routes to the new apps domain"

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {"domain": ctx.site.domain, "own_certificates": ctx.site.routes.own_certificates.value}

    def plan(self, ctx: context.Context) -> base.Plan:
        return self._plan(ctx, {})

    def _plan(self, ctx: context.Context, held: Held) -> base.Plan:
        _old, infos, changes = _listed(ctx, held)
        owners = [f"{i.namespace}/{i.name}" for i in infos if i.handling is Handling.OWNER]
        notes = tuple(f"wait for its operator to regenerate route {name}" for name in owners)
        notes += certificate_warnings(infos)
        return base.Plan(self.name, tuple(changes), notes, data={"infos": infos})

    def _wait_routing(self, ctx: context.Context) -> None:
        """Rewrite only once openshift-apiserver generates hosts under the new apps domain: it has rolled out
        since the domain step's Ingress write. That is all the routes need, so this step runs before the settle,
        overlapping the kube-apiserver revision (whose outage the kube client's retries ride out)."""
        changed = ctx.rollouts.pending().get(OPENSHIFT_APISERVER)

        def ready() -> bool | None:
            co = ctx.kube.get(kube.Ref(kube.CLUSTEROPERATORS, OPENSHIFT_APISERVER))
            return True if settle.rolled_out(co, changed) else None

        base.wait_for(ctx, self.name, "openshift-apiserver to use the new apps domain", ctx.site.timeouts.settle, ready)

    def _patch_all(self, ctx: context.Context, plan: base.Plan) -> dict[kube.Ref, str]:
        """Patch every route to rewrite. The routes run while the kube-apiserver revision rolls out, so the API
        may go away for longer than one request's retries: the routes it refused are patched again once it
        answers (a bounded, visible wait), a few rounds at most."""
        ctx.backups.save_many([(change.ref, change.before) for change in plan.changes])
        results: dict[kube.Ref, str] = {}
        todo = list(plan.changes)
        for round_ in range(1, OUTAGE_ROUNDS + 1):
            refused = self._patch_round(ctx, todo, results)
            if not refused or round_ == OUTAGE_ROUNDS:
                break
            LOG.info("routes: the API refused %d route(s); waiting for it to answer again", len(refused))
            base.wait_for(ctx, self.name, "the API to answer again", ctx.site.timeouts.api, _answers(ctx))
            todo = [change for change in todo if change.ref in refused]
        failed = [f"{ref}: {exc.message}" for ref, exc in refused.items()]
        if failed:
            raise errors.TemporaryError(f"routes: {len(failed)} route(s) could not be patched ({failed[0]})")
        return results

    def _patch_round(
        self, ctx: context.Context, changes: list[base.Change], results: dict[kube.Ref, str]
    ) -> dict[kube.Ref, errors.TemporaryError]:
        """Patch `changes` on the pool; fills `results`, returns the routes the API refused for now."""
        refused: dict[kube.Ref, errors.TemporaryError] = {}
        # more workers than pooled connections would only open connections to throw them away after one request
        workers = min(max(ctx.settings.route_workers, 1), ctx.kube.policy.pool_size)
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(_patch_route, ctx, change): change.ref for change in changes}
            for future in concurrent.futures.as_completed(futures):
                ref = futures[future]
                try:
                    results[ref] = future.result()
                except errors.TemporaryError as exc:
                    refused[ref] = exc
                    results[ref] = "failed"
                except errors.SnorelocError as exc:
                    results[ref] = f"failed: {exc.message}"
        return refused

    def _wait_owners(self, ctx: context.Context, owners: list[RouteInfo]) -> dict[kube.Ref, str]:
        if not owners:
            return {}
        wanted = {o.ref for o in owners}

        def moved() -> dict[kube.Ref, str] | None:
            _old, infos = survey(ctx)
            stale = {i.ref for i in infos if i.handling is Handling.OWNER} & wanted
            return None if stale else {ref: "regenerated" for ref in wanted}

        try:
            return base.wait_for(
                ctx, self.name, "operators to regenerate their routes", ctx.settings.operator_regen_timeout, moved
            )
        except errors.WaitTimeout:
            _old, infos = survey(ctx)
            stale = {i.ref for i in infos if i.handling is Handling.OWNER}
            return {ref: "not regenerated by its operator" if ref in stale else "regenerated" for ref in wanted}

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.Outcome:
        self._wait_routing(ctx)
        held = {change.ref: change.before for change in plan.changes if change.before is not None}
        plan = self._plan(ctx, held)  # the routes may have changed while we waited
        infos: list[RouteInfo] = list(plan.data["infos"])
        results = self._patch_all(ctx, plan)
        results.update(self._wait_owners(ctx, [i for i in infos if i.handling is Handling.OWNER]))
        table = [_row(info, results) for info in infos]
        warnings = tuple(
            f"route {row['namespace']}/{row['name']}: {row['result']}"
            for row in table
            if row["result"].startswith(("failed", "skipped", "not regenerated"))
        ) + certificate_warnings(infos)
        changed = tuple(f"update {c.ref}" for c in plan.changes if results.get(c.ref) == "migrated")
        return base.Outcome(changed=changed, warnings=warnings, details={"routes": table, "counts": _counts(table)})

    def verify(self, ctx: context.Context) -> None:
        base.verify_no_changes(ctx, self)


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
    return row


def _counts(table: list[dict[str, str]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in table:
        key = row["result"].split(":")[0]
        counts[key] = counts.get(key, 0) + 1
    return counts

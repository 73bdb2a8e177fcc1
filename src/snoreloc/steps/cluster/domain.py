"""The domain change: serve the new names with the new certificates, and make new routes use the new apps domain.

Three objects, written back to back so their rollouts (kube-apiserver, openshift-apiserver, ingress, console,
authentication) overlap instead of queueing: APIServer `cluster` namedCertificates, Ingress `cluster`
appsDomain and componentRoutes, IngressController `default` defaultCertificate. Users' settings are merged, never
clobbered: other namedCertificates stay as they were; a componentRoute is replaced only when it is ours (it uses
our secret) or still points at the factory apps domain, and one the user moved to a domain of their own (say
`downloads.mycorp.example.com` with its own secret) is kept and reported; a defaultCertificate that already serves
`*.<new apps domain>` and is valid is kept. A namedCertificate that points at a missing or broken secret
crash-loops kube-apiserver, so every secret we reference is checked right before the write, and the APIServer is
written last.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc.pki import certs
from snoreloc.steps import base, context
from snoreloc.steps.openshift import apiserver_revision, serving, site_domains


def merged_named_certificates(current: list[Any], names: list[str], secret: str) -> list[Any]:
    """Ours (our secret) is replaced; another entry that also lists one of our names loses only those names (and
    goes when none is left), everything else in it stays."""
    kept = []
    for entry in current:
        if (entry.get("servingCertificate") or {}).get("name") == secret:
            continue
        listed = entry.get("names") or []
        rest = [name for name in listed if name not in names]
        if rest == listed:
            kept.append(entry)
        elif rest:
            kept.append({**entry, "names": rest})
    return [*kept, {"names": names, "servingCertificate": {"name": secret}}]


def replaceable_route(entry: Mapping[str, Any], *old_apps: str) -> bool:
    """A componentRoute we may replace: ours (it uses our secret) or one still on the factory apps domain or on
    the apps domain of a site snoreloc set before (`site_domains`)."""
    ours = (entry.get("servingCertKeyPairSecret") or {}).get("name") == serving.INGRESS_SECRET
    return ours or any(str(entry.get("hostname") or "").endswith(f".{apps}") for apps in old_apps if apps)


def users_component_routes(current: list[Any], *old_apps: str) -> list[Any]:
    """Entries for our component routes that the user moved to a domain of their own: kept as they are."""
    ours = {(namespace, name) for namespace, name, _prefix, _operator in serving.COMPONENT_ROUTES}
    return [
        entry
        for entry in current
        if (entry.get("namespace"), entry.get("name")) in ours and not replaceable_route(entry, *old_apps)
    ]


def merged_component_routes(current: list[Any], wanted: list[dict[str, Any]], *old_apps: str) -> list[Any]:
    """Merge by (namespace, name): ours and factory-domain entries are replaced, the user's own are kept, other
    entries keep their place."""
    kept = {(e.get("namespace"), e.get("name")) for e in users_component_routes(current, *old_apps)}
    wanted = [w for w in wanted if (w["namespace"], w["name"]) not in kept]
    keys = {(w["namespace"], w["name"]) for w in wanted}
    return [entry for entry in current if (entry.get("namespace"), entry.get("name")) not in keys] + wanted


def wanted_component_routes(ctx: context.Context) -> list[dict[str, Any]]:
    return [
        {
            "namespace": namespace,
            "name": name,
            "hostname": f"{prefix}.{ctx.site.apps_domain}",
            "servingCertKeyPairSecret": {"name": serving.INGRESS_SECRET},
        }
        for namespace, name, prefix, _operator in serving.COMPONENT_ROUTES
    ]


def _apiserver(ctx: context.Context) -> base.ObjectChange | None:
    names = list(ctx.site.names_for("api").required)  # the names the API serves by SNI with our certificate

    def mutate(obj: kube.Obj) -> kube.Obj:
        serving_certs = obj.setdefault("spec", {}).setdefault("servingCerts", {})
        current = serving_certs.get("namedCertificates") or []
        serving_certs["namedCertificates"] = merged_named_certificates(current, names, serving.API_SECRET)
        return obj

    current = ctx.kube.get(base.APISERVER_CLUSTER)
    return base.update(base.APISERVER_CLUSTER, current, mutate, rollouts=("kube-apiserver",), why="API certificate")


def routing_domain(spec: Mapping[str, Any]) -> str:
    """The apps domain openshift-apiserver generates route hosts under: `appsDomain` when set, else `domain`
    (cluster-openshift-apiserver-operator, pkg/operator/configobservation/ingresses/observe_ingresses.go:
    `routingDomain := Spec.Domain; if len(Spec.AppsDomain) > 0 { routingDomain = Spec.AppsDomain }`, and no new
    observed config, so no rollout, when it equals the current `routingConfig.subdomain`). Setting `appsDomain` to
    the factory's own apps domain therefore rolls nothing out."""
    return str(spec.get("appsDomain") or spec.get("domain") or "")


def _ingress(ctx: context.Context) -> base.ObjectChange | None:
    wanted = wanted_component_routes(ctx)
    current = ctx.kube.get(base.INGRESS_CLUSTER)
    old_apps = _old_apps(ctx, current)

    def mutate(obj: kube.Obj) -> kube.Obj:
        spec = obj.setdefault("spec", {})
        spec["appsDomain"] = ctx.site.apps_domain
        spec["componentRoutes"] = merged_component_routes(spec.get("componentRoutes") or [], wanted, *old_apps)
        return obj

    change = base.update(base.INGRESS_CLUSTER, current, mutate, why="apps domain and component routes")
    if change is None:
        return None
    rollouts = ["console", "authentication"]
    if routing_domain(current.get("spec") or {}) != ctx.site.apps_domain:
        rollouts.insert(0, "openshift-apiserver")
    return base.ObjectChange(
        change.ref, change.action, change.before, change.after, change.mutate, tuple(rollouts), change.why
    )


def kept_default_certificate(ctx: context.Context, controller: kube.Obj) -> str | None:
    """The name of the IngressController's own defaultCertificate secret when it already serves the new apps
    domain (valid now, covers `*.<apps domain>`); None when there is none or it must be replaced."""
    name = ((controller.get("spec") or {}).get("defaultCertificate") or {}).get("name")
    if not name or name == serving.INGRESS_SECRET:
        return None
    pair = serving.tls_pair(ctx.kube.find(kube.Ref(kube.SECRETS, str(name), "openshift-ingress")))
    if pair is None or certs.check_pair(*pair, [f"*.{ctx.site.apps_domain}"], ctx.clock.now()):
        return None
    return str(name)


def _ingresscontroller(ctx: context.Context) -> base.ObjectChange | None:
    def mutate(obj: kube.Obj) -> kube.Obj:
        obj.setdefault("spec", {})["defaultCertificate"] = {"name": serving.INGRESS_SECRET}
        return obj

    current = ctx.kube.get(base.DEFAULT_INGRESSCONTROLLER)
    if kept_default_certificate(ctx, current) is not None:
        return None
    return base.update(base.DEFAULT_INGRESSCONTROLLER, current, mutate, rollouts=("ingress",), why="router certificate")


def kept_notes(ctx: context.Context) -> tuple[str, ...]:
    """What the user configured that we keep as it is, for the plan and the report."""
    notes = []
    controller = ctx.kube.get(base.DEFAULT_INGRESSCONTROLLER)
    kept = kept_default_certificate(ctx, controller)
    if kept is not None:
        notes.append(f"kept the router's defaultCertificate {kept}: it already serves *.{ctx.site.apps_domain}")
    ingress = ctx.kube.get(base.INGRESS_CLUSTER)
    old_apps = _old_apps(ctx, ingress)
    for entry in users_component_routes((ingress.get("spec") or {}).get("componentRoutes") or [], *old_apps):
        notes.append(
            f"kept componentRoute {entry.get('namespace')}/{entry.get('name')} on {entry.get('hostname')}: "
            "it is on a domain of your own, not the factory's or an earlier site's apps domain"
        )
    earlier = old_apps[1:]
    if earlier:
        notes.append(f"earlier site apps domain(s) {', '.join(earlier)}: their routes move to {ctx.site.apps_domain}")
    return tuple(notes)


def served_hosts(ctx: context.Context) -> dict[str, str]:
    """Where each component route answers once the domain has changed, by route name: on the new apps domain, or
    on the hostname of a componentRoute the user kept (the console operator serves the console there: "Customizing
    the console route", docs.redhat.com/.../openshift_container_platform/4.14/html/web_console/
    customizing-the-web-console-url_customizing-web-console). For the report, the banner and the page."""
    hosts = {
        name: f"{prefix}.{ctx.site.apps_domain}" for _namespace, name, prefix, _operator in serving.COMPONENT_ROUTES
    }
    ingress = ctx.kube.get(base.INGRESS_CLUSTER)
    for entry in users_component_routes(
        (ingress.get("spec") or {}).get("componentRoutes") or [], *_old_apps(ctx, ingress)
    ):
        hosts[str(entry.get("name"))] = str(entry.get("hostname"))
    return hosts


def _old_apps(ctx: context.Context, ingress: kube.Obj) -> tuple[str, ...]:
    """The factory apps domain, then those of the sites snoreloc set before (whose componentRoutes are ours)."""
    return (str((ingress.get("spec") or {}).get("domain") or ""), *site_domains.earlier_apps_domains(ctx))


def check_secrets(ctx: context.Context) -> None:
    """Refuse to reference a secret that is missing or does not hold a usable pair for its names."""
    api_names = ctx.site.names_for("api").required
    ingress_names = ctx.site.names_for("ingress").required
    for ref, names in (
        (serving.API_SECRET_CONFIG, api_names),
        (serving.INGRESS_SECRET_CONFIG, ingress_names),
        (serving.INGRESS_SECRET_OPERAND, ingress_names),
    ):
        pair = serving.tls_pair(ctx.kube.find(ref))
        problems = certs.check_pair(*pair, names, ctx.clock.now()) if pair else ["missing or incomplete"]
        if problems:
            raise errors.PermanentStepError(
                f"domain: not pointing the cluster at {ref}: {'; '.join(problems)}",
                hint="Run `snoreloc run --step certificates --force`, then run again.",
            )


class Domain(base.ObjectStep):
    name = "domain"
    description = "switching the API and apps domain (kube-apiserver and ingress rollouts)"

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {"domain": ctx.site.domain}

    def plan(self, ctx: context.Context) -> base.Plan:
        # Ingress and router first, APIServer last: its rollout takes the API away for a minute.
        found = [site_domains.change(ctx), _ingresscontroller(ctx), _ingress(ctx), _apiserver(ctx)]
        return base.Plan(self.name, tuple(c for c in found if c is not None), kept_notes(ctx))

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
        if not plan.empty:
            check_secrets(ctx)
        hosts = served_hosts(ctx)  # before the APIServer write: its rollout takes the API away for a while
        outcome = apiserver_revision.apply(ctx, plan)
        details = {"kept": list(plan.notes), "hosts": hosts}
        return base.StepOutcome(outcome.changed, outcome.rollouts, outcome.warnings, details)

"""The domain change: serve the new names with the new certificates, and make new routes use the new apps domain.

Three objects, written back to back so their rollouts (kube-apiserver, openshift-apiserver, ingress, console,
authentication) overlap instead of queueing: APIServer `cluster` namedCertificates, Ingress `cluster`
appsDomain and componentRoutes, IngressController `default` defaultCertificate. Lists are merged, never
replaced: other namedCertificates and componentRoutes stay as they were, ours are replaced by name. A
namedCertificate that points at a missing or broken secret crash-loops kube-apiserver, so every secret we
reference is checked right before the write, and the APIServer is written last.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc.pki import certs
from snoreloc.steps import apiserver_last, base, certificates, context

API_SECRET = kube.Ref(kube.SECRETS, certificates.API_SECRET, "openshift-config")
INGRESS_SECRET_CONFIG = kube.Ref(kube.SECRETS, certificates.INGRESS_SECRET, "openshift-config")
INGRESS_SECRET_OPERAND = kube.Ref(kube.SECRETS, certificates.INGRESS_SECRET, "openshift-ingress")

# (namespace, name, host prefix, the operator that rolls out when it changes)
COMPONENT_ROUTES = (
    ("openshift-console", "console", "console-openshift-console", "console"),
    ("openshift-console", "downloads", "downloads-openshift-console", "console"),
    ("openshift-authentication", "oauth-openshift", "oauth-openshift", "authentication"),
)


def merged_named_certificates(current: list[Any], names: list[str], secret: str) -> list[Any]:
    """Keep every entry that is not ours; ours (same secret, or serving any of our names) is replaced."""
    kept = [
        entry
        for entry in current
        if (entry.get("servingCertificate") or {}).get("name") != secret
        and not set(entry.get("names") or []) & set(names)
    ]
    return [*kept, {"names": names, "servingCertificate": {"name": secret}}]


def merged_component_routes(current: list[Any], wanted: list[dict[str, Any]]) -> list[Any]:
    """Merge by (namespace, name): ours replace theirs, others keep their place."""
    keys = {(w["namespace"], w["name"]) for w in wanted}
    return [entry for entry in current if (entry.get("namespace"), entry.get("name")) not in keys] + wanted


def wanted_component_routes(ctx: context.Context) -> list[dict[str, Any]]:
    return [
        {
            "namespace": namespace,
            "name": name,
            "hostname": f"{prefix}.{ctx.site.apps_domain}",
            "servingCertKeyPairSecret": {"name": certificates.INGRESS_SECRET},
        }
        for namespace, name, prefix, _operator in COMPONENT_ROUTES
    ]


def _apiserver(ctx: context.Context) -> base.Change | None:
    names = [ctx.site.api_host]

    def mutate(obj: kube.Obj) -> kube.Obj:
        serving = obj.setdefault("spec", {}).setdefault("servingCerts", {})
        current = serving.get("namedCertificates") or []
        serving["namedCertificates"] = merged_named_certificates(current, names, certificates.API_SECRET)
        return obj

    current = ctx.kube.get(base.APISERVER_CLUSTER)
    return base.update(base.APISERVER_CLUSTER, current, mutate, rollouts=("kube-apiserver",), why="API certificate")


def _ingress(ctx: context.Context) -> base.Change | None:
    wanted = wanted_component_routes(ctx)

    def mutate(obj: kube.Obj) -> kube.Obj:
        spec = obj.setdefault("spec", {})
        spec["appsDomain"] = ctx.site.apps_domain
        spec["componentRoutes"] = merged_component_routes(spec.get("componentRoutes") or [], wanted)
        return obj

    current = ctx.kube.get(base.INGRESS_CLUSTER)
    change = base.update(base.INGRESS_CLUSTER, current, mutate, why="apps domain and component routes")
    if change is None:
        return None
    rollouts = ["console", "authentication"]
    if (current.get("spec") or {}).get("appsDomain") != ctx.site.apps_domain:
        rollouts.insert(0, "openshift-apiserver")
    return base.Change(
        change.ref, change.action, change.before, change.after, change.mutate, tuple(rollouts), change.why
    )


def _ingresscontroller(ctx: context.Context) -> base.Change | None:
    def mutate(obj: kube.Obj) -> kube.Obj:
        obj.setdefault("spec", {})["defaultCertificate"] = {"name": certificates.INGRESS_SECRET}
        return obj

    current = ctx.kube.get(base.DEFAULT_INGRESSCONTROLLER)
    return base.update(base.DEFAULT_INGRESSCONTROLLER, current, mutate, rollouts=("ingress",), why="router certificate")


def check_secrets(ctx: context.Context) -> None:
    """Refuse to reference a secret that is missing or does not hold a usable pair for its names."""
    api_names = (ctx.site.api_host,)
    ingress_names = (f"*.{ctx.site.apps_domain}",)
    for ref, names in (
        (API_SECRET, api_names),
        (INGRESS_SECRET_CONFIG, ingress_names),
        (INGRESS_SECRET_OPERAND, ingress_names),
    ):
        pair = certificates.tls_pair(ctx.kube.find(ref))
        problems = certs.check_pair(*pair, names, ctx.clock.now()) if pair else ["missing or incomplete"]
        if problems:
            raise errors.PermanentStepError(
                f"domain: not pointing the cluster at {ref}: {'; '.join(problems)}",
                hint="Run `snoreloc run --step certificates --force`, then run again.",
            )


class Domain:
    name = "domain"
    description = "switching the API and apps domain (kube-apiserver and ingress rollouts)"

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {"domain": ctx.site.domain}

    def plan(self, ctx: context.Context) -> base.Plan:
        # Ingress and router first, APIServer last: its rollout takes the API away for a minute.
        found = [_ingresscontroller(ctx), _ingress(ctx), _apiserver(ctx)]
        return base.Plan(self.name, tuple(c for c in found if c is not None))

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.Outcome:
        if not plan.empty:
            check_secrets(ctx)
        return apiserver_last.apply(ctx, plan)

    def verify(self, ctx: context.Context) -> None:
        base.verify_no_changes(ctx, self)

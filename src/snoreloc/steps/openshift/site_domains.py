"""The site domains snoreloc has set on this cluster, remembered in the cluster itself, so that a second relocation
(a corrected stick, a site that changed its mind, a move back) treats the routes on any of them as its own to move.

The record is a ConfigMap of our own, `openshift-config/snoreloc-site-domains` (our label; key `domains`, one site
domain a line, oldest first), written by the domain step together with the domain change. Why there:

- in the cluster, not the state directory: a state directory that is wiped, replaced or on another disk does not
  lose it, and any copy of snoreloc that reaches the API finds it;
- a ConfigMap of our own rather than an annotation on Ingress `cluster`: the Ingress is a shared object that users
  and the operators edit and that `rollback` restores to its factory content, which would take the memory with it
  while routes may still sit on a site domain; a labelled object of our name is refused if a user holds that name
  (`ownership.refuse_users`), is read with one GET and is plain to see with `oc get configmap -n
  openshift-config snoreloc-site-domains`;
- `openshift-config`, where snoreloc's other objects (its serving secrets) already live.

Its first write is backed up like every other (as created by us), so `rollback` deletes it: after a rollback the
routes are back on the factory domain and nothing needs remembering. The Ingress's current `appsDomain` also counts
as an earlier site's, so a cluster relocated before this record existed is handled the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

from snoreloc.adapters import kube
from snoreloc.steps import base, context
from snoreloc.steps.openshift import ownership

RECORD = kube.Ref(kube.CONFIGMAPS, "snoreloc-site-domains", "openshift-config")
KEY = "domains"


def _listed(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def remembered(obj: kube.Obj | None) -> tuple[str, ...]:
    """The site domains the record holds, oldest first (none when it is absent or not ours)."""
    if obj is None or not ownership.ours(obj):
        return ()
    return tuple(_listed(str((obj.get("data") or {}).get(KEY) or "")))


def earlier_apps_domains(ctx: context.Context, ingress: kube.Obj | None = None) -> tuple[str, ...]:
    """The apps domains of every site snoreloc set here before, other than this site's and the factory's: the
    record's, and the Ingress's current appsDomain (`ingress`: the Ingress `cluster` when the caller has it)."""
    spec = (ingress or ctx.kube.get(base.INGRESS_CLUSTER)).get("spec") or {}
    factory = str(spec.get("domain") or "")
    current = str(spec.get("appsDomain") or "")
    found = [f"apps.{domain}" for domain in remembered(ctx.kube.find(RECORD))] + ([current] if current else [])
    return tuple(d for d in dict.fromkeys(found) if d not in (factory, ctx.site.apps_domain))


def _with(domains: Iterable[str], domain: str) -> str:
    return "".join(f"{d}\n" for d in dict.fromkeys([*domains, domain]))


def _unrecorded(ctx: context.Context) -> list[str]:
    """The site domain the Ingress's appsDomain names (`apps.<domain>`) when it is neither the factory's nor this
    site's: a relocation made before this record existed."""
    spec = ctx.kube.get(base.INGRESS_CLUSTER).get("spec") or {}
    current = str(spec.get("appsDomain") or "")
    if not current.startswith("apps.") or current in (str(spec.get("domain") or ""), ctx.site.apps_domain):
        return []
    return [current.removeprefix("apps.")]


def change(ctx: context.Context) -> base.ObjectChange | None:
    """The record with this site's domain added (refused, before any write, when a user holds its name)."""
    current = ctx.kube.find(RECORD)
    ownership.refuse_users(RECORD, current, step="domain")
    why = f"remember site domain {ctx.site.domain} (a later relocation moves its routes too)"
    before = _unrecorded(ctx)
    if current is None:
        meta = {"name": RECORD.name, "namespace": RECORD.namespace, "labels": dict(ownership.MANAGED_BY)}
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta,
            "data": {KEY: _with(before, ctx.site.domain)},
        }
        return base.create(RECORD, body, why=why)

    def add(obj: kube.Obj) -> kube.Obj:
        obj.setdefault("data", {})[KEY] = _with([*remembered(obj), *before], ctx.site.domain)
        return obj

    return base.update(RECORD, current, add, why=why)


def _under(host: str, apps_domain: str) -> bool:
    host, apps_domain = host.rstrip(".").lower(), apps_domain.rstrip(".").lower()
    return host == apps_domain or host.endswith("." + apps_domain)


def _route_hosts(route: kube.Obj) -> list[str]:
    """A route's host, and the hosts its routers admitted it under (`status.ingress[].host`)."""
    status = route.get("status") or {}
    hosts = [str((route.get("spec") or {}).get("host") or "")]
    return [h for h in hosts + [str(i.get("host") or "") for i in status.get("ingress") or []] if h]


def in_use(ctx: context.Context, domains: Iterable[str]) -> dict[str, str]:
    """Of the site `domains`, those the cluster still uses, each with what is on it: the Ingress's appsDomain, or a
    route (the first found) whose host, or a host a router admitted it under, is under `apps.<domain>`. These are
    the names the cluster looks up itself (the authentication and console operators check their routes by name;
    the kubelet uses the factory's api-int, which no site domain replaces), so a site domain none of them is on is
    one the node may stop answering. The routes are read a page at a time."""
    wanted = {d.rstrip(".").lower(): f"apps.{d.rstrip('.').lower()}" for d in domains}
    spec = ctx.kube.get(base.INGRESS_CLUSTER).get("spec") or {}
    current = str(spec.get("appsDomain") or "").lower()
    found = {d: f"the Ingress's appsDomain is {apps}" for d, apps in wanted.items() if current == apps}
    for page in ctx.kube.pages(kube.ROUTES):
        for route in page:
            meta = route.get("metadata") or {}
            for d, apps in wanted.items():
                host = next((h for h in _route_hosts(route) if _under(h, apps)), None)
                if d not in found and host is not None:
                    found[d] = f"route {meta.get('namespace')}/{meta.get('name')} is on {host}"
        if len(found) == len(wanted):
            break
    return found

"""Routes: host generation (openshift-apiserver's admission), router admission status, and what the router serves.

The routing subdomain is the one piece of state here that is not in the store: openshift-apiserver reads it from
its own config, which changes only after its rollout (see `openshift_apiserver`). So `Routing` holds it, and a
switch fans out to the route status (canonical hostname) and to the owners of operator-managed routes, who give
their generated hosts the new suffix a little later. User routes keep their hosts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from snoreloc_sim.kube import model
from snoreloc_sim.openshift.operators import base, watch

Obj = model.Obj

GENERATED = "openshift.io/host.generated"
ROUTER = "default"
ADMIT_DELAY = 1.0  # cluster seconds for the router to admit a route
STATUS_RESYNC_DELAY = 2.0
OWNER_REGENERATE_DELAY = 10.0
OPERATOR_OWNED = frozenset(
    {
        ("openshift-ingress-canary", "canary"),
        ("openshift-monitoring", "alertmanager-main"),
        ("openshift-monitoring", "prometheus-k8s"),
        ("openshift-monitoring", "thanos-querier"),
    }
)


def effective_domain(ingress: Obj | None) -> str:
    """The routing subdomain an Ingress config asks for: `appsDomain` if set, else `domain`."""
    spec = (ingress or {}).get("spec") or {}
    return str(spec.get("appsDomain") or spec.get("domain") or "")


def generated_host(route: Obj, subdomain: str) -> str:
    meta, spec = route["metadata"], route.get("spec") or {}
    if spec.get("subdomain"):
        return f"{spec['subdomain']}.{subdomain}"
    return f"{meta['name']}-{meta.get('namespace', '')}.{subdomain}"


class Routing:
    """The routing subdomain openshift-apiserver currently uses, and who to tell when it changes."""

    def __init__(self, subdomain: str) -> None:
        self._lock = threading.Lock()
        self._subdomain = subdomain
        self._watchers: list[Callable[[str, str], None]] = []

    @property
    def subdomain(self) -> str:
        with self._lock:
            return self._subdomain

    def watch(self, fn: Callable[[str, str], None]) -> None:
        self._watchers.append(fn)

    def switch(self, subdomain: str) -> None:
        with self._lock:
            old, self._subdomain = self._subdomain, subdomain
        if old != subdomain:
            for fn in self._watchers:
                fn(old, subdomain)


def ingress_entry(route: Obj, subdomain: str, previous: list[Obj], now: str) -> Obj:
    """The router's `status.ingress[]` entry; the Admitted time survives while the host stays the same."""
    spec = route.get("spec") or {}
    host = spec.get("host", "")
    since = now
    for old in previous:
        if old.get("routerName") == ROUTER and old.get("host") == host:
            since = next((c.get("lastTransitionTime", now) for c in old.get("conditions") or []), now)
    return {
        "host": host,
        "routerName": ROUTER,
        "routerCanonicalHostname": f"router-{ROUTER}.{subdomain}",
        "wildcardPolicy": spec.get("wildcardPolicy") or "None",
        "conditions": [{"type": "Admitted", "status": "True", "lastTransitionTime": since}],
    }


def _shape(obj: Obj | None) -> object:
    """What the router reacts to: spec and annotations, not status."""
    if obj is None:
        return None
    return (obj.get("spec"), (obj.get("metadata") or {}).get("annotations"))


def _route_cert(route: Obj) -> model.ServedCert | None:
    tls = (route.get("spec") or {}).get("tls") or {}
    if tls.get("termination") not in ("edge", "reencrypt") or not tls.get("certificate") or not tls.get("key"):
        return None
    chain = tls["certificate"].rstrip("\n") + "\n" + (tls.get("caCertificate") or "")
    return model.ServedCert(chain.encode(), tls["key"].encode())


class RouteController:
    """Generates hosts on admission, admits routes (status), serves route certificates, follows the subdomain."""

    def __init__(self, cluster: model.Cluster, routing: Routing) -> None:
        self._cluster, self._routing = cluster, routing
        self._lock = threading.Lock()
        self._served: dict[tuple[str, str], str] = {}  # route -> host whose router cert it set

    def install(self) -> None:
        """Admission and the subdomain watch (store changes arrive through `watches`)."""
        self._cluster.admission.append(self.admit)
        self._routing.watch(self.on_switch)
        for route in self._cluster.store.list(base.rtype(self._cluster, base.ROUTES)):
            self._serve(route)

    def admit(self, rtype: model.ResourceType, obj: Obj, old: Obj | None) -> None:
        """Give a route without a host `<name>-<namespace>.<routing subdomain>`, as openshift-apiserver does.

        As in openshift/openshift-apiserver pkg/route/apiserver/registry/route/strategy.go: an update that clears
        the host keeps the old one (PrepareForUpdate), a host is generated only when there is none
        (routehostassignment.AllocateHost), and nothing ever removes `openshift.io/host.generated`: a route whose
        host was changed by a client keeps the marker it had."""
        if rtype.key != base.ROUTES:
            return
        spec = obj.setdefault("spec", {})
        annotations = obj.setdefault("metadata", {}).setdefault("annotations", {})
        if not spec.get("host") and old is not None and (old.get("spec") or {}).get("host"):
            spec["host"] = old["spec"]["host"]
        if not spec.get("host"):
            spec["host"] = generated_host(obj, self._routing.subdomain)
            annotations[GENERATED] = "true"
        if not annotations:
            obj["metadata"].pop("annotations")

    def watches(self) -> tuple[watch.Watch, ...]:
        """Every route: admitted (host, router status, served certificate) or, once deleted, no longer served."""
        return (watch.Watch(base.ROUTES, self._route_changed),)

    def _route_changed(self, change: watch.Change) -> None:
        old, new = change.old, change.new
        if new is None and old is not None:
            self._unserve(old)
            return
        if new is not None and (_shape(old) != _shape(new) or not (new.get("status") or {}).get("ingress")):
            meta = new["metadata"]
            ns, name = meta.get("namespace", ""), meta["name"]
            self._cluster.timeline.after(ADMIT_DELAY, lambda: self.sync(ns, name))

    def sync(self, namespace: str, name: str) -> None:
        """Bring one route's router status and served certificate up to date."""
        route = base.find(self._cluster, base.ROUTES, name, namespace)
        if route is None:
            return
        self._serve(route)
        status = route.setdefault("status", {})
        previous = status.get("ingress") or []
        entry = ingress_entry(route, self._routing.subdomain, previous, base.timestamp())
        if previous != [entry]:
            status["ingress"] = [entry]
            base.write_status(self._cluster, base.ROUTES, route)

    def _serve(self, route: Obj) -> None:
        key = (route["metadata"].get("namespace", ""), route["metadata"]["name"])
        host = (route.get("spec") or {}).get("host", "")
        cert = _route_cert(route)
        with self._lock:
            old_host = self._served.pop(key, None)
            if cert is not None:
                self._served[key] = host
        if old_host is not None and (old_host != host or cert is None):
            self._cluster.serving.remove("router", old_host)
        if cert is not None:
            self._cluster.serving.set("router", host, cert)

    def _unserve(self, route: Obj) -> None:
        key = (route["metadata"].get("namespace", ""), route["metadata"]["name"])
        with self._lock:
            host = self._served.pop(key, None)
        if host is not None:
            self._cluster.serving.remove("router", host)

    def on_switch(self, _old: str, new: str) -> None:
        self._cluster.timeline.after(STATUS_RESYNC_DELAY, self.resync_all)
        self._cluster.timeline.after(OWNER_REGENERATE_DELAY, lambda: self.regenerate_owned(new))

    def resync_all(self) -> None:
        for route in self._cluster.store.list(base.rtype(self._cluster, base.ROUTES)):
            self.sync(route["metadata"].get("namespace", ""), route["metadata"]["name"])

    def regenerate_owned(self, new: str) -> None:
        """The owners of operator-managed routes (ingress canary, monitoring) move generated hosts to `new`."""
        routes = base.rtype(self._cluster, base.ROUTES)
        for namespace, name in sorted(OPERATOR_OWNED):
            route = self._cluster.store.find(routes, name, namespace)
            if route is None or (route["metadata"].get("annotations") or {}).get(GENERATED) != "true":
                continue
            route["spec"]["host"] = generated_host(route, new)
            self._cluster.store.update(routes, route, check_rv=False)

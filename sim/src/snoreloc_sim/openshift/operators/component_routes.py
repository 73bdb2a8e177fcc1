"""Console and authentication operators: Ingress `spec.componentRoutes` give their routes custom hosts and certs.

Each operator consumes only its own (namespace, name) entries: console `openshift-console/console` and
`openshift-console/downloads` (served by extra routes `console-custom` / `downloads-custom` carrying the
certificate from the referenced `openshift-config` secret), authentication `openshift-authentication/
oauth-openshift` (the `oauth-openshift` route's host moves; the oauth server, behind a passthrough route,
presents the certificate itself). Both publish `status.componentRoutes` entries and roll out (~60-120 s). A
referenced secret that is missing or not a TLS pair leaves everything as it was and the operator Degraded.
Removing an entry reverts to the default host.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass

from snoreloc_sim.kube import model
from snoreloc_sim.openshift.operators import base, conditions, watch

Obj = model.Obj

CONFIG_NAMESPACE = "openshift-config"
APPLY_SECONDS = 30.0


@dataclass(frozen=True)
class Entry:
    """One consumed componentRoute: the (namespace, name) key and what the spec asks for."""

    namespace: str
    name: str
    hostname: str
    secret: str  # "" when the hostname is covered by the default wildcard certificate


@dataclass(frozen=True)
class Component:
    """What is fixed about one component route: its default host prefix and who consumes its secret."""

    namespace: str
    name: str
    prefix: str  # default host: <prefix>.<spec.domain>
    user: str

    def default_host(self, ingress: Obj | None) -> str:
        return f"{self.prefix}.{((ingress or {}).get('spec') or {}).get('domain', '')}"


CONSOLE_USER = "system:serviceaccount:openshift-console-operator:console-operator"
AUTH_USER = "system:serviceaccount:oauth-openshift:authentication-operator"  # sic: the operator's literal string
CONSOLE = Component("openshift-console", "console", "console-openshift-console", CONSOLE_USER)
DOWNLOADS = Component("openshift-console", "downloads", "downloads-openshift-console", CONSOLE_USER)
OAUTH = Component("openshift-authentication", "oauth-openshift", "oauth-openshift", AUTH_USER)
ALL = (CONSOLE, DOWNLOADS, OAUTH)


def desired(ingress: Obj | None, components: tuple[Component, ...]) -> dict[str, Entry]:
    """The spec entries these components consume, by component name."""
    wanted = {(c.namespace, c.name) for c in components}
    found: dict[str, Entry] = {}
    for item in ((ingress or {}).get("spec") or {}).get("componentRoutes") or []:
        key = (item.get("namespace"), item.get("name"))
        if key in wanted:
            secret = str((item.get("servingCertKeyPairSecret") or {}).get("name", ""))
            found[str(key[1])] = Entry(str(key[0]), str(key[1]), str(item.get("hostname", "")), secret)
    return found


def status_entry(component: Component, ingress: Obj | None, current: str, previous: Obj | None, now: str) -> Obj:
    """The `status.componentRoutes` entry an operator publishes for one of its routes."""
    healthy = [conditions.Condition("Degraded", "False"), conditions.Condition("Progressing", "False")]
    return {
        "namespace": component.namespace,
        "name": component.name,
        "defaultHostname": component.default_host(ingress),
        "currentHostnames": [current],
        "consumingUsers": [component.user],
        "relatedObjects": [
            {
                "group": "route.openshift.io",
                "resource": "routes",
                "namespace": component.namespace,
                "name": component.name,
            }
        ],
        "conditions": conditions.merge((previous or {}).get("conditions") or [], healthy, now),
    }


def publish(cluster: model.Cluster, component: Component, current: str) -> None:
    """Replace this component's entry in Ingress `cluster` `status.componentRoutes` (others are kept)."""
    ingress = base.find(cluster, base.INGRESSES, "cluster")
    if ingress is None:
        return
    status = ingress.setdefault("status", {})
    entries = list(status.get("componentRoutes") or [])
    key = (component.namespace, component.name)
    index = next((i for i, e in enumerate(entries) if (e.get("namespace"), e.get("name")) == key), None)
    entry = status_entry(component, ingress, current, entries[index] if index is not None else None, base.timestamp())
    if index is None:
        entries.append(entry)
    else:
        entries[index] = entry
    status["componentRoutes"] = entries
    base.write_status(cluster, base.INGRESSES, ingress)


class ComponentRouteOperator:
    """The common loop: watch the entries and their secrets, validate, roll out, apply, publish."""

    operator = ""
    components: tuple[Component, ...] = ()
    rollout_seconds = 90.0
    degraded_reason = "CustomRouteSync_FailedSetup"

    def __init__(self, cluster: model.Cluster) -> None:
        self._cluster = cluster
        self._lock = threading.Lock()
        self._serial = base.Serial(cluster, self.operator, self._plan)

    def watches(self) -> tuple[watch.Watch, ...]:
        """The cluster Ingress config (its component routes) and the secrets in openshift-config they name."""
        return (
            watch.Watch(base.INGRESSES, self._ingress_changed, name="cluster", events=watch.LIVE),
            watch.Watch(base.SECRETS, self._secret_changed, namespace=CONFIG_NAMESPACE, changed=("data",)),
        )

    def _ingress_changed(self, change: watch.Change) -> None:
        if desired(change.old, self.components) != desired(change.new, self.components):
            self._serial.request("ingresses.config.openshift.io/cluster componentRoutes")

    def _secret_changed(self, change: watch.Change) -> None:
        name = change.meta.get("name")
        ingress = base.find(self._cluster, base.INGRESSES, "cluster")
        if name in {e.secret for e in desired(ingress, self.components).values() if e.secret}:
            self._serial.request(f"secret {CONFIG_NAMESPACE}/{name} changed")

    def _plan(self, trigger: str) -> list[base.Step]:
        entries = desired(base.find(self._cluster, base.INGRESSES, "cluster"), self.components)
        try:
            pairs = {name: self._load(entry) for name, entry in entries.items()}
        except base.BadSecret as exc:
            problem = str(exc)
            return [(0.0, lambda: self._degraded(problem))]
        message = self.progress_message()
        return [
            (0.0, lambda: conditions.set_operator(self._cluster, self.operator, self._progressing(message))),
            (APPLY_SECONDS, lambda: self.apply(entries, pairs)),
            (
                self.rollout_seconds - APPLY_SECONDS,
                lambda: conditions.set_operator(self._cluster, self.operator, conditions.settled()),
            ),
        ]

    def _load(self, entry: Entry) -> model.ServedCert | None:
        if not entry.secret:
            return None
        try:
            return base.load_tls(self._cluster, CONFIG_NAMESPACE, entry.secret)
        except base.BadSecret as exc:
            raise base.BadSecret(f"componentRoute {entry.namespace}/{entry.name}: {exc}") from exc

    def _progressing(self, message: str) -> list[conditions.Condition]:
        return conditions.progressing("Deployment_NewGeneration", message)

    def _degraded(self, problem: str) -> None:
        message = f"CustomRouteSyncDegraded: {problem}"
        conditions.set_operator(self._cluster, self.operator, conditions.degraded(self.degraded_reason, message))

    def progress_message(self) -> str:
        raise NotImplementedError

    def apply(self, entries: dict[str, Entry], pairs: dict[str, model.ServedCert | None]) -> None:
        raise NotImplementedError


class ConsoleOperator(ComponentRouteOperator):
    """`console-custom` / `downloads-custom` routes in openshift-console; the console URL follows."""

    operator = "console"
    components = (CONSOLE, DOWNLOADS)
    rollout_seconds = 90.0

    def progress_message(self) -> str:
        return "SyncLoopRefreshProgressing: Working toward version with new console route configuration"

    def apply(self, entries: dict[str, Entry], pairs: dict[str, model.ServedCert | None]) -> None:
        ingress = base.find(self._cluster, base.INGRESSES, "cluster")
        for component in self.components:
            entry = entries.get(component.name)
            if entry is None:
                self._delete_custom(component)
                current = self._route_host(component) or component.default_host(ingress)
            else:
                self._write_custom(component, entry, pairs.get(component.name))
                current = entry.hostname
            publish(self._cluster, component, current)
            if component is CONSOLE:
                self._console_url(current)

    def _route_host(self, component: Component) -> str:
        route = base.find(self._cluster, base.ROUTES, component.name, component.namespace)
        return str(((route or {}).get("spec") or {}).get("host", ""))

    def _write_custom(self, component: Component, entry: Entry, cert: model.ServedCert | None) -> None:
        routes = base.rtype(self._cluster, base.ROUTES)
        name = f"{component.name}-custom"
        body = custom_route(component, name, entry.hostname, cert)
        existing = self._cluster.store.find(routes, name, component.namespace)
        if existing is None:
            self._cluster.store.create(routes, body)
        else:
            existing["spec"] = body["spec"]
            self._cluster.store.update(routes, existing, check_rv=False)

    def _delete_custom(self, component: Component) -> None:
        routes = base.rtype(self._cluster, base.ROUTES)
        if self._cluster.store.find(routes, f"{component.name}-custom", component.namespace) is not None:
            self._cluster.store.delete(routes, f"{component.name}-custom", component.namespace)

    def _console_url(self, host: str) -> None:
        console = base.find(self._cluster, base.CONSOLES, "cluster")
        if console is not None:
            console.setdefault("status", {})["consoleURL"] = f"https://{host}"
            base.write_status(self._cluster, base.CONSOLES, console)


def custom_route(component: Component, name: str, host: str, cert: model.ServedCert | None) -> Obj:
    tls: Obj = {"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"}
    if cert is not None:
        tls.update(certificate=cert.cert_pem.decode(), key=cert.key_pem.decode())
    return {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": name, "namespace": component.namespace, "labels": {"app": "console"}},
        "spec": {
            "host": host,
            "to": {"kind": "Service", "name": component.name, "weight": 100},
            "port": {"targetPort": "https" if component is CONSOLE else "http"},
            "tls": tls,
            "wildcardPolicy": "None",
        },
    }


class AuthenticationOperator(ComponentRouteOperator):
    """The `oauth-openshift` route's host; the oauth server presents the custom certificate (passthrough)."""

    operator = "authentication"
    components = (OAUTH,)
    rollout_seconds = 110.0
    degraded_reason = "CustomRouteController_SyncError"
    synced_secret = "v4-0-config-system-custom-router-certs"  # noqa: S105 (a secret's name)

    def __init__(self, cluster: model.Cluster) -> None:
        super().__init__(cluster)
        self._served_host = ""

    def progress_message(self) -> str:
        return (
            "OAuthServerDeploymentProgressing: deployment/oauth-openshift.openshift-authentication: "
            "rolling out the oauth server with the new route configuration"
        )

    def apply(self, entries: dict[str, Entry], pairs: dict[str, model.ServedCert | None]) -> None:
        ingress = base.find(self._cluster, base.INGRESSES, "cluster")
        entry = entries.get(OAUTH.name)
        host = entry.hostname if entry is not None else OAUTH.default_host(ingress)
        self._move_route(host)
        self._sync_secret(entry, pairs.get(OAUTH.name))
        self._serve(host, pairs.get(OAUTH.name))
        write_oauth_metadata(self._cluster, host)
        publish(self._cluster, OAUTH, host)

    def _move_route(self, host: str) -> None:
        routes = base.rtype(self._cluster, base.ROUTES)
        route = self._cluster.store.find(routes, OAUTH.name, OAUTH.namespace)
        if route is not None and route["spec"].get("host") != host:
            route["spec"]["host"] = host
            self._cluster.store.update(routes, route, check_rv=False)

    def _sync_secret(self, entry: Entry | None, cert: model.ServedCert | None) -> None:
        secrets = base.rtype(self._cluster, base.SECRETS)
        existing = self._cluster.store.find(secrets, self.synced_secret, OAUTH.namespace)
        if entry is None or cert is None:
            if existing is not None:
                self._cluster.store.delete(secrets, self.synced_secret, OAUTH.namespace)
            return
        data = {"tls.crt": base.b64(cert.cert_pem), "tls.key": base.b64(cert.key_pem)}
        if existing is None:
            body = {"metadata": {"name": self.synced_secret, "namespace": OAUTH.namespace}, "type": "kubernetes.io/tls"}
            self._cluster.store.create(secrets, {**body, "data": data})
        else:
            existing["data"] = data
            self._cluster.store.update(secrets, existing, check_rv=False)

    def _serve(self, host: str, cert: model.ServedCert | None) -> None:
        with self._lock:
            old, self._served_host = self._served_host, host if cert is not None else ""
        if old and old != host:
            self._cluster.serving.remove("router", old)
        if cert is not None:
            self._cluster.serving.set("router", host, cert)
        elif old == host:
            self._cluster.serving.remove("router", host)


# The OAuth server's discovery document, which the kube-apiserver serves at /.well-known/oauth-authorization-server.
# The authentication operator publishes it in `openshift-config-managed/oauth-openshift` (key `oauthMetadata`),
# built from the oauth route's host (inferred from cluster-authentication-operator; not verified against a live
# cluster); cluster-kube-apiserver-operator copies it to `openshift-kube-apiserver/oauth-metadata`, which is one of
# its revisioned config maps (openshift/cluster-kube-apiserver-operator pkg/operator/starter.go,
# `RevisionConfigMaps`: `{Name: "oauth-metadata", Optional: true}`). So a new oauth host means a new revision.
METADATA_NAMESPACE = "openshift-config-managed"
METADATA_NAME = "oauth-openshift"
METADATA_KEY = "oauthMetadata"


def oauth_metadata(host: str) -> str:
    issuer = f"https://{host}"
    document = {
        "issuer": issuer,
        "authorization_endpoint": f"{issuer}/oauth/authorize",
        "token_endpoint": f"{issuer}/oauth/token",
        "response_types_supported": ["code", "token"],
        "grant_types_supported": ["authorization_code", "implicit"],
        "code_challenge_methods_supported": ["plain", "S256"],
    }
    return json.dumps(document, indent=2)


def oauth_metadata_configmap(host: str) -> Obj:
    return {
        "metadata": {"name": METADATA_NAME, "namespace": METADATA_NAMESPACE},
        "data": {METADATA_KEY: oauth_metadata(host)},
    }


def write_oauth_metadata(cluster: model.Cluster, host: str) -> None:
    """Publish the metadata for `host` (no write when it already says so)."""
    configmaps = base.rtype(cluster, base.CONFIGMAPS)
    existing = cluster.store.find(configmaps, METADATA_NAME, METADATA_NAMESPACE)
    wanted = oauth_metadata_configmap(host)
    if existing is None:
        cluster.store.create(configmaps, wanted)
    elif existing.get("data") != wanted["data"]:
        existing["data"] = wanted["data"]
        cluster.store.update(configmaps, existing, check_rv=False)

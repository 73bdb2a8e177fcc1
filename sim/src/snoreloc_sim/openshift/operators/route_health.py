"""The authentication and console operators' route checks: each GETs its route by name, from a pod, so a host
the cluster cannot resolve makes the operator unavailable, and after two minutes degraded.

Sources (openshift/cluster-authentication-operator, openshift/console-operator, openshift/library-go):

- authentication: `pkg/controllers/oauthendpoints/oauth_endpoints_controller.go` `NewOAuthRouteCheckController`
  builds an endpoint-accessible controller named "OAuthServerRoute" over `https://<admitted route host>/healthz`
  of `openshift-authentication/oauth-openshift`; `pkg/libs/endpointaccessible/endpoint_accessible_controller.go`
  `sync` sets `OAuthServerRouteEndpointAccessibleControllerAvailable` False, reason `EndpointUnavailable`, with
  the request's error (a ":53: no such host" error gets " (this is likely result of malfunctioning DNS server)"
  appended by `humanizeError`), and returns the error, which `WithSyncDegradedOnError` turns into
  `OAuthServerRouteEndpointAccessibleControllerDegraded` True, reason `SyncError`. It resyncs every
  `wait.Jitter(time.Minute, 1.0)` (1 to 2 minutes; modelled as 60 s) and on route and ingress events.
- console: `pkg/console/controllers/healthcheck/controller.go` `Sync`/`CheckRouteHealth` GETs the active route
  (`console-custom` when a custom hostname is set, else `console`) every 30 s and on route events; a failed GET
  sets `RouteHealthDegraded` True and `RouteHealthAvailable` False, both reason `FailedGet`, message
  `failed to GET route (https://<host>): <error>` (`pkg/console/status/status.go` names the types).
- the ClusterOperator (library-go `pkg/operator/status/condition.go` `UnionCondition`, `status_controller.go`):
  a False `*Available` makes Available False at once, reason `<type minus "Available">_<reason>`, message
  `<type>: <message>`; a True `*Degraded` makes Degraded True only once it has lasted the status controller's
  `degradedInertia` of 2 minutes.

Only name resolution is modelled as the cause (see `snoreloc_sim.openshift.dns`): a host that resolves is served by the
simulated router. Checks run only while something could change the answer (a route, the Ingress, the node's or
the site's DNS) or while one fails, so a healthy cluster's timeline still goes idle.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from snoreloc_sim.kube import model
from snoreloc_sim.openshift import dns
from snoreloc_sim.openshift.operators import base, conditions, watch

Obj = model.Obj

DEGRADED_INERTIA = 120.0  # library-go status controller: MustNewInertia(2 * time.Minute)
EVENT_DELAY = 1.0  # an informer event reaches the controller's queue


@dataclass(frozen=True)
class Check:
    """One operator's route check: what it GETs and how a failure reads."""

    operator: str
    namespace: str
    prefix: str  # the sub-condition types are <prefix>Available / <prefix>Degraded
    resync: float
    available_reason: str
    degraded_reason: str
    urls: Callable[[model.Cluster], list[str]]
    describe: Callable[[str, str], str]  # (url, error) -> the sub-condition's message


def _admitted_hosts(route: Obj | None) -> list[str]:
    hosts = []
    for entry in ((route or {}).get("status") or {}).get("ingress") or []:
        admitted = any(c.get("type") == "Admitted" and c.get("status") == "True" for c in entry.get("conditions") or [])
        if entry.get("host") and admitted:
            hosts.append(str(entry["host"]))
    return hosts


def oauth_urls(cluster: model.Cluster) -> list[str]:
    route = base.find(cluster, base.ROUTES, "oauth-openshift", "openshift-authentication")
    return [f"https://{host}/healthz" for host in _admitted_hosts(route)]


def console_urls(cluster: model.Cluster) -> list[str]:
    custom = base.find(cluster, base.ROUTES, "console-custom", "openshift-console")
    route = custom or base.find(cluster, base.ROUTES, "console", "openshift-console")
    host = str(((route or {}).get("spec") or {}).get("host", ""))
    return [f"https://{host}"] if host and _admitted_hosts(route) else []


def _oauth_message(url: str, error: str) -> str:
    return f'Get "{url}": {error} (this is likely result of malfunctioning DNS server)'


def _console_message(url: str, error: str) -> str:
    return f'failed to GET route ({url}): Get "{url}": {error}'


AUTHENTICATION = Check(
    "authentication",
    "openshift-authentication",
    "OAuthServerRouteEndpointAccessibleController",
    60.0,
    "EndpointUnavailable",
    "SyncError",
    oauth_urls,
    _oauth_message,
)
CONSOLE = Check(
    "console", "openshift-console", "RouteHealth", 30.0, "FailedGet", "FailedGet", console_urls, _console_message
)


class RouteHealth:
    """One operator's route check against the cluster's name resolution."""

    def __init__(self, cluster: model.Cluster, resolution: dns.Resolution, check: Check) -> None:
        self._cluster, self._resolution, self._check = cluster, resolution, check
        self._lock = threading.Lock()
        self._pending = False
        self._failing_since: float | None = None  # wall time of the first failed check of this episode
        resolution.subscribe(self.request)

    def watches(self) -> tuple[watch.Watch, ...]:
        """The operator's own routes and the cluster Ingress config (the domain its hosts are in)."""
        return (
            watch.Watch(base.ROUTES, self._changed, namespace=self._check.namespace),
            watch.Watch(base.INGRESSES, self._changed, name="cluster"),
        )

    def _changed(self, _change: watch.Change) -> None:
        self.request()

    def request(self, delay: float = EVENT_DELAY) -> None:
        with self._lock:
            if self._pending:
                return
            self._pending = True
        self._cluster.timeline.after(delay, self._sync)

    def _sync(self) -> None:
        with self._lock:
            self._pending = False
        urls = self._check.urls(self._cluster)
        errors = [(url, err) for url in urls if (err := self._resolution.failure(_host(url))) is not None]
        if urls and len(errors) == len(urls):  # available while at least one endpoint answers
            self._failed(errors)
            self.request(self._check.resync)
        else:
            self._recovered()

    def _failed(self, errors: list[tuple[str, str]]) -> None:
        check = self._check
        message = "\n".join(check.describe(url, err) for url, err in errors)
        now = time.monotonic()
        with self._lock:
            since = self._failing_since = self._failing_since or now
        held = {
            "Available": conditions.Condition(
                "Available",
                "False",
                f"{check.prefix}_{check.available_reason}",
                f"{check.prefix}Available: {message}",
            )
        }
        if now - since >= self._cluster.timeline.scaled(DEGRADED_INERTIA):
            reason, text = f"{check.prefix}_{check.degraded_reason}", f"{check.prefix}Degraded: {message}"
            held["Degraded"] = conditions.Condition("Degraded", "True", reason, text)
        self._cluster.overlays[check.operator] = held
        conditions.set_operator(self._cluster, check.operator, [])

    def _recovered(self) -> None:
        with self._lock:
            was_failing, self._failing_since = self._failing_since is not None, None
        if not was_failing:
            return
        self._cluster.overlays.pop(self._check.operator, None)
        healthy = [conditions.Condition("Available", "True"), conditions.Condition("Degraded", "False")]
        conditions.set_operator(self._cluster, self._check.operator, healthy)


def _host(url: str) -> str:
    return url.split("://", 1)[-1].split("/", 1)[0]


def start(cluster: model.Cluster, resolution: dns.Resolution) -> list[RouteHealth]:
    """Both checks, each looking once now (the seed's factory names resolve through the node's dnsmasq)."""
    checks = [RouteHealth(cluster, resolution, AUTHENTICATION), RouteHealth(cluster, resolution, CONSOLE)]
    for check in checks:
        check.request()
    return checks

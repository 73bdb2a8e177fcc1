"""The controller process: kopf watches the Sites, and every event or sweep runs the one idempotent reconcile.

kopf (PyPI `kopf`) lists and watches `sites.fleet.snoreloc.io` (relisting after a 410 Gone, reconnecting with
back-off), and calls a low-level `on.event` handler: no handler progress or diff-base annotations are written to
the Sites, no finalizer is added (owned objects go with a Site through ownerReferences), kopf's own event posting
is off (the controller posts its own Events, only on phase changes) and its peering is standalone. The handler
only records the Site's key in the in-memory index and reconciles it; a sweep thread reconciles every known key
every `sweep` seconds (a node that went silent, a token near its renewal) without a per-Site timer. Reconciles of
one key never overlap. Only Sites are watched: Secrets and ConfigMaps are read on demand, nothing else is cached.

API writes of the reconcile go through a token bucket (`qps`, `burst`): kopf itself has no client-side rate
limiter, and a hub restarted with thousands of Sites must not flood its API server.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import kopf
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from snoreloc import errors
from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc_fleet import credentials, site
from snoreloc_fleet.controller import reconcile as reconcile_mod
from snoreloc_fleet.ops.metrics import FleetMetrics

LOG = logging.getLogger(__name__)
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class TokenBucket:
    """At most `qps` writes a second on average, `burst` at once; `take` blocks until a token is there."""

    def __init__(self, qps: float, burst: int, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.qps, self.burst = qps, burst
        self._tokens = float(burst)
        self._monotonic = monotonic
        self._last = monotonic()
        self._lock = threading.Lock()

    def take(self) -> float:
        """Take one token; returns the seconds waited."""
        with self._lock:
            now = self._monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            wait = -self._tokens / self.qps if self._tokens < 0 else 0.0
        if wait:
            time.sleep(wait)
        return wait


class LimitedClient(kube.Client):
    """The agent's kube client (official client + tenacity) with the controller's write rate limit."""

    bucket: TokenBucket | None = None
    metrics: FleetMetrics | None = None

    def request(self, method: str, path: str, **options: Any) -> Any:
        if self.bucket is not None and method in WRITE_METHODS:
            self.bucket.take()
        if self.metrics is None:
            return super().request(method, path, **options)
        query = options.get("query")
        try:
            result = super().request(method, path, **options)
        except kube.ApiError as exc:
            self.metrics.request(method, path, query, str(exc.status))
            raise
        except kube.Unreachable:
            self.metrics.request(method, path, query, "unreachable")
            raise
        self.metrics.request(method, path, query, "2xx")
        return result


@dataclass
class Options:
    """How to run: the controller's own API access (`kubeconfig`; None: in-cluster), and its knobs."""

    config: reconcile_mod.Config
    kubeconfig: str | None = None
    namespaces: tuple[str, ...] = ()  # none: every namespace
    sweep: float = 300.0
    qps: float = 20.0
    burst: int = 40
    workers: int = 4
    clock: clock_mod.Clock = field(default_factory=clock_mod.SystemClock)
    metrics: FleetMetrics | None = None  # the controller's Prometheus metrics (`snoreloc_fleet.ops.metrics`)


def configuration_for(kubeconfig: str | None) -> k8s_client.Configuration:
    configuration = k8s_client.Configuration()
    if kubeconfig is None:
        k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, client_configuration=configuration
        )
    configuration.retries = False
    return configuration


def connection(configuration: k8s_client.Configuration) -> kopf.ConnectionInfo:
    """kopf's credentials from the same configuration the reconcile's client uses."""
    header = configuration.get_api_key_with_prefix("BearerToken") or configuration.get_api_key_with_prefix(
        "authorization"
    )
    token = header.split(" ", 1)[-1] if header else None
    return kopf.ConnectionInfo(
        server=configuration.host,
        ca_path=configuration.ssl_ca_cert,
        insecure=not configuration.verify_ssl,
        scheme="Bearer" if token else None,
        token=token,
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
    )


class Controller:
    """The index of known Sites, the per-key locks, the reconcile, the sweep."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.configuration = configuration_for(options.kubeconfig)
        self.client = LimitedClient(k8s_client.ApiClient(self.configuration), clock=options.clock)
        self.client.bucket = TokenBucket(options.qps, options.burst)
        self.client.metrics = options.metrics
        self.counters = reconcile_mod.Counters()
        self.known: set[tuple[str, str]] = set()
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._guard = threading.Lock()

    def _lock(self, key: tuple[str, str]) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def reconcile(self, namespace: str, name: str) -> reconcile_mod.Outcome | None:
        key = (namespace, name)
        with self._lock(key):
            now = self.options.clock.now().astimezone(dt.UTC)
            ref = reconcile_mod.site_ref(namespace, name)
            outcome = reconcile_mod.reconcile(self.client, self.options.config, ref, now, self.counters)
        if outcome is None:
            with self._guard:
                self.known.discard(key)
                self._locks.pop(key, None)
        return outcome

    def on_event(self, event: dict[str, Any], namespace: str, name: str) -> None:
        metrics = self.options.metrics
        if metrics is not None:
            metrics.seen(event)
        try:
            self._on_event(event, namespace, name)
        except Exception as exc:
            if metrics is not None:
                metrics.error(exc)
            raise

    def _on_event(self, event: dict[str, Any], namespace: str, name: str) -> None:
        if event.get("type") == "DELETED":
            with self._guard:
                self.known.discard((namespace, name))
            uid = str(((event.get("object") or {}).get("metadata") or {}).get("uid", ""))
            with self._lock((namespace, name)):
                credentials.remove(self.client, namespace, name, uid)
            return
        with self._guard:
            self.known.add((namespace, name))
        try:
            self.reconcile(namespace, name)
        except kube.Conflict as exc:  # someone wrote first: read again, soon
            raise kopf.TemporaryError(f"conflict: {exc.message}", delay=1.0) from exc

    def run(self, stop: threading.Event, ready: threading.Event | None = None) -> None:
        """kopf's watch and handlers, and the sweep, until `stop` is set."""
        sweeper = threading.Thread(target=self.sweep, args=(stop,), name="site-sweep", daemon=True)
        sweeper.start()
        try:
            kopf.run(
                loop=asyncio.new_event_loop(),
                registry=registry_for(self),
                standalone=True,
                clusterwide=not self.options.namespaces,
                namespaces=list(self.options.namespaces),
                stop_flag=stop,
                ready_flag=ready,
            )
        finally:
            stop.set()
            sweeper.join(5.0)
            self.client.close()

    def sweep(self, stop: threading.Event) -> None:
        """Every `sweep` seconds, reconcile every known Site (staleness, token renewal) until `stop`."""
        while not stop.wait(self.options.sweep):
            with self._guard:
                keys = sorted(self.known)
            for namespace, name in keys:
                if stop.is_set():
                    return
                try:
                    self.reconcile(namespace, name)
                except Exception as exc:  # one Site's trouble must not end the sweep
                    if self.options.metrics is not None:
                        self.options.metrics.error(exc)
                    LOG.warning("sweep of site %s/%s: %s", namespace, name, exc)


def registry_for(controller: Controller) -> kopf.OperatorRegistry:
    """kopf's handlers for this controller, in a registry of their own (tests run several controllers)."""
    registry = kopf.OperatorRegistry()
    options = controller.options

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False  # our Events only, on phase changes
        settings.scanning.disabled = True  # no CRD/namespace watching: only Sites
        settings.peering.standalone = True
        settings.persistence.progress_storage = kopf.SmartProgressStorage(prefix=site.GROUP)
        settings.execution.max_workers = options.workers  # threads running reconciles at once
        # kopf's per-Site queue workers stay unlimited: each lingers `idle_timeout` (5 s) after its last event, so a
        # limit of N made a burst of new Sites wait 5 s per N of them (measured: 1.25 s a Site with N = 4).
        settings.watching.server_timeout = 300
        settings.watching.client_timeout = 330
        settings.networking.request_timeout = 60

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return connection(controller.configuration)

    @kopf.on.event(site.GROUP, site.VERSION, site.PLURAL, id="reconcile", registry=registry)  # type: ignore[arg-type]
    def on_site(event: dict[str, Any], namespace: str, name: str, **_: Any) -> None:
        controller.on_event(event, namespace, name)

    return registry


def run(options: Options, *, stop: threading.Event | None = None, ready: threading.Event | None = None) -> Controller:
    """Run a controller until `stop` is set (or a signal, in the main thread); returns it, for its counters."""
    controller = Controller(options)
    controller.run(stop or threading.Event(), ready)
    return controller


class Background:
    """A controller running in a thread of this process until `stop()`: the fleet demo's hub and the hub tests'.
    `controller` exposes its counters. Starting and stopping are each bounded by `budget` seconds."""

    def __init__(self, options: Options, *, budget: float = 30.0) -> None:
        self.controller = Controller(options)
        self.budget = budget
        self._stop, self._ready = threading.Event(), threading.Event()
        self._thread = threading.Thread(
            target=self.controller.run, args=(self._stop, self._ready), name="site-controller", daemon=True
        )
        self._thread.start()
        if not self._ready.wait(budget):
            self.stop()
            raise errors.TemporaryError(f"the Site controller did not start within {budget:g}s")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(self.budget)
        if self._thread.is_alive():
            raise errors.TemporaryError(f"the Site controller did not stop within {self.budget:g}s")

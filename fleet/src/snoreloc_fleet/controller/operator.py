"""The controller process: kopf watches the Sites, a queue of their keys feeds a pool of reconcile workers.

kopf (PyPI `kopf`) lists (in pages of `LIST_CHUNK`) and watches `sites.fleet.snoreloc.io` (relisting after a 410
Gone, reconnecting with back-off), and calls a low-level `on.event` handler: no handler progress or diff-base
annotations are written to the Sites, kopf adds no finalizer (owned objects go with a Site through ownerReferences;
the BMC cycle holds its own only while a BMC may hold a Site's image, `controller.bmccycle`),
kopf's own event posting is off (the controller posts its own Events, only on phase changes) and its peering is
standalone. The handler runs in kopf's event loop and does not reconcile: it notes the Site's key in the index of
known Sites and adds it to a deduplicating queue (`workqueue`, client-go's semantics), then returns, so kopf drops
the event's body at once (and its per-Site task `IDLE_S` later) instead of holding thousands of bodies while
reconciles crawl. `workers` threads take keys and run the one idempotent reconcile, which reads the Site afresh:
a burst of events for one Site coalesces into one reconcile, a key that changes while a worker holds it is
reconciled once more afterwards, and no key is reconciled by two workers at once. A failed reconcile (a 409:
someone wrote first) comes back after a per-key back-off. The watch event that merely reports the controller's own
write back (its resourceVersion is the one the write's answer gave, `Echoes`) wakes no second reconcile. A sweep
thread queues every known key every `sweep` seconds (a node that went silent, a token near its renewal) without a
per-Site timer. Memory is O(Sites) in keys, never in bodies. Only Sites are watched: Secrets and ConfigMaps are read
on demand, nothing else is cached.

Waves (`waves.fleet.snoreloc.io`) are watched too, into a queue of their own with one worker (`controller.waves`:
a wave's pass lists its Sites; waves are few). A Site's event, or a Site reconcile that changed its status, queues
the waves the Site is in (their members as of each wave's last pass; a new Site queues its namespace's waves); a
wave's pass queues the Sites whose gate it wrote (their own reconcile decides their credential from it), since the
watch reports that write back as the controller's own.

API writes of the reconcile go through a token bucket (`qps`, `burst`): kopf itself has no client-side rate
limiter, and a hub restarted with thousands of Sites must not flood its API server; the bucket, not the number of
workers, sets the pace of a bulk add.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import posixpath
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import kopf

from snoreloc.siblings import clock as clock_mod
from snoreloc.siblings import errors, kube
from snoreloc_fleet.controller import bmccycle, startup, waves, workqueue
from snoreloc_fleet.controller import reconcile as reconcile_mod
from snoreloc_fleet.controller.metrics import FleetMetrics
from snoreloc_fleet.hub import credentials
from snoreloc_fleet.resource import site
from snoreloc_fleet.resource import wave as wave_mod

LOG = logging.getLogger(__name__)
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
RETRY_S = 1.0  # a failed reconcile's first retry; doubled per failure in a row, at most the sweep's period
STOP_S = 10.0  # for the workers to finish their reconciles when the controller stops
LIST_CHUNK = 500  # Sites a page when kopf lists them (client-go's pager default, tools/pager/pager.go)
IDLE_S = 0.5  # how long kopf keeps a Site's per-object task (and its last event) after the event
BMC_WORKERS = 4  # BMC cycles at once (`controller.bmccycle`): each waits on a BMC for seconds
WORKERS = 8  # reconciles at once: they wait on the API, so more than the cores; the write limit sets the pace
Key = tuple[str, str]  # (namespace, name)


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
    """The agent's kube client (official client + tenacity) with the controller's write rate limit, which sends no
    request whose path is not already normal: the client would resolve a `..` in it, and so reach another
    namespace's object (every name from a Site is checked before, by `siteinput`; this is the last line)."""

    bucket: TokenBucket | None = None
    metrics: FleetMetrics | None = None
    echoes: Echoes | None = None

    def request(self, method: str, path: str, **options: Any) -> Any:
        if posixpath.normpath(path) != path:
            raise errors.InternalError(f"refused to send {method} to a path that is not normal: {path[:300]!r}")
        if self.bucket is not None and method in WRITE_METHODS:
            self.bucket.take()
        result = self._counted(method, path, **options)
        if self.echoes is not None and method in WRITE_METHODS:
            self.echoes.wrote(result)
        return result

    def _counted(self, method: str, path: str, **options: Any) -> Any:
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
class WaveCounters:
    """Wave passes and what they wrote (tests and the benchmark read them)."""

    passes: int = 0
    status_writes: int = 0
    gate_writes: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, outcome: waves.Outcome | None) -> None:
        with self.lock:
            self.passes += 1
            if outcome is not None:
                self.status_writes += int(outcome.wrote)
                self.gate_writes += len(outcome.gated)


@dataclass
class Options:
    """How to run: the controller's own API access (`kubeconfig`; None: in-cluster), and its knobs."""

    config: reconcile_mod.Config
    kubeconfig: str | None = None
    namespaces: tuple[str, ...] = ()  # none: every namespace
    sweep: float = 300.0
    qps: float = 20.0
    burst: int = 40
    workers: int = WORKERS
    clock: clock_mod.Clock = field(default_factory=clock_mod.SystemClock)
    metrics: FleetMetrics | None = None  # the controller's Prometheus metrics (`snoreloc_fleet.controller.metrics`)
    image_server: bmccycle.ServerOptions | None = None  # BMC delivery's image server (None: off)
    bmc_workers: int = BMC_WORKERS


def configuration_for(kubeconfig: str | None, clock: clock_mod.Clock | None = None) -> kube.Configuration:
    return kube.configuration(kubeconfig, clock or clock_mod.SystemClock())


def connection(configuration: kube.Configuration) -> kopf.ConnectionInfo:
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


class Echoes:
    """The resourceVersions the controller's own writes gave each Site, so that the watch event reporting such a
    write back wakes no second reconcile: the reconcile that wrote it had already converged on that state. Any other
    write (a node's report, a user's edit) has a resourceVersion of its own and is reconciled. A version is consumed
    by its event; at most `LIMIT` are kept a Site (an event that raced ahead of its write's answer just costs one
    reconcile), and a deleted Site's are dropped: memory O(Sites being written)."""

    LIMIT = 4

    def __init__(self) -> None:
        self._versions: dict[Key, list[str]] = {}
        self._lock = threading.Lock()
        self.skipped = 0

    def wrote(self, obj: Any) -> None:
        """The API's answer to a write: if it is a Site, remember the version it now has."""
        if not isinstance(obj, dict) or obj.get("kind") != site.KIND or obj.get("apiVersion") != site.API_VERSION:
            return
        meta = obj.get("metadata") or {}
        key, version = (str(meta.get("namespace", "")), str(meta.get("name", ""))), meta.get("resourceVersion")
        if version:
            with self._lock:
                versions = self._versions.setdefault(key, [])
                versions.append(str(version))
                del versions[: -self.LIMIT]

    def is_echo(self, key: Key, version: str) -> bool:
        """Whether `version` of Site `key` is one the controller wrote (consumed: asked once per event)."""
        with self._lock:
            versions = self._versions.get(key)
            if not versions or version not in versions:
                return False
            versions.remove(version)
            if not versions:
                del self._versions[key]
            self.skipped += 1
            return True

    def forget(self, key: Key) -> None:
        with self._lock:
            self._versions.pop(key, None)


class Controller:
    """The index of known Sites, the queue of Sites to reconcile and its workers, the sweep."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.configuration = configuration_for(options.kubeconfig, options.clock)
        pool = self.configuration.connection_pool_maxsize  # a connection a worker (the default: 5 a CPU)
        self.configuration.connection_pool_maxsize = max(pool, options.workers)
        self.client = LimitedClient(kube.api_client(self.configuration), clock=options.clock)
        self.client.bucket = TokenBucket(options.qps, options.burst)
        self.client.metrics = options.metrics
        self.echoes = self.client.echoes = Echoes()
        self.counters = reconcile_mod.Counters()
        self.queue: workqueue.WorkQueue[Key] = workqueue.WorkQueue(base_delay=RETRY_S, max_delay=options.sweep)
        self.known: set[Key] = set()
        self._deleted: dict[Key, str] = {}  # a deleted Site's uid, until a worker removes what it owned
        self._held: set[Key] = set()  # keys a worker reconciles now
        self._unsure: dict[Key, list[str]] = {}  # versions of held keys seen meanwhile: echoes, or news?
        self._guard = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None  # kopf's, while it runs
        self.crd_missing = threading.Event()  # set while it waits for the Site CRD to be served (`startup`)
        # the Waves: their own queue and worker (a wave's pass lists its Sites; waves are few), and each one's
        # members at its last pass, so that a member's event wakes its wave
        self.wave_queue: workqueue.WorkQueue[Key] = workqueue.WorkQueue(base_delay=RETRY_S, max_delay=options.sweep)
        self.waves: dict[Key, frozenset[str]] = {}
        self._wave_written: dict[Key, float] = {}  # when each Wave's status was last written (monotonic)
        self.wave_counters = WaveCounters()
        # BMC delivery: its own queue and workers (a BMC answers in seconds; a Site's reconcile must not wait on it)
        self.bmc_queue: workqueue.WorkQueue[Key] = workqueue.WorkQueue(base_delay=RETRY_S, max_delay=options.sweep)
        self.bmc_sites: set[Key] = set()
        self.cycle = bmccycle.Cycle(self.client, None)
        self.image_server: Any = None  # `imageserver.Running` while it serves

    def reconcile(self, namespace: str, name: str) -> reconcile_mod.Outcome | None:
        """One pass over one Site (a worker's; the queue never hands one key to two workers at once)."""
        key = (namespace, name)
        with self._guard:
            uid = self._deleted.get(key)
        if uid is not None:  # first what the deleted Site owned (a new Site of its name may follow)
            credentials.remove(self.client, namespace, name, uid)
            with self._guard:
                if self._deleted.get(key) == uid:
                    del self._deleted[key]
        now = self.options.clock.now().astimezone(dt.UTC)
        ref = reconcile_mod.site_ref(namespace, name)
        outcome = reconcile_mod.reconcile(self.client, self.options.config, ref, now, self.counters)
        if outcome is None:
            with self._guard:
                self.known.discard(key)
            self.echoes.forget(key)
        if outcome is None or outcome.wrote:  # its phase changed: its wave counts it again
            self._wake_waves(key, added=False)
        return outcome

    def _wake_waves(self, key: Key, *, added: bool) -> None:
        """Queue the waves Site `key` is in; a Site in none wakes every wave of its namespace when it is new (the
        sweep finds one whose labels changed)."""
        with self._guard:
            found = [w for w, members in self.waves.items() if w[0] == key[0] and key[1] in members]
            if not found and added:
                found = [w for w in self.waves if w[0] == key[0]]
        for wave in found:
            self.wave_queue.add(wave)

    def reconcile_wave(self, namespace: str, name: str) -> waves.Outcome | None:
        """One pass over one Wave (its worker's); the Sites whose gate it wrote are reconciled next (their gate
        decides their credential), since the watch reports that write back as the controller's own."""
        key = (namespace, name)
        with self._guard:
            before = self.waves.get(key, frozenset())
        now = self.options.clock.now().astimezone(dt.UTC)
        since = time.monotonic() - self._wave_written.get(key, -waves.COUNTS_PERIOD)
        due = since >= waves.COUNTS_PERIOD
        outcome = waves.reconcile(self.client, waves.wave_ref(namespace, name), now, before, counts_due=due)
        self.wave_counters.add(outcome)
        if outcome is not None and outcome.wrote:
            self._wave_written[key] = time.monotonic()
        if outcome is not None and outcome.deferred:
            self.wave_queue.add_after(key, waves.COUNTS_PERIOD - since)
        with self._guard:
            if outcome is None:
                self.waves.pop(key, None)
            else:
                self.waves[key] = outcome.members
        if outcome is None:
            for member in sorted(before):  # a deleted Wave holds no one: each Site's reconcile drops its gate
                self.queue.add((namespace, member))
            return None
        for member in outcome.gated:
            self.queue.add((namespace, member))
        if outcome.conflicts:
            raise errors.TemporaryError(f"{outcome.conflicts} Sites changed while the wave was planned")
        return outcome

    def on_wave_event(self, event: dict[str, Any], namespace: str, name: str) -> None:
        """A watch event of a Wave: queue it (its deletion too: its pass releases its Sites)."""
        if self.options.metrics is not None:
            self.options.metrics.seen_wave(event)
        with self._guard:
            self.waves.setdefault((namespace, name), frozenset())
        self.wave_queue.add((namespace, name))

    def work_waves(self) -> None:
        """The wave worker: reconcile the Waves the queue hands out until it is shut down."""
        while (key := self.wave_queue.get()) is not None:
            try:
                self.reconcile_wave(*key)
            except Exception as exc:  # one Wave's trouble must not end the worker
                if self.options.metrics is not None:
                    self.options.metrics.error(exc)
                delay = self.wave_queue.retry(key)
                level = logging.INFO if isinstance(exc, (kube.Conflict, errors.TemporaryError)) else logging.WARNING
                LOG.log(level, "wave %s/%s: %s (again in %gs)", key[0], key[1], exc, delay)
            else:
                self.wave_queue.forget(key)
            finally:
                self.wave_queue.done(key)

    def step_bmc(self, namespace: str, name: str) -> bmccycle.Step:
        """One pass of a Site's BMC cycle (a BMC worker's); its record written: the Site's reconcile renders it."""
        now = self.options.clock.now().astimezone(dt.UTC)
        step = self.cycle.step(namespace, name, now)
        if step.wrote:  # the watch reports the write as the controller's own: queue the reconcile here
            self.counters.add("delivery_writes")
            self.queue.add((namespace, name))
        if step.again is not None:
            self.bmc_queue.add_after((namespace, name), step.again)
        return step

    def work_bmc(self) -> None:
        """A BMC worker: run the BMC cycles the queue hands out until it is shut down."""
        while (key := self.bmc_queue.get()) is not None:
            try:
                self.step_bmc(*key)
            except Exception as exc:  # one Site's trouble must not end the worker
                if self.options.metrics is not None:
                    self.options.metrics.error(exc)
                delay = self.bmc_queue.retry(key)
                LOG.warning("site %s/%s: BMC cycle: %s (again in %gs)", key[0], key[1], exc, delay)
            else:
                self.bmc_queue.forget(key)
            finally:
                self.bmc_queue.done(key)

    def _note_bmc(self, event: dict[str, Any], key: Key) -> None:
        """Queue the BMC cycle of a Site delivered through its BMC (or that was: its grant goes), whatever the event."""
        body = event.get("object") or {}
        spec = body.get("spec") or {}
        held = bmccycle.FINALIZER in ((body.get("metadata") or {}).get("finalizers") or [])  # its image to eject
        bmc = held or (isinstance(spec, dict) and (spec.get("delivery") or {}).get("method") == "bmc")
        with self._guard:
            was = key in self.bmc_sites
            if bmc and event.get("type") != "DELETED":
                self.bmc_sites.add(key)
            else:
                self.bmc_sites.discard(key)
        if bmc and _read_while_inserted(event.get("object") or {}):
            self.bmc_queue.add_first(key)  # eject at once, not behind every insert queued (a burst of new Sites)
        elif bmc or was:
            self.bmc_queue.add(key)

    def on_event(self, event: dict[str, Any], namespace: str, name: str) -> None:
        """A watch event of a Site (in kopf's event loop: it must not block): note the key, queue it, return."""
        if self.options.metrics is not None:
            self.options.metrics.seen(event)
        key = (namespace, name)
        meta = (event.get("object") or {}).get("metadata") or {}
        self._note_bmc(event, key)
        with self._guard:
            if event.get("type") == "DELETED":
                self.known.discard(key)
                self._deleted[key] = str(meta.get("uid", ""))
            else:
                self.known.add(key)
        if event.get("type") != "MODIFIED":
            self._wake_waves(key, added=True)
        if event.get("type") == "MODIFIED":
            version = str(meta.get("resourceVersion", ""))
            if self.echoes.is_echo(key, version):
                return
            self._wake_waves(key, added=False)
            with self._guard:
                if key in self._held:  # perhaps the echo of a write whose answer the worker has not read yet
                    self._unsure.setdefault(key, []).append(version)
                    return
        self.queue.add(key)

    def work(self) -> None:
        """A worker: reconcile the keys the queue hands out until it is shut down."""
        while (key := self.queue.get()) is not None:
            with self._guard:
                self._held.add(key)
            try:
                self._reconcile_key(key)
            finally:
                self._release(key)

    def _release(self, key: Key) -> None:
        """Give `key` back to the queue, again if a version seen while it was held was not this worker's own write."""
        with self._guard:
            self._held.discard(key)
            unsure = self._unsure.pop(key, [])
        if any(not self.echoes.is_echo(key, version) for version in unsure):
            self.queue.add(key)  # still held by the queue: marked dirty, so queued again by `done`
        self.queue.done(key)

    def _reconcile_key(self, key: Key) -> None:
        try:
            self.reconcile(*key)
        except Exception as exc:  # one Site's trouble (a 409: someone wrote first) must not end the worker
            if self.options.metrics is not None:
                self.options.metrics.error(exc)
            delay = self.queue.retry(key)
            level = logging.INFO if isinstance(exc, kube.Conflict) else logging.WARNING
            LOG.log(level, "site %s/%s: %s (again in %gs)", key[0], key[1], exc, delay)
        else:
            self.queue.forget(key)

    def run(self, stop: threading.Event, ready: threading.Event | None = None) -> None:
        """kopf's watch and handler, the workers and the sweep, until `stop` is set."""
        threads = [threading.Thread(target=self.sweep, args=(stop,), name="site-sweep", daemon=True)]
        threads += [
            threading.Thread(target=self.work, name=f"site-worker-{index}", daemon=True)
            for index in range(self.options.workers)
        ]
        threads.append(threading.Thread(target=self.work_waves, name="wave-worker", daemon=True))
        threads += [
            threading.Thread(target=self.work_bmc, name=f"bmc-worker-{index}", daemon=True)
            for index in range(self.options.bmc_workers)
        ]
        self.loop = asyncio.new_event_loop()
        try:
            if self.options.image_server is not None:
                answered = self.options.metrics.image_answered if self.options.metrics is not None else None
                serving, self.image_server = bmccycle.start_server(self.client, self.options.image_server, answered)
                self.cycle = bmccycle.Cycle(self.client, serving)
            for thread in threads:
                thread.start()
            if not startup.until_served(self.client, stop, report=self._crd_served):
                return
            kopf.run(
                loop=self.loop,
                registry=registry_for(self),
                standalone=True,
                clusterwide=not self.options.namespaces,
                namespaces=list(self.options.namespaces),
                stop_flag=stop,
                ready_flag=ready,
            )
        finally:
            stop.set()
            self.queue.shutdown()
            self.wave_queue.shutdown()
            self.bmc_queue.shutdown()
            if self.image_server is not None:
                self.image_server.stop()
            deadline = time.monotonic() + STOP_S
            for thread in threads:
                if thread.ident is not None:  # started
                    thread.join(max(0.0, deadline - time.monotonic()))
            self.client.close()

    def _crd_served(self, served: bool) -> None:
        if served:
            self.crd_missing.clear()
        else:
            self.crd_missing.set()
        if self.options.metrics is not None:
            self.options.metrics.crd_served.set(1 if served else 0)

    def sweep(self, stop: threading.Event) -> None:
        """Every `sweep` seconds, queue every known Site (staleness, token renewal) until `stop`."""
        while not stop.wait(self.options.sweep):
            with self._guard:
                keys = sorted(self.known)
            for key in keys:
                self.queue.add(key)
            with self._guard:
                wave_keys = sorted(self.waves)
            for key in wave_keys:
                self.wave_queue.add(key)
            with self._guard:
                bmc_keys = sorted(self.bmc_sites)
            for key in bmc_keys:
                self.bmc_queue.add(key)


def _read_while_inserted(obj: dict[str, Any]) -> bool:
    """Whether a BMC Site's node has reported the digest of the medium still inserted: its eject is due now."""
    status = obj.get("status") or {}
    record, agent = status.get(site.STATUS_DELIVERY) or {}, status.get(site.STATUS_AGENT) or {}
    if not isinstance(record, dict) or not isinstance(agent, dict):
        return False
    digest = record.get("digest")
    return record.get("state") == bmccycle.State.INSERTED and bool(digest) and agent.get("siteConfigDigest") == digest


def registry_for(controller: Controller) -> kopf.OperatorRegistry:
    """kopf's handlers for this controller, in a registry of their own (tests run several controllers)."""
    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False  # our Events only, on phase changes
        settings.scanning.disabled = True  # no CRD/namespace watching: only Sites
        settings.peering.standalone = True
        settings.persistence.progress_storage = kopf.SmartProgressStorage(prefix=site.GROUP)
        # kopf's per-Site tasks stay unlimited (`queueing.worker_limit`: a limit only queues them, bodies and all,
        # in kopf's scheduler) but each ends IDLE_S after its event rather than 5 s: the handler returns at once,
        # and a lingering task keeps its last event's body. The first listing comes in pages (`watching.chunk_size`)
        # rather than as one response holding every Site.
        settings.queueing.idle_timeout = IDLE_S
        settings.watching.chunk_size = LIST_CHUNK
        settings.watching.server_timeout = 300
        settings.watching.client_timeout = 330
        settings.networking.request_timeout = 60

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return connection(controller.configuration)

    @kopf.on.event(site.GROUP, site.VERSION, site.PLURAL, id="reconcile", registry=registry)  # type: ignore[arg-type]
    async def on_site(event: dict[str, Any], namespace: str, name: str, **_: Any) -> None:
        controller.on_event(event, namespace, name)  # async: in kopf's loop, no executor thread for a queue add

    @kopf.on.event(site.GROUP, site.VERSION, wave_mod.PLURAL, id="wave", registry=registry)  # type: ignore[arg-type]
    async def on_wave(event: dict[str, Any], namespace: str, name: str, **_: Any) -> None:
        controller.on_wave_event(event, namespace, name)

    return registry


def run(options: Options, *, stop: threading.Event | None = None, ready: threading.Event | None = None) -> Controller:
    """Run a controller until `stop` is set (or a signal, in the main thread); returns it, for its counters."""
    controller = Controller(options)
    controller.run(stop or threading.Event(), ready)
    return controller


class Background:
    """A controller running in a thread of this process until `stop()`: the fleet demo's hub and the hub tests'.
    `controller` exposes its counters. Starting and stopping are each bounded by `budget` seconds; started means
    kopf is ready, or the controller is waiting for its CRD (`controller.crd_missing`)."""

    def __init__(self, options: Options, *, budget: float = 30.0) -> None:
        self.controller = Controller(options)
        self.budget = budget
        self._stop, self._ready = threading.Event(), threading.Event()
        self._thread = threading.Thread(
            target=self.controller.run, args=(self._stop, self._ready), name="site-controller", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + budget
        while not (self._ready.is_set() or self.controller.crd_missing.is_set()):
            if time.monotonic() > deadline or not self._thread.is_alive():
                self.stop()
                raise errors.TemporaryError(f"the Site controller did not start within {budget:g}s")
            self._ready.wait(0.05)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(self.budget)
        if self._thread.is_alive():
            raise errors.TemporaryError(f"the Site controller did not stop within {self.budget:g}s")

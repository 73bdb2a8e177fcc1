"""One running hub: an empty plain Kubernetes API over HTTPS with an admin kubeconfig, as tests and the CLI use it::

    with HubSimulator() as hub:
        client = kubernetes.config.new_client_from_config(str(hub.kubeconfig_path))

No OpenShift seed and no operators: a fresh kube-apiserver with its system namespaces (`default`, `kube-system`,
`kube-public`, `kube-node-lease`; kubernetes/kubernetes `pkg/controlplane/controller/systemnamespaces`), an
admin token in group `system:masters`, and whatever CRDs, ServiceAccounts and RBAC the test creates.
`history_window` bounds how many changes watches can resume across (kube-apiserver's watch cache); a smaller one
makes 410 Gone come sooner. `bookmark_seconds` is how often a watch with `allowWatchBookmarks` gets a BOOKMARK.
`controller_delay` is how long after a deletion kube-controller-manager's garbage collector and namespace
controller act (0: inside the deletion, as the simulator once did). `token_cache_seconds` is how long a token's
successful authentication is remembered (the real server's 10 s token cache, `tokens.REAL_CACHE_SECONDS`;
default 0, so a revoked token is refused at once and tests need not wait). For `starting_seconds` after a start or
a `restart()`, paths not served answer 503 rather than 404, as a starting kube-apiserver does (`front`). Custom
resources are stored and served with their keys sorted (`sortedkeys`), as a real server does.

What a test reaches through it: `kubeconfig_path` (admin, 0600), `api_url`, `ca_pem`, `token` (admin);
`faults` (`conflict_next`, `fail_next`, `latency`), `expire_watches()`, `restart()`, `advance_clock(seconds)`
(token expiry), `requests` (what clients sent), `cluster.store` (the objects, for assertions).
"""

from __future__ import annotations

import secrets
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from snoreloc_sim.hub import api, crds, escalation, faults, front, kinds, lifecycle, namespaces, rbac, tokens
from snoreloc_sim.hub.sortedkeys import for_custom_resources
from snoreloc_sim.kube import model, registry, server, tls, validation
from snoreloc_sim.kube import namespaces as sim_namespaces
from snoreloc_sim.kube.served import Served

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
DEFAULT_HISTORY = 10_000
DEFAULT_BOOKMARK_SECONDS = 60.0
DEFAULT_CONTROLLER_DELAY = 0.2  # seconds before garbage collection and namespace emptying (kube-controller-manager's)


class HubSimulator(Served):
    """A plain Kubernetes hub served on 127.0.0.1; a context manager (`start()` on enter, `stop()` on exit)."""

    def __init__(
        self,
        *,
        port: int = 0,
        token: str | None = None,
        workdir: Path | str | None = None,
        history_window: int = DEFAULT_HISTORY,
        bookmark_seconds: float = DEFAULT_BOOKMARK_SECONDS,
        token_cache_seconds: float = 0.0,
        controller_delay: float = DEFAULT_CONTROLLER_DELAY,
        starting_seconds: float = 0.0,
    ) -> None:
        super().__init__(workdir)
        self.token = token or secrets.token_urlsafe(32)
        self.history_window = history_window
        self.bookmark_seconds = bookmark_seconds
        self.token_cache_seconds = token_cache_seconds
        self.controller_delay = controller_delay
        self.starting_seconds = starting_seconds
        self._port = port
        self._running: _Running | None = None
        self.startup_seconds = 0.0

    def start(self) -> HubSimulator:
        if self._running is not None:
            return self
        began = time.monotonic()
        self._running = _Running(self)
        self._running.start(self._port)
        self._running.front.ready_at = time.monotonic() + self.starting_seconds
        self.publish_kubeconfig(self.api_url, self.ca_pem, self.token)
        self.startup_seconds = time.monotonic() - began
        return self

    def _halt(self) -> None:
        if self._running is not None:
            self._running.stop()
            self._running = None

    def advance_clock(self, seconds: float) -> None:
        """Move the hub's clock forward (token expiry) without waiting."""
        self.running.tokens.skew += seconds

    @property
    def faults(self) -> faults.HubFaults:
        """Injected refusals, watch expiry and latency (see `snoreloc_sim.hub.faults`)."""
        return self.running.front.faults

    @property
    def requests(self) -> list[front.Seen]:
        """The last requests the hub received (method, path and query, content type, accept, user agent)."""
        return list(self.running.front.seen)

    def expire_watches(self) -> None:
        """Compact the watch history: open watches end with 410, and so does resuming from any older version."""
        self.running.api.history.compact()

    def restart(self) -> None:
        """What a kube-apiserver restart does to clients: every connection (watches included) is dropped."""
        self.running.api.history.restart()
        self.running.front.ready_at = time.monotonic() + self.starting_seconds
        self.running.listener.drop_connections()

    @property
    def running(self) -> _Running:
        if self._running is None:
            raise RuntimeError("the hub simulator is not running: call start()")
        return self._running

    @property
    def cluster(self) -> model.Cluster:
        return self.running.cluster

    @property
    def api_url(self) -> str:
        return f"https://127.0.0.1:{self.running.listener.port}"

    @property
    def ca_pem(self) -> bytes:
        return self.running.authority.ca_pem


class _Running:
    """The parts that exist only while the hub runs."""

    def __init__(self, owner: HubSimulator) -> None:
        self.authority = tls.new_authority()
        self.cluster = model.Cluster(store=model.Store(), timeline=model.Timeline(1.0), types={})
        self.contexts = tls.Contexts()
        self._crd_dir = tempfile.TemporaryDirectory(prefix="snoreloc-hub-crds-")
        self.validator = validation.Validator(Path(self._crd_dir.name))
        self.api = api.HubApi(
            self.cluster,
            self.validator,
            history_window=owner.history_window,
            bookmark_seconds=owner.bookmark_seconds,
        )
        base = registry.load(Path(self._crd_dir.name))  # the simulator's built-in kinds, no OpenShift CRD
        self.catalog = crds.Catalog(self.cluster.store, self.validator, self._publish, base)
        self.api.catalog = self.catalog
        self.cluster.store.shape = for_custom_resources(self._is_builtin)  # as a real API server keeps them
        self._delay = owner.controller_delay
        defer = self._defer if self._delay > 0 else None
        self.lifecycle = lifecycle.Lifecycle(self.cluster.store, self._find_type, defer)
        self.api.lifecycle = self.lifecycle
        self.namespaces = namespaces.Namespaces(
            self.cluster.store, self.lifecycle, lambda: self._type(kinds.NAMESPACES), self._served_types, defer
        )
        self.api.namespaces = self.namespaces
        self.cluster.admission += [self.catalog.admit, self.lifecycle.admit]
        self.cluster.store.subscribe(self.catalog.on_change)  # after the history: it writes the CRD's status
        self.cluster.store.subscribe(self.lifecycle.on_change)
        self.cluster.store.subscribe(self.namespaces.on_change)
        self.tokens = tokens.Tokens(self.cluster.store, self._type, cache_seconds=owner.token_cache_seconds)
        self.api.tokens = self.tokens
        authorizer = rbac.Authorizer()
        self.cluster.store.subscribe(authorizer.on_change)
        self.front = front.HubFront(self.api, owner.token, self.tokens, authorizer)
        self.cluster.admission.append(escalation.Guard(authorizer, self.front.caller).admit)
        self.listener: server.Listener

    def _publish(self, served: registry.Registry) -> None:
        self.api.registry = served
        self.cluster.types = dict(served.types)

    def _served_types(self) -> list[model.ResourceType]:
        return list(self.catalog.registry.types.values())

    def _defer(self, task: Callable[[], None]) -> None:
        """Run `task` `controller_delay` seconds from now as a controller would, its writes in order with the API's
        (under its write lock, as every write of the hub is)."""

        def locked() -> None:
            with self.api.write_lock:
                task()

        self.cluster.timeline.after(self._delay, locked)

    def _is_builtin(self, rtype: model.ResourceType) -> bool:
        return self.catalog.registry.is_builtin(rtype)

    def _find_type(self, key: str) -> model.ResourceType | None:
        return self.catalog.registry.types.get(key)

    def _type(self, key: str) -> model.ResourceType:
        return self.catalog.registry.types[key]

    def start(self, port: int) -> None:
        store = self.cluster.store
        for name in SYSTEM_NAMESPACES:
            namespace: dict[str, Any] = {"metadata": {"name": name}, "status": dict(sim_namespaces.ACTIVE)}
            sim_namespaces.prepare_create(namespace)
            store.create(self._type(kinds.NAMESPACES), namespace)
        for role in rbac.BOOTSTRAP_CLUSTER_ROLES:
            store.create(self._type(f"clusterroles.{rbac.RBAC_GROUP}"), model.clone(role))
        for binding in rbac.BOOTSTRAP_CLUSTER_ROLE_BINDINGS:
            store.create(self._type(f"clusterrolebindings.{rbac.RBAC_GROUP}"), model.clone(binding))
        context = tls.server_context(self.cluster.serving, "api", self.authority.served(), self.contexts)
        self.listener = server.Listener(self.front, context, port=port)
        self.api.server_address = f"127.0.0.1:{self.listener.port}"
        self.listener.start()

    def stop(self) -> None:
        self.api.stopped.set()
        self.listener.stop()
        self.cluster.timeline.close()
        self.contexts.close()
        self._crd_dir.cleanup()

"""What every simulated operator shares: store keys, timestamps, TLS secrets, and one-at-a-time rollouts.

Real operators reconcile continuously; the simulator only needs their observable shape: a change arrives, a
rollout runs for a realistic time (scaled by the timeline's speed), changes that land meanwhile fold into one
follow-up, and every rollout is recorded for the benchmarks' critical-path analysis. `Serial` is that shape.
Every rollout is carried out by pods (installer pods, deployments, daemon sets), so none starts while the node is
NotReady: a requested rollout is held until it is Ready again.
All rollout steps run on the timeline's single thread, so controllers never race each other on status writes;
only store listeners (called in the writer's thread) need the per-controller locks.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from snoreloc_sim.kube import certs, model

Obj = model.Obj

ROUTES = "routes.route.openshift.io"
SECRETS = "secrets"
CONFIGMAPS = "configmaps"
NAMESPACES = "namespaces"
NODES = "nodes"
CSRS = "certificatesigningrequests.certificates.k8s.io"
CLUSTEROPERATORS = "clusteroperators.config.openshift.io"
CLUSTERVERSIONS = "clusterversions.config.openshift.io"
INGRESSES = "ingresses.config.openshift.io"
APISERVERS = "apiservers.config.openshift.io"
INGRESSCONTROLLERS = "ingresscontrollers.operator.openshift.io"
IMAGES = "images.config.openshift.io"
ICSPS = "imagecontentsourcepolicies.operator.openshift.io"
IDMS = "imagedigestmirrorsets.config.openshift.io"
ITMS = "imagetagmirrorsets.config.openshift.io"
MACHINECONFIGS = "machineconfigs.machineconfiguration.openshift.io"
MACHINECONFIGPOOLS = "machineconfigpools.machineconfiguration.openshift.io"
CONSOLES = "consoles.config.openshift.io"
INFRASTRUCTURES = "infrastructures.config.openshift.io"
DNSES = "dnses.config.openshift.io"
PROXIES = "proxies.config.openshift.io"
OPERATORHUBS = "operatorhubs.config.openshift.io"
OAUTHS = "oauths.config.openshift.io"
NETWORKS = "networks.config.openshift.io"


def timestamp() -> str:
    """RFC 3339 with microseconds: at high speed a whole rollout fits in one second, and a client must still see
    that a transition came after its change (the CRDs declare `format: date-time`, which allows fractions)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def b64(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode()


def unb64(text: str) -> bytes:
    return base64.b64decode(text.encode(), validate=True)


def rtype(cluster: model.Cluster, key: str) -> model.ResourceType:
    return cluster.types[key]


def find(cluster: model.Cluster, key: str, name: str, namespace: str = "") -> Obj | None:
    """The object, or None when it (or its whole type) does not exist."""
    found = cluster.types.get(key)
    return cluster.store.find(found, name, namespace) if found is not None else None


def write_status(cluster: model.Cluster, key: str, obj: Obj) -> None:
    cluster.store.update(rtype(cluster, key), obj, status_only=True, check_rv=False)


class BadSecret(Exception):
    """A referenced secret is missing or does not hold a usable TLS key pair; the text says which and why."""


def load_tls(cluster: model.Cluster, namespace: str, name: str) -> model.ServedCert:
    """The key pair of a `kubernetes.io/tls`-shaped secret, checked as a server loading it would."""
    secret = find(cluster, SECRETS, name, namespace)
    if secret is None:
        raise BadSecret(f'secret "{namespace}/{name}" not found')
    data = secret.get("data") or {}
    try:
        cert, key = unb64(data["tls.crt"]), unb64(data["tls.key"])
    except (KeyError, ValueError) as exc:
        raise BadSecret(f'secret "{namespace}/{name}" has no tls.crt/tls.key pair') from exc
    if not certs.is_valid_pair(cert, key):
        raise BadSecret(f'secret "{namespace}/{name}": tls.crt and tls.key are not a matching certificate and key')
    return model.ServedCert(cert, key)


def tls_secret(namespace: str, name: str, pair: certs.KeyPair, labels: dict[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": meta,
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": b64(pair.cert_pem), "tls.key": b64(pair.key_pem)},
    }


def nodes_ready(cluster: model.Cluster) -> bool:
    """Whether every Node reports Ready=True: installer and deployment pods only start on a Ready node."""
    nodes = cluster.types.get(NODES)
    if nodes is None:
        return True
    for node in cluster.store.list(nodes):
        ready = [c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"]
        if not ready or ready[0].get("status") != "True":
            return False
    return True


HOLD_POLL = 2.0  # cluster seconds between looks at a NotReady node by a held rollout

Step = tuple[float, Callable[[], None]]
"""(cluster seconds after the previous step, action). A plan is a list of steps; the rollout ends after the last."""


@dataclass
class _Flight:
    triggers: list[str]
    started: float = 0.0


class Serial:
    """One rollout at a time for one operator.

    `request(trigger)` starts a rollout `debounce` cluster seconds later (requests in that window join it). A
    request during a rollout queues exactly one follow-up, however many arrive: it starts when the current one
    ends and carries all their triggers. `plan(trigger)` is called at the start of each rollout (so it sees the
    state of that moment) and returns the steps; the rollout is recorded with wall start and end.
    """

    def __init__(
        self,
        cluster: model.Cluster,
        operator: str,
        plan: Callable[[str], list[Step]],
        *,
        debounce: float = 0.0,
    ) -> None:
        self._cluster, self._operator, self._plan, self._debounce = cluster, operator, plan, debounce
        self._lock = threading.Lock()
        self._current: _Flight | None = None
        self._waiting: _Flight | None = None  # gathering requests before it starts

    def request(self, trigger: str) -> None:
        with self._lock:
            if self._waiting is not None:
                if trigger not in self._waiting.triggers:
                    self._waiting.triggers.append(trigger)
                return
            self._waiting = _Flight([trigger])
            if self._current is not None:
                return  # follows the current rollout
        self._cluster.timeline.after(self._debounce, self._begin)

    def busy(self) -> bool:
        with self._lock:
            return self._current is not None or self._waiting is not None

    def _begin(self) -> None:
        if not nodes_ready(self._cluster):  # its pods cannot be scheduled: the rollout waits for the node
            self._cluster.timeline.after(HOLD_POLL, self._begin)
            return
        with self._lock:
            flight, self._waiting = self._waiting, None
            if flight is None:
                return
            flight.started = time.monotonic()
            self._current = flight
        trigger = "; ".join(flight.triggers)
        self._run(list(self._plan(trigger)))

    def _run(self, steps: list[Step]) -> None:
        if not steps:
            self._end()
            return
        delay, action = steps[0]

        def step() -> None:
            try:
                action()
            finally:
                self._run(steps[1:])

        self._cluster.timeline.after(delay, step)

    def _end(self) -> None:
        with self._lock:
            flight, self._current = self._current, None
            follow = self._waiting is not None
        if flight is not None:
            trigger = "; ".join(flight.triggers)
            self._cluster.recorder.rollout(model.Rollout(self._operator, trigger, flight.started, time.monotonic()))
        if follow:
            self._cluster.timeline.after(0, self._begin)

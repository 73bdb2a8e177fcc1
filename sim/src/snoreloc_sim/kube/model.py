"""The simulated cluster's core: resource types, the object store with kube-apiserver semantics, simulated time.

Everything else in the simulator hangs off these three things. The HTTP layer (`server`, `api`) turns requests
into store calls; the OpenShift operators (`openshift.operators`) subscribe to store changes and schedule their
reactions on the `Timeline`, whose durations are realistic SNO figures divided by the speed factor.
"""

from __future__ import annotations

import bisect
import builtins
import copy
import heapq
import itertools
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

Obj = dict[str, Any]
_SCALARS = (str, int, float, bool, type(None))
JsonT = TypeVar("JsonT")


def clone(value: JsonT) -> JsonT:
    """A deep copy of a JSON value (dicts, lists, scalars), several times faster than `copy.deepcopy`.

    Every stored object is decoded JSON, and the write path copies it a dozen times (the store hands out copies,
    listeners get their own); anything that is not plain JSON still goes through `copy.deepcopy`.
    """
    return cast(JsonT, _clone(value))


def _clone(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {key: _clone(item) for key, item in value.items()}
    if kind is list:
        return [_clone(item) for item in value]
    if kind in _SCALARS:
        return value
    return copy.deepcopy(value)


_STAMP: list[Any] = [None, ""]  # (the second it was made for, the text): one strftime per second, not per write


def now_rfc3339() -> str:
    second = int(time.time())
    if _STAMP[0] != second:
        _STAMP[1] = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        _STAMP[0] = second
    return str(_STAMP[1])


@dataclass(frozen=True)
class ResourceType:
    """One served resource: where it lives in the API and how it behaves in storage."""

    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool
    has_status: bool = True
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ("status",)
    generation: bool = True  # whether its strategy sets metadata.generation (see `kinds.WITH_GENERATION`)

    @property
    def key(self) -> str:
        """Store key: `plural.group`, or `plural` for the core group."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()


@dataclass
class ApiError(Exception):
    """A refusal the server sends back as a `Status` object."""

    code: int
    reason: str
    message: str
    causes: list[dict[str, str]] = field(default_factory=list)
    details: Obj = field(default_factory=dict)


ChangeListener = Callable[[ResourceType, str, Obj | None, Obj | None], None]


class Store:
    """Objects by (type, namespace, name) with uid, resourceVersion, generation and the usual refusals.

    The store knows nothing of schemas or HTTP. Writers get 404 for a missing object or namespace, 409 for a
    name already taken or a stale resourceVersion. After every committed change each listener is called with
    (type, event, old, new) outside the lock, where event is ADDED, MODIFIED or DELETED.

    A stored object is never changed in place: every write stores a new one with a new resourceVersion, and `bump`
    changes only the resourceVersion. What a reader derives from an object may be kept by its uid and
    resourceVersion (`snoreloc_sim.hub.encodings`); keep it so.

    `shape`, when set, is applied to every object the store is about to keep (the hub sorts custom resources' keys
    there, as a real API server stores and serves them: `snoreloc_sim.hub.simulator`).
    """

    def __init__(self) -> None:
        self.shape: Callable[[ResourceType, Obj], Obj] | None = None
        self._lock = threading.RLock()
        self._objects: dict[tuple[str, str, str], Obj] = {}
        self._keys: dict[str, list[str]] = {}  # per type, "namespace/name" in order: etcd's key order, for ranges
        self._rv = itertools.count(1000)
        self._listeners: list[ChangeListener] = []
        self.writes = 0

    def subscribe(self, listener: ChangeListener) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: ChangeListener) -> None:
        """Stop calling `listener` (a watch that ended); unknown listeners are ignored."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _notify(
        self, rtype: ResourceType, event: str, old: Obj | None, new: Obj | None, *, old_is_free: bool = False
    ) -> None:
        """Each listener gets its own copies; an `old` that no one else holds goes to the last one as it is."""
        listeners = list(self._listeners)
        for index, listener in enumerate(listeners):
            handed = old if old_is_free and index == len(listeners) - 1 else clone(old)
            listener(rtype, event, handed, clone(new))

    def _check_namespace(self, rtype: ResourceType, namespace: str) -> None:
        if rtype.namespaced and ("namespaces", "", namespace) not in self._objects:
            raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found')

    def get(self, rtype: ResourceType, name: str, namespace: str = "") -> Obj:
        with self._lock:
            found = self._objects.get((rtype.key, namespace, name))
            if found is None:
                raise ApiError(404, "NotFound", f'{rtype.key} "{name}" not found', details=_details(rtype, name))
            return clone(found)

    def find(self, rtype: ResourceType, name: str, namespace: str = "") -> Obj | None:
        with self._lock:
            found = self._objects.get((rtype.key, namespace, name))
            return clone(found) if found is not None else None

    def list(self, rtype: ResourceType, namespace: str | None = None) -> list[Obj]:
        return self.scan(rtype, namespace)[0]

    def scan(
        self,
        rtype: ResourceType,
        namespace: str | None = None,
        start: str = "",
        limit: int = 0,
        matches: Callable[[Obj], bool] | None = None,
        *,
        hand: Callable[[Obj], Any] = clone,
    ) -> tuple[builtins.list[Any], int | None]:
        """Copies of the objects of `rtype` (in `namespace`, or all) whose key ("namespace/name") is `start` or
        later, in key order, that `matches` accepts: at most `limit` of them (all when 0), and how many keys
        follow the last one handed out (None when `matches` filtered: kube then does not count either).
        Costs the objects handed out and a bisection, not the whole type: a range read as etcd serves it.
        `hand` makes what is handed out of each stored object, under the lock (a copy by default; the hub's
        lists take its encoding, `snoreloc_sim.hub.encodings`): it must not change the object."""
        with self._lock:
            keys = self._keys.get(rtype.key, [])
            prefix = "" if namespace is None else f"{namespace}/"
            index = bisect.bisect_left(keys, max(start, prefix))
            items: builtins.list[Any] = []
            while index < len(keys) and keys[index].startswith(prefix) and not (limit and len(items) >= limit):
                ns, _, name = keys[index].partition("/")
                obj = self._objects[(rtype.key, ns, name)]
                if matches is None or matches(obj):
                    items.append(hand(obj))
                index += 1
            if matches is not None:
                return items, None
            end = bisect.bisect_left(keys, prefix + "\U0010ffff") if prefix else len(keys)
            return items, end - index

    def current_rv(self) -> str:
        with self._lock:
            return str(next(self._rv))

    def create(self, rtype: ResourceType, obj: Obj) -> Obj:
        meta = obj.setdefault("metadata", {})
        namespace = meta.get("namespace", "") if rtype.namespaced else ""
        name = meta.get("name", "")
        with self._lock:
            self._check_namespace(rtype, namespace)
            key = (rtype.key, namespace, name)
            if key in self._objects:
                raise ApiError(
                    409,
                    "AlreadyExists",
                    f'{rtype.key} "{name}" already exists',
                    details=_details(rtype, name),
                )
            stored = clone(obj)
            stored["apiVersion"], stored["kind"] = rtype.api_version, rtype.kind
            smeta = stored["metadata"]
            if rtype.namespaced:
                smeta["namespace"] = namespace
            else:
                smeta.pop("namespace", None)
            smeta.update(uid=str(uuid.uuid4()), creationTimestamp=now_rfc3339(), resourceVersion=str(next(self._rv)))
            if rtype.generation:
                smeta["generation"] = 1
            if self.shape is not None:
                stored = self.shape(rtype, stored)
            self._objects[key] = stored
            bisect.insort(self._keys.setdefault(rtype.key, []), f"{namespace}/{name}")
            self.writes += 1
            result = clone(stored)
        self._notify(rtype, "ADDED", None, result)
        return result

    def update(
        self, rtype: ResourceType, obj: Obj, *, status_only: bool = False, check_rv: bool = True, owned: bool = False
    ) -> Obj:
        """Replace an object. A main-resource write keeps the stored status (when the type has a status
        subresource); a status write keeps everything but the status. `owned`: the caller hands `obj` over and
        will not touch it again, so the store keeps it instead of a copy."""
        meta = obj.get("metadata", {})
        namespace = meta.get("namespace", "") if rtype.namespaced else ""
        name = meta.get("name", "")
        with self._lock:
            key = (rtype.key, namespace, name)
            old = self._objects.get(key)
            if old is None:
                raise ApiError(404, "NotFound", f'{rtype.key} "{name}" not found', details=_details(rtype, name))
            sent_rv = meta.get("resourceVersion")
            if check_rv and sent_rv and sent_rv != old["metadata"]["resourceVersion"]:
                raise ApiError(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on {rtype.key} "{name}": the object has been modified; '
                    "please apply your changes to the latest version and try again",
                    details=_details(rtype, name),
                )
            new = _merge_for_write(rtype, old, obj, status_only=status_only, owned=owned)
            if new == old:
                return clone(old)  # a no-op write does not bump resourceVersion, as kube-apiserver
            new["metadata"]["resourceVersion"] = str(next(self._rv))
            if self.shape is not None:
                new = self.shape(rtype, new)
            self._objects[key] = new
            self.writes += 1
            result = clone(new)
        self._notify(rtype, "MODIFIED", old, result, old_is_free=True)  # `old` left the store: no one holds it
        return result

    def delete(self, rtype: ResourceType, name: str, namespace: str = "") -> Obj:
        with self._lock:
            key = (rtype.key, namespace if rtype.namespaced else "", name)
            old = self._objects.pop(key, None)
            if old is None:
                raise ApiError(404, "NotFound", f'{rtype.key} "{name}" not found', details=_details(rtype, name))
            keys = self._keys[rtype.key]
            del keys[bisect.bisect_left(keys, f"{key[1]}/{name}")]
            self.writes += 1
        self._notify(rtype, "DELETED", old, None)
        return old

    def bump(self, rtype: ResourceType, name: str, namespace: str = "") -> None:
        """Touch an object (a concurrent writer): its resourceVersion moves on, nothing else changes."""
        with self._lock:
            obj = self._objects.get((rtype.key, namespace, name))
            if obj is not None:
                obj["metadata"]["resourceVersion"] = str(next(self._rv))


def _details(rtype: ResourceType, name: str) -> Obj:
    return {"name": name, "group": rtype.group, "kind": rtype.plural}


def _merge_for_write(rtype: ResourceType, old: Obj, sent: Obj, *, status_only: bool, owned: bool = False) -> Obj:
    if status_only:  # only the sent status is kept: copy that, not the whole object
        result = clone(old)
        if "status" in sent:
            result["status"] = sent["status"] if owned else clone(sent["status"])
        else:
            result.pop("status", None)
        return result
    new = sent if owned else clone(sent)
    new["apiVersion"], new["kind"] = rtype.api_version, rtype.kind
    fixed = ("uid", "creationTimestamp", "generation", "namespace", "resourceVersion")
    new_meta = new.setdefault("metadata", {})
    for name in fixed:
        if name in old["metadata"]:
            new_meta[name] = old["metadata"][name]
        else:
            new_meta.pop(name, None)
    if rtype.has_status and "status" in rtype.subresources:
        if "status" in old:
            new["status"] = clone(old["status"])
        else:
            new.pop("status", None)
    if rtype.generation and _spec_of(new) != _spec_of(old):
        new_meta["generation"] = old["metadata"].get("generation", 1) + 1
    return new


def _spec_of(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


class Timeline:
    """Simulated time: realistic SNO durations divided by `speed`, run on one scheduler thread.

    `after(seconds, fn)` runs `fn` once `seconds` of *cluster* time have passed (seconds / speed of wall time).
    `scaled(seconds)` converts cluster seconds to wall seconds. The thread stops with `close()`.
    """

    def __init__(self, speed: float = 1.0) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = speed
        self._queue: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="sim-timeline", daemon=True)
        self._thread.start()

    def scaled(self, seconds: float) -> float:
        return seconds / self.speed

    def after(self, seconds: float, fn: Callable[[], None]) -> None:
        due = time.monotonic() + self.scaled(seconds)
        with self._cond:
            heapq.heappush(self._queue, (due, next(self._seq), fn))
            self._cond.notify()

    def _pop_due(self) -> Callable[[], None] | None:
        """Block until the earliest task is due and return it; None once closed."""
        with self._cond:
            while not self._closed:
                if not self._queue:
                    self._cond.wait()
                    continue
                delay = self._queue[0][0] - time.monotonic()
                if delay <= 0:
                    return heapq.heappop(self._queue)[2]
                self._cond.wait(delay)
            return None

    def _loop(self) -> None:
        while (task := self._pop_due()) is not None:
            try:
                task()
            except Exception:  # a controller bug must not stop the cluster's clock
                traceback.print_exc()

    def idle(self) -> bool:
        with self._cond:
            return not self._queue

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class Availability:
    """Whether the API answers: outages are wall-clock windows set by the operators (or by fault scripts).

    `mode` is "refuse" (connections are closed at once, as when kube-apiserver restarts) or "503" (the
    endpoint answers Service Unavailable, as during a revision's readiness gap).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._windows: list[tuple[float, float, str]] = []

    def outage(self, wall_seconds: float, mode: str = "refuse", *, start_in: float = 0.0) -> None:
        start = time.monotonic() + start_in
        with self._lock:
            self._windows.append((start, start + wall_seconds, mode))

    def down(self) -> str | None:
        """The current outage mode, or None when the API is up."""
        moment = time.monotonic()
        with self._lock:
            self._windows = [w for w in self._windows if w[1] > moment]
            for start, _end, mode in self._windows:
                if start <= moment:
                    return mode
        return None


@dataclass(frozen=True)
class ServedCert:
    cert_pem: bytes
    key_pem: bytes = field(repr=False)


class ServingCerts:
    """What each endpoint presents, by SNI name: the kube-apiserver (port from the kubeconfig) and the router.

    The default entry (key "") is what a client without a matching SNI gets. Operators replace entries when a
    rollout completes; the HTTP layer reads them in its SNI callback.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_endpoint: dict[str, dict[str, ServedCert]] = {"api": {}, "router": {}}

    def set(self, endpoint: str, sni: str, cert: ServedCert) -> None:
        with self._lock:
            self._by_endpoint[endpoint][sni.lower()] = cert

    def remove(self, endpoint: str, sni: str) -> None:
        with self._lock:
            self._by_endpoint[endpoint].pop(sni.lower(), None)

    def lookup(self, endpoint: str, sni: str | None) -> ServedCert | None:
        """Exact name, then a `*.` wildcard one label up, then the default."""
        with self._lock:
            table = self._by_endpoint[endpoint]
            name = (sni or "").lower()
            wildcard = "*." + name.split(".", 1)[1] if "." in name else ""
            return table.get(name) or table.get(wildcard) or table.get("")


@dataclass(frozen=True)
class Rollout:
    """One operator rollout the simulator performed: which operator, what triggered it, when (wall seconds)."""

    operator: str
    trigger: str
    started: float
    finished: float


class Recorder:
    """The simulator's own record of rollouts and revisions, for benchmarks (critical path vs sequential bound,
    revisions per relocation) and tests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.rollouts: list[Rollout] = []
        self.revisions: dict[str, int] = {}  # operator -> static-pod revisions created since the simulator started
        self.requests = 0
        self.writes = 0
        self.reboots = 0  # node reboots the machine-config operator performed

    def revision(self, operator: str) -> None:
        """A static-pod operator created a new revision (counted when created, whether it installs or fails)."""
        with self._lock:
            self.revisions[operator] = self.revisions.get(operator, 0) + 1

    def reboot(self) -> None:
        with self._lock:
            self.reboots += 1

    def rollout(self, item: Rollout) -> None:
        with self._lock:
            self.rollouts.append(item)

    def request(self, *, write: bool) -> None:
        with self._lock:
            self.requests += 1
            self.writes += int(write)


Admission = Callable[[ResourceType, Obj, Obj | None], None]


@dataclass
class Cluster:
    """Everything the HTTP layer and the operators share. Built by `simulator.Simulator`.

    `admission` hooks run on create and update before schema validation, and may mutate the object (route host
    generation lives there, as openshift-apiserver does it synchronously). They raise ApiError to refuse.
    """

    store: Store
    timeline: Timeline
    types: dict[str, ResourceType]
    availability: Availability = field(default_factory=Availability)
    serving: ServingCerts = field(default_factory=ServingCerts)
    recorder: Recorder = field(default_factory=Recorder)
    admission: list[Admission] = field(default_factory=list)
    # condition type -> condition that wins over any operator's own write, per ClusterOperator: a failing check
    # (openshift/operators/route_health) holds Available/Degraded while its cause lasts, whatever rollouts report
    # meanwhile
    overlays: dict[str, dict[str, Any]] = field(default_factory=dict)

"""Each stored object's JSON encoding, kept per version, so a page of a list is joined bytes, not copies re-encoded.

A page of 500 Sites cost the hub about 40 ms of CPU: a deep copy of each object handed out, then `json.dumps` of the
whole page; 20 pages for 10,000 Sites, every time anyone lists them. kube-apiserver does neither: it serves lists
from its watch cache without copying (kubernetes/kubernetes, staging/src/k8s.io/apiserver/pkg/storage/cacher/
`cacher.go`, `GetList`: the list's items are set from the cached objects, which no reader may modify) and encodes in
Go; what it caches is an object's encoding, computed once however many watchers receive it (`caching_object.go`,
`cachingObject.CacheEncode`, one result per encoder), and dropped after the event is dispatched (`cacher.go`,
`dispatchEvent`: keeping serializations would cost memory). In Python the encoding is the cost, so the hub keeps
it longer: one encoding per object, for the version it was made from.

Exact, not approximate: a stored object is never changed in place except by `Store.bump`, which gives it a new
resourceVersion, and every write stores a new object with a new resourceVersion (`snoreloc_sim.kube.model.Store`); an
entry is used only when the object's uid and resourceVersion are those it was encoded from, so a page is byte for
byte what `json.dumps` of the same objects gives. Bounded: at most `budget` bytes of encodings, the oldest dropped
first (an object dropped is encoded again when next listed), and one entry per object (its older versions replaced).
"""

from __future__ import annotations

import collections
import json
import threading
from typing import Any, NamedTuple

Obj = dict[str, Any]
DEFAULT_BUDGET = 64 * 1024 * 1024  # bytes: 10,000 Sites of the fleet benchmark are 13.6 MB


class Encoded(NamedTuple):
    """One object as a page carries it: its key (`namespace/name`, for the continue token) and its JSON."""

    key: str
    raw: bytes


class Encodings:
    """Encodings by object uid, for the resourceVersion they were made from; thread-safe."""

    def __init__(self, budget: int = DEFAULT_BUDGET) -> None:
        self.budget = budget
        self.size = 0  # bytes held
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._by_uid: collections.OrderedDict[str, tuple[str, bytes]] = collections.OrderedDict()

    def encode(self, obj: Obj) -> Encoded:
        """`obj` (a stored object, read under the store's lock) as `json.dumps` gives it, from the cache if this
        version of it was encoded before."""
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        uid, version = meta.get("uid"), meta.get("resourceVersion")
        if not isinstance(uid, str) or not isinstance(version, str):
            return Encoded(key, json.dumps(obj).encode())  # not a stored object: nothing to key it by
        with self._lock:
            entry = self._by_uid.get(uid)
            if entry is not None and entry[0] == version:
                self.hits += 1
                return Encoded(key, entry[1])
        raw = json.dumps(obj).encode()
        with self._lock:
            self.misses += 1
            old = self._by_uid.pop(uid, None)
            if old is not None:
                self.size -= len(old[1])
            self._by_uid[uid] = (version, raw)
            self.size += len(raw)
            while self.size > self.budget and self._by_uid:
                _uid, (_version, dropped) = self._by_uid.popitem(last=False)
                self.size -= len(dropped)
        return Encoded(key, raw)

    def __len__(self) -> int:
        return len(self._by_uid)


def list_body(kind: str, api_version: str, meta: Obj, items: list[Encoded]) -> bytes:
    """The list response, equal byte for byte to `json.dumps` of `{"kind", "apiVersion", "metadata", "items"}`
    (the default separators the server's encoder uses)."""
    head = json.dumps({"kind": kind, "apiVersion": api_version, "metadata": meta})
    return b"".join((head[:-1].encode(), b', "items": [', b", ".join(item.raw for item in items), b"]}"))

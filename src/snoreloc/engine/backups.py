"""Originals of every object before our first change, and `rollback`, which puts them back.

Each backup is one JSON file (0600, in a 0700 directory) named after the object, written atomically before the
write it protects. A Secret's data stays base64 exactly as the API returned it, in a file only root can read:
no weaker than the Secret itself. The first original wins: later runs never overwrite it, so rollback returns to
the factory state however many runs came between. Objects we created are recorded as such and deleted on
rollback; deleted objects (factory mirrors) are created again.
"""

from __future__ import annotations

import copy
import itertools
import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.engine import journal

LOG = logging.getLogger(__name__)

# Server-managed metadata that must not travel back with a restored object.
_SERVER_META = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")


@dataclass(frozen=True)
class Entry:
    """One backup: the object's identity, whether it existed, and its original (None if we created it)."""

    ref: kube.Ref
    original: kube.Obj | None
    sequence: int
    path: Path


def _ref_doc(ref: kube.Ref) -> dict[str, str]:
    return {
        "apiVersion": ref.resource.api_version,
        "kind": ref.resource.kind,
        "name": ref.name,
        "namespace": ref.namespace,
    }


class Store:
    """The backups directory. Implements `context.Backups`."""

    def __init__(self, directory: Path, clock: clock_mod.Clock) -> None:
        self.directory = directory
        self._clock = clock
        self._lock = threading.Lock()
        existing = [e.sequence for e in self.entries()]
        self._sequence = itertools.count(max(existing, default=0) + 1)

    def _file(self, ref: kube.Ref) -> Path:
        return self.directory / f"{ref.key}.json"

    def save(self, ref: kube.Ref, original: kube.Obj | None) -> None:
        path = self._file(ref)
        with self._lock:
            if path.exists():
                return
            doc = {
                "ref": _ref_doc(ref),
                "existed": original is not None,
                "original": original,
                "saved": self._clock.now().isoformat(),
                "sequence": next(self._sequence),
            }
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            journal.write_atomic(path, json.dumps(doc, indent=1, sort_keys=True), mode=0o600)

    def entries(self) -> list[Entry]:
        """Every backup, oldest first."""
        found = []
        for path in sorted(self.directory.glob("*.json")):
            doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            meta = doc["ref"]
            ref = kube.Ref(kube.resource_for(meta["apiVersion"], meta["kind"]), meta["name"], meta["namespace"])
            found.append(Entry(ref, doc["original"] if doc["existed"] else None, int(doc["sequence"]), path))
        return sorted(found, key=lambda e: e.sequence)


def restored(current: kube.Obj, original: kube.Obj) -> kube.Obj:
    """`current` with every field of `original` but status and server-managed metadata put back."""
    result = {k: copy.deepcopy(v) for k, v in original.items() if k not in ("metadata", "status")}
    meta = copy.deepcopy(current.get("metadata", {}))
    for key in ("labels", "annotations", "ownerReferences", "finalizers"):
        if key in original.get("metadata", {}):
            meta[key] = copy.deepcopy(original["metadata"][key])
        else:
            meta.pop(key, None)
    result["metadata"] = meta
    if "status" in current:
        result["status"] = current["status"]
    return result


def _recreatable(original: kube.Obj) -> kube.Obj:
    obj = copy.deepcopy(original)
    obj.pop("status", None)
    for key in _SERVER_META:
        obj.get("metadata", {}).pop(key, None)
    return obj


@dataclass(frozen=True)
class RollbackResult:
    restored: tuple[str, ...]
    deleted: tuple[str, ...]
    recreated: tuple[str, ...]


def rollback(client: kube.Client, store: Store) -> RollbackResult:
    """Put every saved original back, newest first; delete what we created. Each backup is removed once done."""
    restored_refs, deleted, recreated = [], [], []
    for entry in reversed(store.entries()):
        if entry.original is None:
            try:
                client.delete(entry.ref)
                deleted.append(str(entry.ref))
            except kube.NotFound:
                pass
        elif client.find(entry.ref) is None:
            client.create(entry.ref.resource, _recreatable(entry.original))
            recreated.append(str(entry.ref))
        else:
            original = entry.original
            client.modify(entry.ref, lambda current, original=original: restored(current, original))  # type: ignore[misc]
            restored_refs.append(str(entry.ref))
        LOG.info("rolled back %s", entry.ref)
        entry.path.unlink()
    return RollbackResult(tuple(restored_refs), tuple(deleted), tuple(recreated))

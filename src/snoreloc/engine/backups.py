"""Originals of every object before our first change, and `rollback`, which puts them back.

Each backup is one JSON file (0600, in a 0700 directory) named after the object, written atomically before the
write it protects. A step that changes many objects of one kind at once (thousands of routes) saves them as one
batch file instead, written atomically and synced before the first of those writes: one fsync for the batch
rather than one per object, with the same guarantee. A Secret's data stays base64 exactly as the API returned
it, in a file only root can read: no weaker than the Secret itself. The first original wins: later runs never
overwrite it, so rollback returns to the factory state however many runs came between. Objects we created are
recorded as such and deleted on rollback; deleted objects (factory mirrors) are created again.

Each backup also records what restoring it sets in motion (`rollback`: the setting's declaration, as the step that
wrote the object gave it; `engine.unrecorded` judges a backup without one, as written before issue 31). The node is
not ours to restore whole (kubelet and the machine-config daemon keep its labels, annotations and status): for it
only the label keys a step set are kept (`<ref>.labels.json`, their factory values or their absence), a later run's
new keys added to the same file, and rollback puts back just those keys, leaving every other label as it is.
"""

from __future__ import annotations

import collections
import copy
import itertools
import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from snoreloc import errors, safefile, waits
from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.siteconfig import setting
from snoreloc.steps import context

LOG = logging.getLogger(__name__)

_BATCH_PREFIX = "batch."  # batch files: `batch.<first sequence>.json`, holding `{"batch": [entry, ...]}`
_BATCH_KEY = "batch"
# Server-managed metadata that must not travel back with a restored object.
_SERVER_META = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")


@dataclass(frozen=True)
class Entry:
    """One backup: the object's identity, whether it existed, and its original (None if we created it)."""

    ref: kube.Ref
    original: kube.Obj | None
    sequence: int
    path: Path
    rollback: setting.Rollback | None = None  # None: not recorded (a backup from before issue 31)
    labels: tuple[str, ...] | None = None  # only these label keys are ours to put back; None: the whole object


def _ref_doc(ref: kube.Ref) -> dict[str, Any]:
    return {
        "apiVersion": ref.resource.api_version,
        "kind": ref.resource.kind,
        "name": ref.name,
        "namespace": ref.namespace,
        "plural": ref.resource.plural,  # kinds snoreloc does not know (extra manifests) are found again by these
        "namespaced": ref.resource.namespaced,
    }


class Store:
    """The backups directory. Implements `context.Backups`."""

    def __init__(self, directory: Path, clock: clock_mod.Clock) -> None:
        self.directory = directory
        self._clock = clock
        self._lock = threading.Lock()
        self.corrupt: dict[Path, str] = {}  # backup files that cannot be read, with the reason
        existing = self.entries()
        self._saved = {e.ref.key for e in existing}
        self._sequence = itertools.count(max((e.sequence for e in existing), default=0) + 1)

    def _file(self, ref: kube.Ref) -> Path:
        return self.directory / f"{ref.key}.json"

    def _doc(self, ref: kube.Ref, original: kube.Obj | None, keep: context.Keep = context.WHOLE) -> dict[str, Any]:
        doc = {
            "ref": _ref_doc(ref),
            "existed": original is not None,
            "original": original,
            "saved": self._clock.now().isoformat(),
            "sequence": next(self._sequence),
        }
        if keep.rollback is not None:
            doc[_ROLLBACK_KEY] = keep.rollback.as_doc()
        return doc

    def _write(self, path: Path, text: str) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        safefile.write(path, text)

    def save(self, ref: kube.Ref, original: kube.Obj | None, keep: context.Keep = context.WHOLE) -> None:
        if keep.labels is not None and original is not None:
            self._save_labels(ref, original, keep)
            return
        path = self._file(ref)
        with self._lock:
            if ref.key in self._saved or path.exists():
                return
            self._write(path, json.dumps(self._doc(ref, original, keep), indent=1, sort_keys=True))
            self._saved.add(ref.key)

    def _save_labels(self, ref: kube.Ref, current: kube.Obj, keep: context.Keep) -> None:
        """Keep the values (or absence) of `keep.labels` on `current`, adding to what an earlier run kept: the first
        value of each key wins, as the first original of an object does."""
        path = self.directory / f"{ref.key}{_LABELS_SUFFIX}"
        labels = (current.get("metadata") or {}).get("labels") or {}
        with self._lock:
            doc = json.loads(safefile.read(path, safefile.BACKUP)) if path.exists() else None
            kept: dict[str, str | None] = dict(doc[_LABELS_KEY]) if doc else {}
            fresh = {key: labels.get(key) for key in keep.labels or () if key not in kept}
            if not fresh:
                return
            kept.update(fresh)
            meta = {"name": ref.name, "labels": {key: value for key, value in kept.items() if value is not None}}
            new = doc or self._doc(ref, {"metadata": meta}, keep)
            new["original"] = {"metadata": meta}
            new[_LABELS_KEY] = dict(sorted(kept.items()))
            self._write(path, json.dumps(new, indent=1, sort_keys=True))

    def save_many(self, originals: Sequence[tuple[kube.Ref, kube.Obj | None]]) -> None:
        """`save` for many objects with one durable write: those not saved yet go into one batch file."""
        with self._lock:
            fresh = {ref.key: (ref, original) for ref, original in originals if ref.key not in self._saved}
            if not fresh:
                return
            docs = [self._doc(ref, original) for ref, original in fresh.values()]
            path = self.directory / f"{_BATCH_PREFIX}{docs[0]['sequence']:08d}.json"
            self._write(path, json.dumps({_BATCH_KEY: docs}, separators=(",", ":"), sort_keys=True))
            self._saved.update(fresh)

    def entries(self) -> list[Entry]:
        """Every backup, oldest first."""
        found = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                found += _read_entries(path)
            except _UNREADABLE as exc:
                self.corrupt[path] = _reason(exc)
        return sorted(found, key=lambda e: e.sequence)

    def usable(self) -> Store:
        """This store, if every backup file can be read: a run must not add to backups it could not roll back."""
        if self.corrupt:
            raise errors.UnavailableError(
                f"cannot read the backup {_listed(self.corrupt)}, so a rollback could not restore what it holds",
                hint="Run `snoreloc rollback` to restore everything else; then restore or drop that object by hand "
                "and remove the file.",
            )
        return self


_UNREADABLE = (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError)
_ROLLBACK_KEY = "rollback"
_LABELS_KEY = "labels"
_LABELS_SUFFIX = ".labels.json"


def _read_entries(path: Path) -> list[Entry]:
    """The entries of one backup file (one object, or a batch); raises one of `_UNREADABLE` on a corrupt file."""
    doc = json.loads(safefile.read(path, safefile.BACKUP))
    return [_entry(one, path) for one in doc.get(_BATCH_KEY, [doc])]


def _reason(exc: BaseException) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON ({exc.msg})"
    if isinstance(exc, OSError | ValueError):
        return str(exc) or type(exc).__name__
    return f"not a backup of the expected shape ({type(exc).__name__})"


def _listed(corrupt: dict[Path, str]) -> str:
    return "; ".join(f"{path}: {reason}" for path, reason in corrupt.items())


def _entry(doc: dict[str, Any], path: Path) -> Entry:
    meta = doc["ref"]
    resource = kube.resource_for(meta["apiVersion"], meta["kind"], meta.get("plural", ""), meta.get("namespaced"))
    ref = kube.Ref(resource, meta["name"], meta["namespace"])
    rollback = setting.Rollback.from_doc(doc[_ROLLBACK_KEY]) if _ROLLBACK_KEY in doc else None
    labels = tuple(doc[_LABELS_KEY]) if _LABELS_KEY in doc else None
    return Entry(ref, doc["original"] if doc["existed"] else None, int(doc["sequence"]), path, rollback, labels)


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


def restored_entry(entry: Entry, current: kube.Obj) -> kube.Obj:
    """`current` as restoring `entry` leaves it: the whole original back, or only the entry's label keys."""
    assert entry.original is not None
    if entry.labels is None:
        return restored(current, entry.original)
    result = copy.deepcopy(current)
    labels = result.setdefault("metadata", {}).setdefault("labels", {})
    before = entry.original.get("metadata", {}).get("labels") or {}
    for key in entry.labels:
        if key in before:
            labels[key] = before[key]
        else:
            labels.pop(key, None)
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
    namespaces: tuple[kube.Ref, ...] = ()  # the deleted namespaces, gone only once their content is


def rollback(client: kube.Client, store: Store) -> RollbackResult:
    """Put every saved original back, newest first; delete what we created. Each backup file is removed once all
    of its entries are done (a batch when its last object is; redoing a restored object writes nothing)."""
    done: dict[str, list[str]] = {"restored": [], "deleted": [], "recreated": [], "": []}
    entries = store.entries()
    left = collections.Counter(entry.path for entry in entries)
    for entry in reversed(entries):
        done[_roll_back(client, entry)].append(str(entry.ref))
        LOG.info("rolled back %s", entry.ref)
        left[entry.path] -= 1
        if not left[entry.path]:
            entry.path.unlink()
    if store.corrupt:
        raise errors.UnavailableError(
            f"rolled back {len(entries)} objects, but cannot read the backup {_listed(store.corrupt)}",
            hint="Restore or drop the object that file held by hand, remove the file, and re-run `snoreloc rollback`.",
        )
    namespaces = tuple(e.ref for e in entries if e.original is None and e.ref.resource.kind == "Namespace")
    deleted = set(done["deleted"])
    return RollbackResult(
        tuple(done["restored"]),
        tuple(done["deleted"]),
        tuple(done["recreated"]),
        tuple(ref for ref in namespaces if str(ref) in deleted),
    )


NAMESPACE_GONE_SECONDS = 600.0


def await_gone(client: kube.Client, clock: clock_mod.Clock, refs: Sequence[kube.Ref]) -> None:
    """Wait (bounded, visible) until every namespace in `refs` is gone. A namespace's deletion is asynchronous:
    it is Terminating while the namespace controller removes its content, and creating anything in it meanwhile is
    refused ("unable to create new content in namespace ... because it is being terminated"), so a re-run right
    after a rollback would fail on a real cluster."""
    if not refs:
        return

    def gone() -> bool | None:
        left = [str(ref) for ref in refs if client.find(ref) is not None]
        if left:
            raise errors.TemporaryError(f"still terminating: {', '.join(left)}")
        return True

    what = f"the deleted namespace(s) {', '.join(ref.name for ref in refs)} to be gone"
    waits.until(gone, waits.Wait("rollback", what, NAMESPACE_GONE_SECONDS, interval=2.0), clock)
    waits.PROGRESS.info("rollback: the deleted namespace(s) %s are gone", ", ".join(ref.name for ref in refs))


def _roll_back(client: kube.Client, entry: Entry) -> str:
    """Put one original back; which of restored/deleted/recreated it was ("" when there was nothing to do)."""
    if entry.original is None:
        try:
            client.delete(entry.ref)
        except kube.NotFound:
            return ""
        return "deleted"
    if client.find(entry.ref) is None:
        if entry.labels is not None:  # the node is gone: its labels went with it
            return ""
        client.create(entry.ref.resource, _recreatable(entry.original))
        return "recreated"
    client.modify(entry.ref, lambda current: restored_entry(entry, current))
    return "restored"

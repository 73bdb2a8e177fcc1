"""Server-side apply: field ownership per manager, conflicts, and the merge kube-apiserver performs.

Modelled on "Server-Side Apply" (kubernetes.io/docs/reference/using-api/server-side-apply/) and its engine,
sigs.k8s.io/structured-merge-diff: an apply names the fields its manager has an opinion on; the server

- refuses (409 Conflict, one `FieldManagerConflict` cause per field) when a field another manager owns would get a
  different value, unless the request says `force=true`, which moves those fields to the applier;
- removes the fields the applier owned before and no longer names, unless another manager still owns them;
- merges the applied fields into the live object: maps key by key, lists by their list type
  (`x-kubernetes-list-type: map` items by their `x-kubernetes-list-map-keys`, `set` as a union; built-in kinds use
  their strategic merge keys, see `patch.KEYED_LISTS`), every other list atomically (replaced whole);
- records the applier's fields as a `managedFields` entry with `operation: Apply` (fieldsV1 notation: `f:<name>`,
  `k:<json keys>` for a keyed item, `v:<json value>` for a set member, `.` for an item itself).

Non-apply writes (PUT, the other patch types) to an object that carries managed fields move the fields they change
to their manager (the `fieldManager` parameter, else the User-Agent's product name) as an `Update` entry, and drop
removed fields from every manager, as the docs' "Field management" section says. An object that has no managed
fields yet (the simulator's seed, objects created without apply) gets them on its first apply: every field it has
then belongs to `before-first-apply` (operation Update), the name kube-apiserver uses for the same situation.
Every create and update records its manager too (k8s.io/apimachinery pkg/util/managedfields/internal/
fieldmanager.go, `FieldManager.Update`; the manager is `fieldManager` or the User-Agent up to its first "/",
as k8s.io/apiserver pkg/endpoints/handlers/rest.go `prefixFromUserAgent`), so a later apply of the same field
conflicts with a named manager.

Fields that never take part: apiVersion, kind, metadata.name/namespace/uid/resourceVersion/generation/
creationTimestamp/managedFields/selfLink, and status (written through its subresource).
"""

from __future__ import annotations

import json
from typing import Any

from snoreloc_sim.kube import model, patch

Obj = dict[str, Any]
Path = tuple[str, ...]
Fields = frozenset[Path]

APPLY = "Apply"
UPDATE = "Update"
BEFORE_FIRST_APPLY = "before-first-apply"
ITEM = "."  # in fieldsV1, the list item (or map) itself
_IGNORED_META = frozenset(
    {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink"}
)
_IGNORED_TOP = frozenset({"apiVersion", "kind", "status"})


# the shape of a type: which lists merge how -----------------------------------------------------------------------


class Shape:
    """The list semantics of one type, from its OpenAPI schema (CRDs) or its strategic keys (built-in kinds)."""

    def __init__(self, schema: Obj | None, builtin: bool) -> None:
        self.schema = schema or {}
        self.builtin = builtin

    def child(self, schema: Obj, name: str) -> Obj:
        found = (schema.get("properties") or {}).get(name)
        if found is None and isinstance(schema.get("additionalProperties"), dict):
            found = schema["additionalProperties"]
        return found or {}

    def list_kind(self, schema: Obj, names: Path) -> tuple[str, tuple[str, ...]]:
        """("map", keys), ("set", ()) or ("atomic", ()) for the list at field names `names`."""
        if self.builtin:
            if names in patch.SET_LISTS:
                return "set", ()
            key = patch.KEYED_LISTS.get(names)
            return ("map", (key,)) if key else ("atomic", ())
        kind = schema.get("x-kubernetes-list-type")
        if kind == "map":
            return "map", tuple(schema.get("x-kubernetes-list-map-keys") or ())
        if kind == "set":
            return "set", ()
        return "atomic", ()


def item_key(item: Any, keys: tuple[str, ...]) -> str:
    identity = {key: item.get(key) for key in keys} if isinstance(item, dict) else {}
    return "k:" + json.dumps(identity, sort_keys=True, separators=(",", ":"))


def set_key(item: Any) -> str:
    return "v:" + json.dumps(item, sort_keys=True, separators=(",", ":"))


# field sets -------------------------------------------------------------------------------------------------------


def field_set(shape: Shape, obj: Obj) -> Fields:
    """Every field `obj` sets, as fieldsV1 paths (leaves, plus `.` for each keyed or set list item)."""
    return frozenset(leaves(shape, obj))


def leaves(shape: Shape, obj: Obj) -> dict[Path, Any]:
    """`field_set` with the value at each path (the item itself for `.` and set members)."""
    out: dict[Path, Any] = {}
    for key, value in obj.items():
        if key in _IGNORED_TOP:
            continue
        if key == "metadata" and isinstance(value, dict):
            meta = {k: v for k, v in value.items() if k not in _IGNORED_META}
            if meta:
                _walk(shape, shape.child(shape.schema, key), meta, ("f:metadata",), ("metadata",), out=out)
            continue
        _walk(shape, shape.child(shape.schema, key), value, (f"f:{key}",), (key,), out=out)
    return out


def _walk(shape: Shape, schema: Obj, value: Any, path: Path, names: Path, *, out: dict[Path, Any]) -> None:
    if isinstance(value, dict) and value and schema.get("x-kubernetes-map-type") != "atomic":
        for key, item in value.items():
            _walk(shape, shape.child(schema, key), item, (*path, f"f:{key}"), (*names, key), out=out)
        return
    if isinstance(value, list) and value:
        kind, keys = shape.list_kind(schema, names)
        if kind == "map":
            items = schema.get("items") or {}
            for item in value:
                where = (*path, item_key(item, keys))
                out[(*where, ITEM)] = item
                if isinstance(item, dict):
                    for key, sub in item.items():
                        _walk(shape, shape.child(items, key), sub, (*where, f"f:{key}"), (*names, key), out=out)
            return
        if kind == "set":
            out.update(((*path, set_key(item)), item) for item in value)
            return
    out[path] = value


def to_v1(fields: Fields) -> Obj:
    """The fieldsV1 document of a set of paths."""
    root: Obj = {}
    for path in sorted(fields):
        node = root
        for part in path:
            node = node.setdefault(part, {})
    return root


def from_v1(doc: Any, prefix: Path = ()) -> Fields:
    """The set of paths a fieldsV1 document names (its leaves)."""
    if not isinstance(doc, dict) or not doc:
        return frozenset({prefix}) if prefix else frozenset()
    out: set[Path] = set()
    for key, sub in doc.items():
        out |= from_v1(sub, (*prefix, key))
    return frozenset(out)


# reading and changing values at a path ----------------------------------------------------------------------------

_MISSING = object()


def _step(node: Any, part: str) -> Any:
    if part.startswith("f:") and isinstance(node, dict):
        return node.get(part[2:], _MISSING)
    if part.startswith("k:") and isinstance(node, list):
        identity = json.loads(part[2:])
        keys = tuple(identity)
        return next((item for item in node if item_key(item, keys) == part), _MISSING)
    if part.startswith("v:") and isinstance(node, list):
        return next((item for item in node if set_key(item) == part), _MISSING)
    return _MISSING


def value_at(obj: Obj, path: Path) -> Any:
    node: Any = obj
    for part in path:
        if part == ITEM:
            return node
        node = _step(node, part)
        if node is _MISSING:
            return _MISSING
    return node


def _remove(obj: Obj, path: Path) -> None:
    """Delete the field, set member or keyed item at `path` (an item when the path ends in `.`)."""
    if path and path[-1] == ITEM:
        path = path[:-1]
    parent = value_at(obj, path[:-1]) if len(path) > 1 else obj
    last = path[-1]
    if isinstance(parent, dict) and last.startswith("f:"):
        parent.pop(last[2:], None)
        if not parent and len(path) > 1 and path[-2].startswith("f:"):
            _remove(obj, path[:-1])  # a map our field was the last of goes too
    elif isinstance(parent, list):
        doomed = _step(parent, last)
        if doomed is not _MISSING:
            parent.remove(doomed)


# the merge --------------------------------------------------------------------------------------------------------


def merge(shape: Shape, live: Any, applied: Any, schema: Obj, names: Path) -> Any:
    """`applied` merged into `live` as apply merges: maps by key, keyed/set lists by item, the rest replaced."""
    if isinstance(applied, dict) and isinstance(live, dict) and schema.get("x-kubernetes-map-type") != "atomic":
        out = model.clone(live)
        for key, value in applied.items():
            sub = shape.child(schema, key)
            out[key] = merge(shape, live[key], value, sub, (*names, key)) if key in live else model.clone(value)
        return out
    if isinstance(applied, list) and isinstance(live, list):
        kind = shape.list_kind(schema, names)[0]
        if kind == "map":
            return _merge_keyed(shape, live, applied, schema, names)
        if kind == "set":
            return model.clone(live) + [model.clone(item) for item in applied if item not in live]
    return model.clone(applied)


def _merge_keyed(shape: Shape, live: list[Any], applied: list[Any], schema: Obj, names: Path) -> list[Any]:
    items, keys = schema.get("items") or {}, shape.list_kind(schema, names)[1]
    out = model.clone(live)
    for item in applied:
        position = next((i for i, old in enumerate(out) if item_key(old, keys) == item_key(item, keys)), None)
        if position is None:
            out.append(model.clone(item))
        else:
            out[position] = merge(shape, out[position], item, items, names)
    return out


# managedFields ----------------------------------------------------------------------------------------------------


def owners(obj: Obj) -> list[Obj]:
    return [entry for entry in obj.get("metadata", {}).get("managedFields") or [] if isinstance(entry, dict)]


def _owned(entry: Obj) -> Fields:
    return from_v1(entry.get("fieldsV1") or {})


def _entry(manager: str, operation: str, api_version: str, fields: Fields, previous: Obj | None) -> Obj:
    same = previous is not None and _owned(previous) == fields and previous.get("apiVersion") == api_version
    stamp = previous.get("time") if same and previous is not None else model.now_rfc3339()
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": stamp,
        "fieldsType": "FieldsV1",
        "fieldsV1": to_v1(fields),
    }


def _with_first_owner(shape: Shape, live: Obj, api_version: str) -> list[Obj]:
    """The live object's entries; for an object never applied, everything it has belongs to `before-first-apply`."""
    found = owners(live)
    if found:
        return found
    fields = field_set(shape, live)
    return [_entry(BEFORE_FIRST_APPLY, UPDATE, api_version, fields, None)] if fields else []


def _conflicts(live: Obj, applied: Obj, fields: Fields, others: list[Obj]) -> list[tuple[str, Path]]:
    found = []
    for entry in others:
        for path in sorted(fields & _owned(entry)):
            if path[-1] != ITEM and value_at(live, path) != value_at(applied, path):
                found.append((_manager_label(entry), path))
    return found


def _manager_label(entry: Obj) -> str:
    """How a conflict names a manager (k8s.io/apimachinery pkg/util/managedfields/internal/conflict.go,
    `printManager`, over the identifier `BuildManagerIdentifier` builds without the time): `"name"` for an
    applier, `"name" using <apiVersion>` for an updater."""
    label = json.dumps(str(entry.get("manager", "")))
    if entry.get("subresource"):
        label += f" with subresource {json.dumps(entry['subresource'])}"
    if entry.get("operation") == UPDATE:
        label += f" using {entry.get('apiVersion', '')}"
    return label


def _element(part: str) -> str:
    """One fieldsV1 step as structured-merge-diff's `fieldpath.Path.String` prints it: `.name`, `[key="v"]`, `[=v]`."""
    if part.startswith("f:"):
        return "." + part[2:]
    if part.startswith("k:"):
        identity: Obj = json.loads(part[2:])
        return "[" + ",".join(f"{key}={json.dumps(value)}" for key, value in identity.items()) + "]"
    return f"[={part[2:]}]"


def _dotted(path: Path) -> str:
    return "".join(_element(part) for part in path if part != ITEM)


def conflict_error(found: list[tuple[str, Path]]) -> model.ApiError:
    """The 409 kube-apiserver answers (conflict.go, `NewConflictError` and `getConflictMessage`): one
    `FieldManagerConflict` cause per field naming its manager; one conflict in one line, several grouped by
    manager in sorted order."""
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {manager}", "field": _dotted(path)}
        for manager, path in found
    ]
    if len(found) == 1:
        manager, path = found[0]
        message = f"Apply failed with 1 conflict: conflict with {manager}: {_dotted(path)}"
        return model.ApiError(409, "Conflict", message, causes=causes)
    lines = []
    for manager in sorted({manager for manager, _path in found}):
        lines.append(f"conflicts with {manager}:")
        lines += [f"- {_dotted(path)}" for owner, path in found if owner == manager]
    message = f"Apply failed with {len(found)} conflicts: " + "\n".join(lines)
    return model.ApiError(409, "Conflict", message, causes=causes)


def apply(shape: Shape, live: Obj | None, applied: Obj, manager: str, api_version: str, *, force: bool) -> Obj:
    """The object after `manager` applies `applied` to `live` (None: it does not exist yet); raises 409 on conflict."""
    fields = field_set(shape, applied)
    if live is None:
        result = model.clone(applied)
        result.setdefault("metadata", {})["managedFields"] = [_entry(manager, APPLY, api_version, fields, None)]
        return result
    entries = _with_first_owner(shape, live, api_version)
    mine = next((e for e in entries if e.get("manager") == manager and e.get("operation") == APPLY), None)
    others = [e for e in entries if e is not mine]
    conflicts = _conflicts(live, applied, fields, others)
    if conflicts and not force:
        raise conflict_error(conflicts)
    taken = frozenset(path for _manager, path in conflicts)
    kept = [(e, _owned(e) - taken) for e in others]
    released = _owned(mine) - fields if mine else frozenset()
    result = _without_released(live, released, [owned for _e, owned in kept])
    merged: Obj = merge(shape, result, _applicable(applied), shape.schema, ())
    new_entries = [kept_entry for e, owned in kept if (kept_entry := _left(e, owned, merged)) is not None]
    new_entries.append(_entry(manager, APPLY, api_version, fields, mine))
    merged.setdefault("metadata", {})["managedFields"] = new_entries
    return merged


def _without_released(live: Obj, released: Fields, others: list[Fields]) -> Obj:
    """`live` without the fields the applier no longer names, except those another manager still owns."""
    result = model.clone(live)
    still_owned = frozenset().union(*others) if others else frozenset()
    for path in sorted(released, key=_removal_order):
        if not any(_under(other, path) for other in still_owned) and not _is_key_field(path):
            _remove(result, path)
    return result


def _applicable(applied: Obj) -> Obj:
    out = {k: v for k, v in applied.items() if k not in _IGNORED_TOP}
    meta = out.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = {k: v for k, v in meta.items() if k not in _IGNORED_META}
    return out


def _removal_order(path: Path) -> tuple[bool, int]:
    """Whole items first (their fields go with them), then the deepest fields first (so emptied maps go too)."""
    return path[-1] != ITEM, -len(path)


def _is_key_field(path: Path) -> bool:
    """A keyed item's own key field: it goes only with the item."""
    if len(path) < 2 or not path[-2].startswith("k:"):
        return False
    identity: Obj = json.loads(path[-2][2:])
    return path[-1][2:] in identity


def _under(path: Path, prefix: Path) -> bool:
    """`path` is `prefix` or lies inside what `prefix` names (an item's `.` stands for the item)."""
    base = prefix[:-1] if prefix and prefix[-1] == ITEM else prefix
    return path[: len(base)] == base


def _left(entry: Obj, owned: Fields, result: Obj) -> Obj | None:
    """What is left of another manager's entry once it owns only `owned` of `result`: the entry rebuilt, or None
    when it owns nothing. A real server's Update entries also own each map they set keys in (`f:data: {.: {}, f:site:
    {}}`: structured-merge-diff's field sets have the map itself as a member), so an Update entry whose every key was
    taken stays, owning its maps: `{"f:data": {}}` (issue 34 saw it on kube-apiserver 1.36). The simulator records
    only the leaves, and keeps such an entry with the maps its lost keys were in that `result` still has."""
    if owned or entry.get("operation") != UPDATE:
        return _rebuilt(entry, owned) if owned else None
    maps = frozenset(
        path[:-1]
        for path in _owned(entry)
        if len(path) > 1 and path[-1].startswith("f:") and isinstance(value_at(result, path[:-1]), dict)
    )
    return _rebuilt(entry, maps) if maps else None


def _rebuilt(entry: Obj, owned: Fields) -> Obj:
    if owned == _owned(entry):
        return entry
    return {**entry, "fieldsV1": to_v1(owned)}


def record_create(shape: Shape, new: Obj, manager: str, api_version: str) -> None:
    """After a create (not an apply): every field it sets belongs to `manager` (operation Update)."""
    fields = field_set(shape, new)
    if fields:
        new.setdefault("metadata", {})["managedFields"] = [_entry(manager, UPDATE, api_version, fields, None)]


def record_update(shape: Shape, old: Obj, new: Obj, manager: str, api_version: str) -> None:
    """After a non-apply write: the changed fields move to `manager` (operation Update), removed ones leave every
    manager. Changes `new`'s metadata in place. Only the top-level fields whose values differ are walked (a route's
    host patch walks `spec`, not the whole object): the rest can neither change nor go."""
    entries = owners(old)
    tops = [key for key in {*old, *new} if key not in _IGNORED_TOP and old.get(key) != new.get(key)]
    before = leaves(shape, {key: old[key] for key in tops if key in old})
    after = leaves(shape, {key: new[key] for key in tops if key in new})
    changed = frozenset(p for p, value in after.items() if p not in before or before[p] != value)
    gone = frozenset(before.keys() - after.keys())
    mine = next((e for e in entries if e.get("manager") == manager and e.get("operation") == UPDATE), None)
    kept = [left for e in entries if e is not mine and (left := _left(e, _owned(e) - changed - gone, new)) is not None]
    ours = ((_owned(mine) - gone) if mine else frozenset()) | changed
    if ours:
        kept.append(_entry(manager, UPDATE, api_version, frozenset(ours), mine))
    meta = new.setdefault("metadata", {})
    if kept or entries:
        meta["managedFields"] = kept
    else:
        meta.pop("managedFields", None)  # a write that changes nothing of an object without entries adds none

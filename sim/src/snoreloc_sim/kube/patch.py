"""The three patch dialects of kube-apiserver besides apply, applied to a stored object as the real server does.

The agent patches rather than replaces wherever it can, so the simulator must apply each dialect faithfully and
refuse where kube refuses:

- `application/merge-patch+json` (RFC 7386): maps merge, `null` deletes a key, any list replaces the whole list.
- `application/json-patch+json` (RFC 6902): add/remove/replace/move/copy/test on JSON pointers. A body that is not
  a list of well-formed operations is 400 BadRequest; an operation that cannot apply (missing path, failed `test`,
  an unknown `op`) is 422, as kube-apiserver answers (k8s.io/apiserver pkg/endpoints/handlers/patch.go answers the
  library's Apply errors with 422); a `test` for null passes on a missing key (evanphx/json-patch patch.go, `test`).
- `application/strategic-merge-patch+json`: built-in types only (CRDs get 415, see `api.patches`). A documented subset:
  maps merge and `null` deletes; a map carrying `"$patch": "replace"` replaces, `"$patch": "delete"` removes it;
  lists replace, except these, which merge as kube's struct tags say:
  `metadata.finalizers` (a set of strings), `metadata.ownerReferences` by `uid`, `spec.containers`,
  `spec.initContainers`, `spec.volumes`, `spec.containers.env` by `name`, `spec.containers.ports` by
  `containerPort`, `status.conditions` and `status.addresses` by `type`. In keyed lists an item with
  `"$patch": "delete"` removes the stored item with the same key; `$deleteFromPrimitiveList/<field>` removes
  strings from a merged set; `$setElementOrder/<field>` and `$retainKeys` are accepted and ignored.
- `application/apply-patch+yaml` (server-side apply) is served by `api.patches` with the field ownership of `apply`.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from typing import Any

from snoreloc_sim.kube import model

Obj = dict[str, Any]
Path = tuple[str, ...]


class PatchType(enum.Enum):
    MERGE = "application/merge-patch+json"
    JSON = "application/json-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"
    APPLY = "application/apply-patch+yaml"


def patch_type(content_type: str) -> PatchType | None:
    """The dialect a request's Content-Type names (parameters after `;` ignored), or None."""
    bare = content_type.split(";", 1)[0].strip().lower()
    return next((kind for kind in PatchType if kind.value == bare), None)


def _bad_request(message: str) -> model.ApiError:
    return model.ApiError(400, "BadRequest", message)


def _unprocessable(message: str) -> model.ApiError:
    return model.ApiError(422, "Invalid", message)


def decode(body: bytes) -> Any:
    try:
        return json.loads(body or b"null")
    except ValueError as exc:
        raise _bad_request(f"error decoding patch: {exc}") from None


def apply(kind: PatchType, target: Obj, body: bytes) -> Obj:
    """The object after the patch; `target` is left untouched. Raises ApiError as kube-apiserver would."""
    document = decode(body)
    if kind is PatchType.JSON:
        return json_patch(target, document)
    if not isinstance(document, dict):
        raise _bad_request("error decoding patch: a merge patch must be a JSON object")
    if kind is PatchType.MERGE:
        merged: Obj = merge_patch(target, document)
        return merged
    if kind is PatchType.STRATEGIC:
        return strategic_merge(target, document)
    raise model.ApiError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {kind.value}")


# RFC 7386 ---------------------------------------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: a map patch merges key by key (null deletes); anything else replaces."""
    if not isinstance(patch, dict):
        return model.clone(patch)
    result = model.clone(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# RFC 6902 ---------------------------------------------------------------------------------------------------------


def _pointer(path: object) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise _bad_request(f"invalid JSON pointer {path!r}")
    if path == "":
        return []
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _index(container: list[Any], part: str, *, allow_end: bool) -> int:
    if allow_end and part == "-":
        return len(container)
    if not part.isdigit() or (len(part) > 1 and part.startswith("0")):
        raise _unprocessable(f"invalid array index {part!r}")
    index = int(part)
    if index > len(container) or (index == len(container) and not allow_end):
        raise _unprocessable(f"array index {index} out of bounds (length {len(container)})")
    return index


def _parent(doc: Any, tokens: list[str], path: str) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, allow_end=False)]
        else:
            raise _unprocessable(f"doc is missing path: {path!r}")
    if not isinstance(node, dict | list):
        raise _unprocessable(f"doc is missing path: {path!r}")
    return node


def _get(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return doc
    parent, last = _parent(doc, tokens, path), tokens[-1]
    if isinstance(parent, list):
        return parent[_index(parent, last, allow_end=False)]
    if last not in parent:
        raise _unprocessable(f"doc is missing key: {path!r}")
    return parent[last]


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent, last = _parent(doc, tokens, path), tokens[-1]
    if isinstance(parent, list):
        parent.insert(_index(parent, last, allow_end=True), value)
    else:
        parent[last] = value
    return doc


def _remove(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        raise _unprocessable("cannot remove the whole document")
    parent, last = _parent(doc, tokens, path), tokens[-1]
    if isinstance(parent, list):
        del parent[_index(parent, last, allow_end=False)]
    elif last in parent:
        del parent[last]
    else:
        raise _unprocessable(f"unable to remove nonexistent key: {path!r}")
    return doc


def _replace(doc: Any, path: str, value: Any) -> Any:
    _get(doc, path)  # replace needs an existing target
    return _add(_remove(doc, path), path, value) if _pointer(path) else value


def same_json(left: Any, right: Any) -> bool:
    """JSON equality: unlike Python's, `true` is not `1`."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same_json(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(same_json(a, b) for a, b in zip(left, right, strict=True))
    return bool(left == right)


def _value(op: Obj) -> Any:
    if "value" not in op:
        raise _bad_request(f"operation {op.get('op')!r} on {op.get('path')!r} has no value")
    return model.clone(op["value"])


def _source(op: Obj) -> str:
    source = op.get("from")
    if not isinstance(source, str):
        raise _bad_request(f"operation {op.get('op')!r} on {op.get('path')!r} has no from")
    return source


def _test(doc: Any, path: str, op: Obj) -> Any:
    """evanphx/json-patch `Patch.test` (patch.go), which kube-apiserver uses: a missing key reads as null, so a
    test for null on a missing path (whose parent exists) passes."""
    wanted = _value(op)
    tokens = _pointer(path)
    if tokens and wanted is None:
        parent = _parent(doc, tokens, path)
        if isinstance(parent, dict) and tokens[-1] not in parent:
            return doc
    if not same_json(_get(doc, path), wanted):
        raise _unprocessable(f"testing value {path} failed: test failed")
    return doc


def _move(doc: Any, path: str, op: Obj) -> Any:
    value = model.clone(_get(doc, _source(op)))
    return _add(_remove(doc, _source(op)), path, value)


_OPERATIONS: dict[str, Callable[[Any, str, Obj], Any]] = {
    "add": lambda doc, path, op: _add(doc, path, _value(op)),
    "remove": lambda doc, path, _op: _remove(doc, path),
    "replace": lambda doc, path, op: _replace(doc, path, _value(op)),
    "move": _move,
    "copy": lambda doc, path, op: _add(doc, path, model.clone(_get(doc, _source(op)))),
    "test": _test,
}


def _operation(doc: Any, op: Obj) -> Any:
    name, path = op.get("op"), op.get("path")
    if not isinstance(path, str):
        raise _bad_request(f"operation {name!r} has no path")
    if name not in _OPERATIONS:  # evanphx/json-patch `Patch.Apply`: an error applying, which the apiserver answers 422
        raise _unprocessable(f"Unexpected kind: {name}")
    return _OPERATIONS[name](doc, path, op)


def json_patch(target: Obj, operations: Any) -> Obj:
    """RFC 6902, all-or-nothing: the operations apply in order to a copy."""
    if not isinstance(operations, list) or not all(isinstance(op, dict) for op in operations):
        raise _bad_request("error decoding patch: a JSON patch must be a list of operations")
    doc: Any = model.clone(target)
    for op in operations:
        doc = _operation(doc, op)
    if not isinstance(doc, dict):
        raise _unprocessable("the patched document is not an object")
    return doc


# strategic merge (subset) -----------------------------------------------------------------------------------------

SET_LISTS: frozenset[Path] = frozenset({("metadata", "finalizers")})
KEYED_LISTS: dict[Path, str] = {
    ("metadata", "ownerReferences"): "uid",
    ("spec", "containers"): "name",
    ("spec", "initContainers"): "name",
    ("spec", "volumes"): "name",
    ("spec", "containers", "env"): "name",
    ("spec", "containers", "ports"): "containerPort",
    ("status", "conditions"): "type",
    ("status", "addresses"): "type",
}
_IGNORED_PREFIXES = ("$setElementOrder/", "$retainKeys")
_DELETE_FROM = "$deleteFromPrimitiveList/"


def strategic_merge(target: Obj, patch: Obj) -> Obj:
    merged = _merge_map(target, patch, ())
    return merged if merged is not None else {}


def _merge_map(target: Any, patch: Obj, path: Path) -> Obj | None:
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    body = {k: v for k, v in patch.items() if k != "$patch"}
    if directive == "replace":
        return _strip(body)
    result = model.clone(target) if isinstance(target, dict) else {}
    for key, value in body.items():
        if key.startswith(_IGNORED_PREFIXES):
            continue
        if key.startswith(_DELETE_FROM):
            _delete_from(result, key.removeprefix(_DELETE_FROM), value)
        elif value is None:
            result.pop(key, None)
        else:
            _merge_key(result, key, value, (*path, key))
    return result


def _merge_key(result: Obj, key: str, value: Any, path: Path) -> None:
    if isinstance(value, dict):
        merged = _merge_map(result.get(key), value, path)
        if merged is None:
            result.pop(key, None)
        else:
            result[key] = merged
    elif isinstance(value, list):
        result[key] = _merge_list(result.get(key), value, path)
    else:
        result[key] = value


def _delete_from(result: Obj, field: str, doomed: Any) -> None:
    if isinstance(result.get(field), list) and isinstance(doomed, list):
        result[field] = [item for item in result[field] if item not in doomed]


def _merge_list(current: Any, patch: list[Any], path: Path) -> list[Any]:
    stored = current if isinstance(current, list) else []
    if path in SET_LISTS:
        return list(stored) + [item for item in patch if item not in stored]
    key = KEYED_LISTS.get(path)
    if key is None:
        return [_strip(item) if isinstance(item, dict) else item for item in patch]
    result = model.clone(stored)
    for item in patch:
        _merge_keyed_item(result, item, key, path)
    return result


def _merge_keyed_item(result: list[Any], item: Any, key: str, path: Path) -> None:
    if not isinstance(item, dict) or key not in item:
        raise model.ApiError(400, "BadRequest", f"map in {'.'.join(path)} has no merge key {key!r}")
    position = next((i for i, old in enumerate(result) if isinstance(old, dict) and old.get(key) == item[key]), None)
    merged = _merge_map(result[position] if position is not None else {}, item, path)
    if position is None:
        if merged is not None:
            result.append(merged)
    elif merged is None:
        del result[position]
    else:
        result[position] = merged


def _strip(value: Obj) -> Obj:
    """A map without patch directives, for places where a patch value is stored as it is."""
    return {k: v for k, v in value.items() if not k.startswith("$")}

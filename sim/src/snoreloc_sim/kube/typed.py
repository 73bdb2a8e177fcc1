"""The typed conversion a server-side apply body goes through before it is merged, and the 500 it ends in.

kube-apiserver's field manager turns an apply body into a typed value of the type's schema before anything else
(k8s.io/apimachinery pkg/util/managedfields/internal/structuredmerge.go, `structuredMergeManager.Apply`:
`typeConverter.ObjectToTyped(patchObj)`, failing with "failed to create typed patch object (%v): %v" where the
first value is `objectGVKNN`, "<namespace>/<name>; <group>/<version>, Kind=<Kind>"). The conversion is
sigs.k8s.io/structured-merge-diff's `typed` package: a struct refuses a field it does not declare ("field not
declared in schema"), a scalar of the wrong type is "expected string, got &value.valueUnstructured{Value:1}", a
keyed list item without its key (unless the key has a default, as a Service port's protocol) "element 0:
associative list with keys has an element that omits key field \"name\"", two items with one key "duplicate
entries for key [name=\"x\"]"; several errors are listed under "errors:" one per line (typed/validate.go,
`ValidationErrors.Error`). The error is a plain Go error, so `responsewriters.ErrorToAPIStatus` (k8s.io/apiserver
pkg/endpoints/handlers/responsewriters/status.go) answers it as a Status with code 500 and no reason, whatever
`fieldValidation` says. The message shapes above are also the ones real clusters print (kubectl and Helm users
quote them, e.g. ".data.VERSION: expected string, got &value.valueUnstructured{Value:1}" for a ConfigMap).

The schema is the one `validation` admits with (a CRD's structural schema, or a built-in kind's in `builtin`);
`x-kubernetes-preserve-unknown-fields`, an `object` without properties, and a node without a type are untyped
(anything goes), as for structured-merge-diff's deduced types. `metadata` is ObjectMeta, a struct of its own.
"""

from __future__ import annotations

import json
from typing import Any

from snoreloc_sim.kube import model

Obj = dict[str, Any]

PREFIX = "failed to create typed patch object"
_STRING_MAP: Obj = {"type": "object", "additionalProperties": {"type": "string"}}
_OPEN: Obj = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
# ObjectMeta (k8s.io/apimachinery pkg/apis/meta/v1/types.go): the fields an apply body may carry.
OBJECT_META: Obj = {
    "type": "object",
    "properties": {
        **{name: {"type": "string"} for name in (
            "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "creationTimestamp",
            "deletionTimestamp",
        )},
        "generation": {"type": "integer"},
        "deletionGracePeriodSeconds": {"type": "integer"},
        "labels": _STRING_MAP,
        "annotations": _STRING_MAP,
        "finalizers": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        "ownerReferences": {"type": "array", "items": _OPEN, "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["uid"]},
        "managedFields": {"type": "array", "items": _OPEN},
    },
}  # fmt: skip


def go_value(value: Any) -> str:
    """A JSON value as Go's `%#v` prints the unstructured value structured-merge-diff holds."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_value(item) for item in value) + "}"
    if isinstance(value, dict):
        inner = ", ".join(f"{json.dumps(k)}:{go_value(v)}" for k, v in value.items())
        return "map[string]interface {}{" + inner + "}"
    return "interface {}(nil)"


def _got(value: Any) -> str:
    return f"&value.valueUnstructured{{Value:{go_value(value)}}}"


def _key_element(item: Obj, keys: list[str]) -> str:
    return "[" + ",".join(f"{key}={json.dumps(item.get(key))}" for key in keys) + "]"


class _Walk:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def node(self, schema: Obj, value: Any, path: str) -> None:
        if value is None or not schema or schema.get("x-kubernetes-int-or-string"):
            return
        kind = schema.get("type")
        if kind == "object":
            self._object(schema, value, path)
        elif kind == "array":
            self._array(schema, value, path)
        elif kind in ("string", "boolean", "integer", "number"):
            self._scalar(kind, value, path)

    def _scalar(self, kind: str, value: Any, path: str) -> None:
        fits = {
            "string": isinstance(value, str),
            "boolean": isinstance(value, bool),
            "integer": isinstance(value, int | float) and not isinstance(value, bool),
            "number": isinstance(value, int | float) and not isinstance(value, bool),
        }[kind]
        if not fits:
            wanted = "numeric (int or float)" if kind in ("integer", "number") else kind
            self.errors.append(f"{path}: expected {wanted}, got {_got(value)}")

    def _object(self, schema: Obj, value: Any, path: str) -> None:
        properties, extra = schema.get("properties"), schema.get("additionalProperties")
        open_ = schema.get("x-kubernetes-preserve-unknown-fields") is True
        if not isinstance(value, dict):
            self.errors.append(f"{path}: expected map, got {_got(value)}")
            return
        if properties is None and not isinstance(extra, dict):
            return  # untyped
        for name, item in value.items():
            where = f"{path}.{name}"
            if properties is not None and name in properties:
                self.node(properties[name], item, where)
            elif isinstance(extra, dict):
                self.node(extra, item, where)
            elif not open_:
                self.errors.append(f"{where}: field not declared in schema")

    def _array(self, schema: Obj, value: Any, path: str) -> None:
        if not isinstance(value, list):
            self.errors.append(f"{path}: expected list, got {_got(value)}")
            return
        items: Obj = schema["items"] if isinstance(schema.get("items"), dict) else {}
        keyed = schema.get("x-kubernetes-list-type") == "map"
        keys = list(schema.get("x-kubernetes-list-map-keys") or ()) if keyed else []
        seen: set[str] = set()
        for index, item in enumerate(value):
            element = f"[{index}]"
            if keys:
                if not isinstance(item, dict):
                    self.errors.append(
                        f"{path}: element {index}: associative list with keys may not have non-map elements"
                    )
                    continue
                defaults = {
                    k for k, v in (items.get("properties") or {}).items() if isinstance(v, dict) and "default" in v
                }
                missing = next((key for key in keys if key not in item and key not in defaults), None)
                if missing is not None:
                    self.errors.append(
                        f"{path}: element {index}: associative list with keys has an element that omits key field "
                        f"{json.dumps(missing)}"
                    )
                    continue
                element = _key_element(item, keys)
                if element in seen:
                    self.errors.append(f"{path}: duplicate entries for key {element}")
                seen.add(element)
            self.node(items, item, f"{path}{element}")


def errors(schema: Obj | None, obj: Obj) -> list[str]:
    """Every conversion error of `obj` against `schema` (None: a type the simulator has no schema for)."""
    if schema is None:
        return []
    walk = _Walk()
    for name, value in obj.items():
        if name in ("apiVersion", "kind"):
            continue
        if name == "metadata":
            walk.node(OBJECT_META, value, ".metadata")
            continue
        found = (schema.get("properties") or {}).get(name)
        if found is None and schema.get("x-kubernetes-preserve-unknown-fields") is not True:
            walk.errors.append(f".{name}: field not declared in schema")
        elif found is not None:
            walk.node(found, value, f".{name}")
    return walk.errors


def gvknn(obj: Obj) -> str:
    """`objectGVKNN`: "<namespace>/<name>; <group>/<version>, Kind=<Kind>" (the core group is empty)."""
    meta = obj.get("metadata") or {}
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    group, _, version = api_version.rpartition("/")
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}; {group}/{version}, Kind={kind}"


def check(schema: Obj | None, obj: Obj) -> None:
    """Raise the 500 kube-apiserver answers when an apply body does not convert to its type."""
    found = errors(schema, obj)
    if not found:
        return
    detail = found[0] if len(found) == 1 else "errors:\n" + "\n".join(f"  {error}" for error in found)
    raise model.ApiError(500, "", f"{PREFIX} ({gvknn(obj)}): {detail}")

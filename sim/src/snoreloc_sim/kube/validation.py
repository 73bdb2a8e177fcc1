"""Admission of objects against the real OpenShift CRD schemas, as kube-apiserver does it for custom resources.

The simulator is the agent's test oracle: whatever a real SNO API server refuses, it must refuse too, with the same
field paths and reasons, or the agent's error handling is tested against fiction. So each write goes through the
steps kube-apiserver applies to a custom resource: prune unknown fields (a warning each), drop non-nullable nulls,
apply OpenAPI defaults, validate the structural schema (types, required, enum, patterns in RE2 syntax, formats,
bounds, list types, combinators), then run the CEL rules unless an earlier error makes that unsafe. All violations
are collected into one 422 `Invalid` status. Built-in kinds (Secret, ConfigMap, ...) are described in `builtin`
and go through the same walker.

Patterns are matched with RE2 itself (`google-re2`, which cel-python already requires, so the `sim` extra brings
it): the CRDs use Go syntax Python's `re` lacks (`\\p{L}`, `\\p{S}`, `[[:cntrl:]]`, a mid-pattern `(?i)`), and a
hand translation would be a second, subtly different dialect.

Formats kube-apiserver does not check on custom resources (`int32`, `int64`, `ip`, `double`) are not checked here
either. Known gap: validation ratcheting (kube >= 1.30 lets an unchanged invalid value through on update) is not
modelled, so such an update is refused here.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import enum
import ipaddress
import json
import logging
import re
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import re2  # type: ignore[import-untyped]  # RE2, as Go; installed with cel-python (the `sim` extra)

from snoreloc_sim.kube import builtin, cel, kinds, model

Obj = dict[str, Any]
REDACTED = "<secret contents redacted>"
_LOG = logging.getLogger(__name__)
_SECRETISH = frozenset({"key", "password", "token", "secret", "privatekey", "clientsecret", "bindpassword"})
_ROOT_KEEP = ("apiVersion", "kind", "metadata")
_ABSENT = object()  # a property not in the object (as opposed to one holding null)
_BLOCKING_MESSAGE = (
    "some validation rules were not checked because the object was invalid; correct the existing errors to "
    "complete validation"
)
_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


class Reason(enum.Enum):
    """kube's field.ErrorType: the cause `reason` and the words that start the message body."""

    REQUIRED = ("FieldValueRequired", "Required value")
    INVALID = ("FieldValueInvalid", "Invalid value")
    TYPE_INVALID = ("FieldValueTypeInvalid", "Invalid value")
    NOT_SUPPORTED = ("FieldValueNotSupported", "Unsupported value")
    DUPLICATE = ("FieldValueDuplicate", "Duplicate value")
    TOO_LONG = ("FieldValueTooLong", "Too long")
    TOO_MANY = ("FieldValueTooMany", "Too many")
    FORBIDDEN = ("FieldValueForbidden", "Forbidden")

    @property
    def cause(self) -> str:
        return self.value[0]

    @property
    def words(self) -> str:
        return self.value[1]

    @classmethod
    def from_cause(cls, cause: str) -> Reason:
        return next((r for r in cls if r.cause == cause), cls.INVALID)


_VALUELESS = frozenset({Reason.REQUIRED, Reason.FORBIDDEN, Reason.TOO_LONG})
_BLOCKING = frozenset({Reason.REQUIRED, Reason.NOT_SUPPORTED, Reason.TOO_LONG, Reason.TOO_MANY, Reason.TYPE_INVALID})


@dataclass(frozen=True)
class FieldError:
    """One violation, rendered as kube's field.Error (`<field>: <body>`)."""

    reason: Reason
    field: str
    value: Any = None
    detail: str = ""

    def body(self) -> str:
        text = self.reason.words
        if self.reason not in _VALUELESS:
            text += ": " + go_value(self.value)
        return f"{text}: {self.detail}" if self.detail else text

    def render(self) -> str:
        return f"{self.field or '<nil>'}: {self.body()}"

    def cause(self) -> dict[str, str]:
        return {"reason": self.reason.cause, "message": self.body(), "field": self.field}


def go_value(value: Any) -> str:
    """How kube prints a bad value: strings quoted, numbers and booleans bare, the rest as JSON."""
    if value is None:
        return '"null"'
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _shown(path: str, value: Any) -> Any:
    """The value an error may show: never the contents of a field that looks like a secret."""
    last = path.rsplit(".", 1)[-1].split("[", 1)[0].lower()
    return REDACTED if last in _SECRETISH and isinstance(value, str) else value


# ---- CRD summaries --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CrdInfo:
    """One generated `<plural>.<group>.json`."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    subresources: tuple[str, ...]
    schema: Obj = field(repr=False)
    name_check: str = "subdomain"  # "subdomain", "label" or "" (metadata.name format)

    @property
    def key(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def qualified_kind(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @classmethod
    def load(cls, path: Path) -> CrdInfo:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return cls(
            group=raw["group"],
            version=raw["version"],
            plural=raw["plural"],
            kind=raw["kind"],
            namespaced=raw["namespaced"],
            subresources=tuple(raw["subresources"]),
            schema=raw["schema"],
        )


def load_crds(crd_dir: Path) -> dict[str, CrdInfo]:
    """Every CRD summary in `crd_dir` (the OpenShift layer's: `openshift.crds.DIR`), by store key `plural.group`."""
    found = {}
    for path in sorted(crd_dir.glob("*.json")):
        info = CrdInfo.load(path)
        found[info.key] = info
    return found


# ---- pruning and defaulting -----------------------------------------------------------------------------------


def _properties(schema: Obj) -> Obj:
    return schema.get("properties") or {}


def _additional(schema: Obj) -> Obj | None:
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        return extra
    return {"x-kubernetes-preserve-unknown-fields": True} if extra is True else None


def prune(schema: Obj, value: Any, path: str, removed: list[str], *, root: bool = False) -> None:
    """Remove, in place, every field the structural schema does not specify; record each path removed."""
    _prune(_node_plan(schema), value, path, removed, root=root)


def _prune_items(plan: _NodePlan, value: list[Any], path: str, removed: list[str]) -> None:
    if plan.items is not None:
        items = _node_plan(plan.items)
        for index, item in enumerate(value):
            if isinstance(item, dict | list):  # nothing to prune in a scalar
                _prune(items, item, f"{path}[{index}]", removed)


def _prune(plan: _NodePlan, value: Any, path: str, removed: list[str], *, root: bool = False) -> None:
    if isinstance(value, list):
        _prune_items(plan, value, path, removed)
        return
    if not isinstance(value, dict):
        return
    properties, extra = plan.properties, plan.extra
    embedded = root or plan.embedded
    for name in list(value):
        sub = properties.get(name) or extra
        if embedded and name == "metadata":
            continue  # ObjectMeta is the server's to manage, not the schema's
        if sub is not None:
            item = value[name]
            if isinstance(item, dict | list):
                _prune(_node_plan(sub), item, _key_path(path, name, name in properties), removed)
        elif not plan.keep_unknown and not (embedded and name in _ROOT_KEEP):
            del value[name]
            removed.append(child(path, name))


def _key_path(path: str, name: str, is_property: bool) -> str:
    return child(path, name) if is_property else f"{path}[{name}]"


def default(schema: Obj, value: Any) -> None:
    """Apply OpenAPI defaults in place, dropping nulls the schema does not allow, as kube-apiserver does."""
    _default(_node_plan(schema), value)


def _default(plan: _NodePlan, value: Any) -> None:
    if isinstance(value, list):
        if plan.items is not None:
            items = _node_plan(plan.items)
            for item in value:
                _default(items, item)
        return
    if not isinstance(value, dict):
        return
    for name, sub in plan.properties.items():
        _default_property(sub, value, name)
    if plan.extra is not None:
        extra = _node_plan(plan.extra)
        for name in set(value) - set(plan.properties):
            _default(extra, value[name])


def _default_property(schema: Obj, parent: Obj, name: str) -> None:
    """A property in schema order: a null it does not allow is dropped, a missing one gets its default, and
    whatever it then holds is defaulted in turn (a scalar has nothing to default)."""
    item = parent.get(name, _ABSENT)
    if isinstance(item, dict | list):
        _default(_node_plan(schema), item)
        return
    if item is None or item is _ABSENT:
        plan = _node_plan(schema)
        if item is None and not plan.nullable:
            del parent[name]
            item = _ABSENT
        if item is _ABSENT and plan.has_default:
            parent[name] = model.clone(schema["default"])
            _default(plan, parent[name])


# ---- structural validation ------------------------------------------------------------------------------------

_JSON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    names: dict[type, str] = {dict: "object", list: "array", str: "string"}
    return names.get(type(value), type(value).__name__)


def _int_or_string(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


def _integer(value: Any) -> bool:
    return not isinstance(value, bool) and (isinstance(value, int) or (isinstance(value, float) and value.is_integer()))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _type_check(schema: Obj) -> Callable[[Any], bool] | None:
    """The predicate a value must satisfy for the node's `type` (None: any type will do)."""
    wanted = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        return _int_or_string
    if not wanted:
        return None
    if wanted == "integer":
        return _integer
    if wanted == "number":
        return _number
    kind = _JSON_TYPES.get(wanted, object)
    return lambda value: isinstance(value, kind)


def same(a: Any, b: Any) -> bool:
    """JSON equality: `true` is not `1`, `1` is `1.0`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


_RE2_COMPILE: Any = re2.compile


def _re2_options() -> Any:
    """The Hostname pattern (`\\p{L}` classes with counted repeats) outgrows RE2's DFA budget; RE2 then falls back to
    its NFA, which is still exact, so the complaint it would log to stderr is switched off."""
    options = re2.Options()
    options.log_errors = False
    return options


class _Patterns:
    """Compiled RE2 patterns, shared by every validator in the process."""

    _lock = threading.Lock()
    _cache: dict[str, Any] = {}

    @classmethod
    def search(cls, pattern: str, text: str) -> bool:
        with cls._lock:
            compiled = cls._cache.get(pattern)
            if compiled is None:
                compiled = cls._cache[pattern] = _RE2_COMPILE(pattern, _re2_options())
        return compiled.search(text) is not None


_HOSTNAME = (
    r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}"
    r"[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$"
)
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
_DURATION = re.compile(r"((-\s?)?\d+(\.\d+)?\s*(ns|us|µs|μs|ms|s|m|h|d|w))+")


def _valid_date_time(text: str) -> bool:
    if not _DATE_TIME.fullmatch(text):
        return False
    try:
        datetime.datetime.fromisoformat(text.replace("z", "Z").replace(" ", "T"))
    except ValueError:
        return False
    return True


def _valid_ip(text: str, version: int) -> bool:
    try:
        return ipaddress.ip_address(text).version == version
    except ValueError:
        return False


def _valid_cidr(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return "/" in text


def _valid_byte(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _valid_uri(text: str) -> bool:
    if not text or any(ch.isspace() for ch in text):
        return False
    return text.startswith("/") or bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", urllib.parse.urlsplit(text).scheme))


# The formats kube-apiserver checks on custom resources (apiextensions `supportedFormats`); the rest are ignored.
_FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": _valid_date_time,
    "datetime": _valid_date_time,
    "date": lambda t: bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", t)),
    "duration": lambda t: bool(_DURATION.fullmatch(t)),
    "ipv4": lambda t: _valid_ip(t, 4),
    "ipv6": lambda t: _valid_ip(t, 6),
    "cidr": _valid_cidr,
    "byte": _valid_byte,
    "uri": _valid_uri,
    "hostname": lambda t: len(t) <= 255 and _Patterns.search(_HOSTNAME, t),
    "uuid": lambda t: bool(re.fullmatch(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", t)),
}


_STRING_KEYWORDS = ("maxLength", "minLength", "pattern")
_NUMBER_KEYWORDS = ("minimum", "maximum", "multipleOf")
_COMBINATORS = ("allOf", "anyOf", "oneOf", "not")


@dataclass(frozen=True, slots=True)
class _NodePlan:
    """What one schema node asks of a value, read from the schema once: validating a write then tests a few flags
    per node instead of looking up every keyword the node might have (most have none of them)."""

    schema: Obj
    skip_null: bool  # nullable, or no type at all: null passes untouched
    type_ok: Callable[[Any], bool] | None
    enum: list[Any] | None
    strings: bool
    numbers: bool
    combinators: bool
    required: tuple[str, ...]
    object_sizes: bool
    array_sizes: bool
    list_type: bool
    properties: Obj  # the schema's own `properties` (the names count as properties even when the schema is empty)
    extra: Obj | None
    items: Obj | None
    nullable: bool
    has_default: bool
    keep_unknown: bool  # x-kubernetes-preserve-unknown-fields
    embedded: bool  # x-kubernetes-embedded-resource

    @classmethod
    def of(cls, schema: Obj) -> _NodePlan:
        items = schema.get("items")
        return cls(
            schema=schema,
            skip_null=bool(schema.get("nullable") or not schema.get("type")),
            type_ok=_type_check(schema),
            enum=schema.get("enum"),
            strings=any(k in schema for k in _STRING_KEYWORDS) or schema.get("format", "") in _FORMATS,
            numbers=any(k in schema for k in _NUMBER_KEYWORDS),
            combinators=bool(
                schema.get("allOf") or schema.get("anyOf") or schema.get("oneOf") or isinstance(schema.get("not"), dict)
            ),
            required=tuple(schema.get("required") or ()),
            object_sizes=schema.get("maxProperties") is not None or schema.get("minProperties") is not None,
            array_sizes=schema.get("maxItems") is not None or schema.get("minItems") is not None,
            list_type=schema.get("x-kubernetes-list-type") in ("set", "map"),
            properties=_properties(schema),
            extra=_additional(schema),
            items=items if isinstance(items, dict) else None,
            nullable=bool(schema.get("nullable")),
            has_default="default" in schema,
            keep_unknown=schema.get("x-kubernetes-preserve-unknown-fields") is True,
            embedded=schema.get("x-kubernetes-embedded-resource") is True,
        )


_NODE_PLANS: dict[int, _NodePlan] = {}


def _node_plan(schema: Obj) -> _NodePlan:
    """The plan of a schema node, read the first time a value meets it and kept while the process lives (CRD
    schemas are loaded once, so each CRD version's schema is in effect compiled once): pruning, defaulting and
    validation all walk plans."""
    found = _NODE_PLANS.get(id(schema))
    if found is None or found.schema is not schema:  # the plan holds its schema, so an id is never reused
        found = _NODE_PLANS[id(schema)] = _NodePlan.of(schema)
    return found


class Structural:
    """The OpenAPI value validations of a structural schema, collecting every violation."""

    def check(self, schema: Obj, value: Any, path: str) -> list[FieldError]:
        errors: list[FieldError] = []
        self._node(_node_plan(schema), value, path, errors)
        return errors

    def _node(self, plan: _NodePlan, value: Any, path: str, errors: list[FieldError]) -> None:
        if value is None and plan.skip_null:
            return
        if plan.type_ok is not None and not plan.type_ok(value):
            wanted = plan.schema.get("type") or "integer or string"
            detail = f"{path or '<root>'} in body must be of type {wanted}: {json.dumps(json_type(value))}"
            errors.append(FieldError(Reason.TYPE_INVALID, path, json_type(value), detail))
            return
        if plan.enum is not None and not any(same(value, option) for option in plan.enum):
            supported = ", ".join(go_value(option) for option in plan.enum)
            errors.append(FieldError(Reason.NOT_SUPPORTED, path, _shown(path, value), f"supported values: {supported}"))
        if plan.strings and isinstance(value, str):
            errors.extend(_string_errors(plan.schema, value, path))
        elif plan.numbers and isinstance(value, int | float) and not isinstance(value, bool):
            errors.extend(_number_errors(plan.schema, value, path))
        if plan.combinators:
            errors.extend(self._combinators(plan.schema, value, path))
        if isinstance(value, dict):
            self._object(plan, value, path, errors)
        elif isinstance(value, list):
            self._array(plan, value, path, errors)

    def _object(self, plan: _NodePlan, value: Obj, path: str, errors: list[FieldError]) -> None:
        for name in plan.required:
            if name not in value:
                errors.append(FieldError(Reason.REQUIRED, child(path, name)))
        if plan.object_sizes:
            errors.extend(_size_errors(plan.schema, len(value), path, "properties"))
        properties, extra = plan.properties, plan.extra
        for name, item in value.items():
            sub = properties.get(name) or extra
            if sub is not None:
                self._node(_node_plan(sub), item, _key_path(path, name, name in properties), errors)

    def _array(self, plan: _NodePlan, value: list[Any], path: str, errors: list[FieldError]) -> None:
        if plan.array_sizes:
            errors.extend(_size_errors(plan.schema, len(value), path, "items"))
        if plan.list_type:
            errors.extend(_list_type_errors(plan.schema, value, path))
        if plan.items is not None:
            items = _node_plan(plan.items)
            for index, item in enumerate(value):
                self._node(items, item, f"{path}[{index}]", errors)

    def _combinators(self, schema: Obj, value: Any, path: str) -> Iterator[FieldError]:
        shown = _composite_value(value)
        for sub in schema.get("allOf") or ():
            failures = self.check(sub, value, path)
            if failures:
                yield from failures
                yield FieldError(Reason.INVALID, path, shown, "must validate all the schemas (allOf)")
        any_of = schema.get("anyOf") or []
        if any_of:
            results = [self.check(sub, value, path) for sub in any_of]
            if all(results):
                yield from results[0]
                yield FieldError(Reason.INVALID, path, shown, "must validate at least one schema (anyOf)")
        one_of = schema.get("oneOf") or []
        if one_of and sum(not self.check(sub, value, path) for sub in one_of) != 1:
            yield FieldError(Reason.INVALID, path, shown, "must validate one and only one schema (oneOf)")
        if isinstance(schema.get("not"), dict) and not self.check(schema["not"], value, path):
            yield FieldError(Reason.INVALID, path, shown, "must not validate the schema (not)")


def _composite_value(value: Any) -> Any:
    return json_type(value) if isinstance(value, dict | list) else value


def _string_errors(schema: Obj, value: str, path: str) -> Iterator[FieldError]:
    where, shown = f"{path} in body", _shown(path, value)
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        yield FieldError(Reason.TOO_LONG, path, detail=f"may not be more than {schema['maxLength']} bytes")
    if "minLength" in schema and len(value) < schema["minLength"]:
        yield FieldError(Reason.INVALID, path, shown, f"{where} should be at least {schema['minLength']} chars long")
    if "pattern" in schema and not _Patterns.search(schema["pattern"], value):
        yield FieldError(Reason.INVALID, path, shown, f"{where} should match '{schema['pattern']}'")
    check = _FORMATS.get(schema.get("format", ""))
    if check is not None and not check(value):
        detail = f"{where} must be of type {schema['format']}: {go_value(shown)}"
        yield FieldError(Reason.INVALID, path, shown, detail)


def _number_errors(schema: Obj, value: float, path: str) -> Iterator[FieldError]:
    where = f"{path} in body"
    if "minimum" in schema:
        low, exclusive = schema["minimum"], schema.get("exclusiveMinimum") is True
        if value < low or (exclusive and value == low):
            words = "greater than" if exclusive else "greater than or equal to"
            yield FieldError(Reason.INVALID, path, value, f"{where} should be {words} {low}")
    if "maximum" in schema:
        high, exclusive = schema["maximum"], schema.get("exclusiveMaximum") is True
        if value > high or (exclusive and value == high):
            words = "less than" if exclusive else "less than or equal to"
            yield FieldError(Reason.INVALID, path, value, f"{where} should be {words} {high}")
    step = schema.get("multipleOf")
    if step and (value / step) != int(value / step):
        yield FieldError(Reason.INVALID, path, value, f"{where} should be a multiple of {step}")


def _size_errors(schema: Obj, size: int, path: str, noun: str) -> Iterator[FieldError]:
    most, least = schema.get(f"max{noun.title()}"), schema.get(f"min{noun.title()}")
    if most is not None and size > most:
        if noun == "items":
            yield FieldError(Reason.TOO_MANY, path, size, f"must have at most {most} items")
        else:
            yield FieldError(Reason.TOO_MANY, path, size, f"must have at most {most} properties")
    if least is not None and size < least:
        yield FieldError(Reason.INVALID, path, size, f"{path} in body should have at least {least} {noun}")


def _list_type_errors(schema: Obj, value: list[Any], path: str) -> Iterator[FieldError]:
    kind = schema.get("x-kubernetes-list-type")
    if kind == "set":
        for index, item in enumerate(value):
            if any(same(item, earlier) for earlier in value[:index]):
                yield FieldError(Reason.DUPLICATE, f"{path}[{index}]", item)
    elif kind == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []
        seen: list[Obj] = []
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            identity = {k: item.get(k) for k in keys if k in item}
            if any(same(identity, earlier) for earlier in seen):
                yield FieldError(Reason.DUPLICATE, f"{path}[{index}]", identity)
            seen.append(identity)


# ---- CEL ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CelSkip:
    """A rule not evaluated: which CRD, where, the rule, and why."""

    crd: str
    json_path: str
    rule: str
    reason: str


@dataclass(frozen=True)
class _RulePlan:
    """A schema node's rules, parsed once, and whether any rule sits on it or below (else the walk skips it)."""

    rules: tuple[cel.Rule, ...]
    active: bool


_PLANS: dict[int, tuple[Obj, _RulePlan]] = {}  # id(schema node) -> (the node, kept alive so the id stays its own)


def _plan(schema: Obj) -> _RulePlan:
    found = _PLANS.get(id(schema))
    if found is not None and found[0] is schema:
        return found[1]
    rules = tuple(cel.Rule.from_schema(raw) for raw in schema.get("x-kubernetes-validations") or ())
    plan = _RulePlan(rules, bool(rules) or next(schema_rules(schema), None) is not None)
    _PLANS[id(schema)] = (schema, plan)
    return plan


class _CelWalk:
    """Runs every `x-kubernetes-validations` rule on the node it is attached to, correlating old values."""

    def __init__(self, engine: cel.Engine, crd: str) -> None:
        self.engine = engine
        self.crd = crd
        self.errors: list[FieldError] = []
        self.skipped: list[CelSkip] = []

    def node(self, schema: Obj, value: Any, old: Any, path: str) -> None:
        plan = _plan(schema)
        if value is None or not plan.active:
            return
        for rule in plan.rules:
            self._rule(rule, schema, value, old, path)
        if isinstance(value, dict):
            self._object(schema, value, old, path)
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            self._array(schema, value, old, path)

    def _rule(self, rule: cel.Rule, schema: Obj, value: Any, old: Any, path: str) -> None:
        outcome = self.engine.evaluate(rule, value, old)
        if outcome.status is cel.Status.SKIPPED:
            self.skipped.append(CelSkip(self.crd, path, rule.rule, outcome.message))
        elif outcome.status is cel.Status.FAILED:
            where = _rule_path(path, rule.field_path)
            shown = json_type(value) if isinstance(value, dict | list) else _shown(where, value)
            self.errors.append(FieldError(Reason.from_cause(rule.reason), where, shown, outcome.message))

    def _object(self, schema: Obj, value: Obj, old: Any, path: str) -> None:
        properties, extra = _properties(schema), _additional(schema)
        olds = old if isinstance(old, dict) else {}
        for name, item in value.items():
            sub = properties.get(name) or extra
            if sub is not None:
                before = olds.get(name, cel.MISSING)
                self.node(sub, item, before, _key_path(path, name, name in properties))

    def _array(self, schema: Obj, value: list[Any], old: Any, path: str) -> None:
        items = schema["items"]
        for index, item in enumerate(value):
            before = _correlate(schema, item, old)
            self.node(items, item, before, f"{path}[{index}]")


def _correlate(schema: Obj, item: Any, old: Any) -> Any:
    """The old element matching `item`: by key for list-type map, by value for set; none for atomic lists."""
    if not isinstance(old, list):
        return cel.MISSING
    kind = schema.get("x-kubernetes-list-type")
    if kind == "set":
        return next((o for o in old if same(o, item)), cel.MISSING)
    if kind == "map" and isinstance(item, dict):
        keys = schema.get("x-kubernetes-list-map-keys") or []
        for candidate in old:
            if isinstance(candidate, dict) and all(same(candidate.get(k), item.get(k)) for k in keys):
                return candidate
    return cel.MISSING


def _rule_path(path: str, field_path: str) -> str:
    if not field_path:
        return path
    relative = field_path.lstrip(".")
    return f"{path}.{relative}" if path and not relative.startswith("[") else f"{path}{relative}"


# ---- the admission entry point --------------------------------------------------------------------------------


class Validator:
    """Admits writes for every type it knows: the CRDs in `crd_dir` and the built-in kinds in `builtin`.

    Types it does not know are admitted unchanged. Thread-safe: the HTTP server calls it from many threads.
    """

    def __init__(self, crd_dir: Path) -> None:
        self.crds = load_crds(crd_dir)
        served = {kind.key: kind for kind in (*kinds.KINDS, *builtin.KINDS)}  # the site manifests' kinds too
        self.builtins = served
        self.builtin_infos = {key: builtin_info(kind) for key, kind in served.items()}
        self._engine = cel.Engine()
        self._structural = Structural()
        self._lock = threading.Lock()
        self.runtime_skips: list[CelSkip] = []
        self._rule_presence: dict[str, bool] = {}

    def _info(self, rtype: model.ResourceType) -> CrdInfo | None:
        return self.crds.get(rtype.key) or self.builtin_infos.get(rtype.key)

    def register(self, info: CrdInfo) -> None:
        """Admit a CRD created at run time (the hub simulator); it replaces any earlier schema for its type."""
        with self._lock:
            self.crds = {**self.crds, info.key: info}
            self._rule_presence.pop(info.key, None)

    def forget(self, key: str) -> None:
        """Stop admitting a deleted CRD's type by its schema."""
        with self._lock:
            self.crds = {name: info for name, info in self.crds.items() if name != key}
            self._rule_presence.pop(key, None)

    def admit(
        self, rtype: model.ResourceType, new: Obj, old: Obj | None, *, subresource: str = ""
    ) -> tuple[Obj, list[str]]:
        """The object as it would be stored (pruned, defaulted) and the warnings; raises ApiError 422."""
        info = self._info(rtype)
        obj = model.clone(new)
        if info is None:
            return obj, []
        obj = _scope_write(info, obj, old, subresource)
        kind = self.builtins.get(info.key) if info.key not in self.crds else None
        if kind is not None:
            kind.prepare(obj)
        removed: list[str] = []
        prune(info.schema, obj, "", removed, root=True)
        default(info.schema, obj)
        errors = self._errors(info, obj, old)
        if errors:
            raise invalid(info, obj, errors)
        return obj, [f'unknown field "{path}"' for path in removed]

    def schema(self, rtype: model.ResourceType) -> Obj | None:
        info = self._info(rtype)
        return info.schema if info is not None else None

    def unknown_fields(self, rtype: model.ResourceType, obj: Obj) -> list[str]:
        """Paths of the fields pruning would drop (for `fieldValidation=Strict`)."""
        info = self._info(rtype)
        if info is None:
            return []
        removed: list[str] = []
        prune(info.schema, model.clone(obj), "", removed, root=True)
        return removed

    def _errors(self, info: CrdInfo, obj: Obj, old: Obj | None) -> list[FieldError]:
        errors = name_errors(info, obj)
        errors += self._structural.check(info.schema, obj, "")
        kind = self.builtins.get(info.key) if info.key not in self.crds else None
        if kind is not None:
            errors += [_from_issue(issue) for issue in kind.check(obj, old)]
        if not self._has_rules(info):
            return errors
        if any(error.reason in _BLOCKING for error in errors):
            return [*errors, FieldError(Reason.INVALID, "", None, _BLOCKING_MESSAGE)]
        walk = _CelWalk(self._engine, info.key)
        walk.node(info.schema, obj, old if old is not None else cel.MISSING, "")
        self._record(walk.skipped)
        return errors + walk.errors

    def _has_rules(self, info: CrdInfo) -> bool:
        """kube-apiserver builds a CEL validator (and adds the "not checked" note) only for schemas with rules."""
        with self._lock:
            found = self._rule_presence.get(info.key)
        if found is None:
            found = next(schema_rules(info.schema), None) is not None
            with self._lock:
                self._rule_presence[info.key] = found
        return found

    def _record(self, skipped: list[CelSkip]) -> None:
        for skip in skipped:
            _LOG.warning("CEL rule not evaluated (%s at %s): %s", skip.crd, skip.json_path or "<root>", skip.reason)
        with self._lock:
            self.runtime_skips.extend(skipped)


def builtin_info(kind: builtin.Kind) -> CrdInfo:
    return CrdInfo(
        group=kind.group,
        version=kind.version,
        plural=kind.plural,
        kind=kind.kind,
        namespaced=kind.namespaced,
        subresources=kind.subresources,
        schema=kind.schema,
        name_check=kind.name_check,
    )


def _from_issue(issue: builtin.Issue) -> FieldError:
    return FieldError(Reason.from_cause(issue.reason), issue.field, issue.value, issue.detail)


def _scope_write(info: CrdInfo, obj: Obj, old: Obj | None, subresource: str) -> Obj:
    """What kube-apiserver validates: with a status subresource, a main write keeps the stored status and a
    status write keeps everything else."""
    if "status" not in info.subresources or subresource not in ("", "status"):
        return obj
    if subresource == "status":
        if old is None:
            return obj
        merged = model.clone(old)
        merged.pop("status", None)
        if "status" in obj:
            merged["status"] = obj["status"]
        return merged
    obj.pop("status", None)
    if old is not None and "status" in old:
        obj["status"] = model.clone(old["status"])
    return obj


def name_errors(info: CrdInfo, obj: Obj) -> list[FieldError]:
    """`metadata.name`: present (or generateName) and a DNS-1123 subdomain (a label for namespaces)."""
    meta: Obj = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    name = meta.get("name")
    if not name:
        missing = FieldError(Reason.REQUIRED, "metadata.name", detail="name or generateName is required")
        return [] if meta.get("generateName") else [missing]
    if not isinstance(name, str):
        return [FieldError(Reason.INVALID, "metadata.name", name, "must be a string")]
    if info.name_check == "label":
        if len(name) > 63 or not cel.DNS1123_LABEL.fullmatch(name):
            return [FieldError(Reason.INVALID, "metadata.name", name, _LABEL_MESSAGE)]
    elif info.name_check == "subdomain" and (len(name) > 253 or not cel.DNS1123_SUBDOMAIN.fullmatch(name)):
        return [FieldError(Reason.INVALID, "metadata.name", name, _SUBDOMAIN_MESSAGE)]
    return []


def invalid(info: CrdInfo, obj: Obj, errors: list[FieldError]) -> model.ApiError:
    """kube's NewInvalid: one 422 naming every violation."""
    name = str((obj.get("metadata") or {}).get("name") or "")
    rendered = [error.render() for error in errors]
    summary = rendered[0] if len(rendered) == 1 else "[" + ", ".join(rendered) + "]"
    return model.ApiError(
        422,
        "Invalid",
        f"{info.qualified_kind} {json.dumps(name)} is invalid: {summary}",
        causes=[error.cause() for error in errors],
        details={"name": name, "group": info.group, "kind": info.kind},
    )


# ---- the CEL coverage report ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CelReport:
    """How many CRD rules the simulator evaluates, and every one it cannot, with the reason."""

    evaluated: int
    skipped: int
    skipped_rules: list[tuple[str, str, str, str]]  # (crd, json_path, rule, reason)

    def render(self) -> str:
        total = self.evaluated + self.skipped
        lines = [f"CEL rules: {total} in the CRDs, {self.evaluated} evaluated, {self.skipped} skipped"]
        for crd, path, rule, reason in self.skipped_rules:
            lines.append(f"  skipped {crd} {path or '<root>'}: {rule!r}: {reason}")
        return "\n".join(lines)


def schema_rules(schema: Obj, path: str = "") -> Iterator[tuple[str, cel.Rule]]:
    """Every CEL rule in a schema with the JSON path of the node it sits on (`[]` for list items)."""
    for raw in schema.get("x-kubernetes-validations") or ():
        yield path, cel.Rule.from_schema(raw)
    for name, sub in _properties(schema).items():
        yield from schema_rules(sub, child(path, name))
    if isinstance(schema.get("items"), dict):
        yield from schema_rules(schema["items"], f"{path}[]")
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        yield from schema_rules(extra, f"{path}[*]")


def cel_report(crd_dir: Path) -> CelReport:
    engine = cel.Engine()
    evaluated, skipped = 0, []
    for key, info in load_crds(crd_dir).items():
        for path, rule in schema_rules(info.schema):
            reason = engine.unsupported(rule)
            if reason is None:
                evaluated += 1
            else:
                skipped.append((key, path, rule.rule, reason))
    return CelReport(evaluated=evaluated, skipped=len(skipped), skipped_rules=skipped)

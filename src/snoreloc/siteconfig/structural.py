"""Structural validation against the JSON Schema, phrased for the person who wrote the file.

`jsonschema` finds every error; its own messages quote the offending value (`'-----BEGIN PRIVATE KEY...' is not of
type 'object'`), which would leak secrets and bury the point. Each error is rewritten here from its keyword and
the schema, quoting a value only when it is short and not secret. A missing key is reported at `parent.key`, an
unknown key at its own path with a "did you mean" suggestion, so the line is the one to edit.

Importing `jsonschema` costs more than the rest of `snoreloc validate` together, so a document first meets the
compiled yes/no check of the same schema (`compiled`); `jsonschema` is imported and run only when that does not
pass, and every message comes from it.
"""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from snoreloc.siteconfig import compiled, findings, schema

if TYPE_CHECKING:
    import jsonschema

SITE = "site"  # the names `compiled.SCHEMAS` knows the two schemas by
NETWORK = "network"
_SHOWN_MAX = 80
_TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "empty",
}

Error: TypeAlias = "jsonschema.ValidationError"


def _schema(err: Error) -> Mapping[str, Any]:
    return err.schema if isinstance(err.schema, Mapping) else {}


def _expected(err: Error) -> Any:
    return err.validator_value


def _json_type(value: Any) -> str:
    for name, kinds in (("boolean", bool), ("integer", int), ("number", float), ("string", str)):
        if isinstance(value, kinds):
            return _TYPE_WORDS[name]
    if isinstance(value, Mapping):
        return _TYPE_WORDS["object"]
    return _TYPE_WORDS["array"] if isinstance(value, list) else _TYPE_WORDS["null"]


def _shown(err: Error) -> str:
    """` (got 'x')` when the value is short and not secret, else nothing."""
    value = err.instance
    if _schema(err).get("x-secret", False) or _near_secret(tuple(err.absolute_path)):
        return ""
    if isinstance(value, str | int | float) and len(str(value)) <= _SHOWN_MAX:
        return f" (got {json.dumps(value)})"
    return ""


def _near_secret(path: findings.Path) -> bool:
    """Inside a secret, or above one (a secret written where its parent mapping belongs is still a secret)."""
    return any(findings.is_under(path, s) or findings.is_under(s, path) for s in schema.SECRET_PATHS)


def _custom(err: Error, fallback: str) -> str:
    message = _schema(err).get("x-message")
    return str(message) if message else fallback


def _type(err: Error) -> str:
    expected = _expected(err)
    wanted = expected if isinstance(expected, list) else [expected]
    return f"must be {' or '.join(str(_TYPE_WORDS.get(w, w)) for w in wanted)}, not {_json_type(err.instance)}"


def _one_of_properties(err: Error) -> str:
    names = ", ".join(f"`{k}`" for k in _schema(err).get("properties", {}))
    return _custom(err, f"set exactly one of {names}" if names else "has the wrong number of fields")


def _size(word: str, unit: str) -> Callable[[Error], str]:
    def render(err: Error) -> str:
        if word == "at least" and err.validator_value == 1:
            return "must not be empty"
        return f"must have {word} {err.validator_value} {unit}"

    return render


_MESSAGES: dict[str, Callable[[Error], str]] = {
    "type": _type,
    "const": lambda err: f"must be {json.dumps(err.validator_value)}" + _shown(err),
    "enum": lambda err: "must be one of: " + ", ".join(map(str, _expected(err))) + _shown(err),
    "pattern": lambda err: _custom(err, f"does not match the pattern {err.validator_value}") + _shown(err),
    "minLength": _size("at least", "characters"),
    "maxLength": _size("at most", "characters"),
    "minItems": _size("at least", "items"),
    "maxItems": _size("at most", "items"),
    "minimum": lambda err: f"must be at least {err.validator_value}" + _shown(err),
    "maximum": lambda err: f"must be at most {err.validator_value}" + _shown(err),
    "uniqueItems": lambda err: "must not contain duplicates",
    "minProperties": _one_of_properties,
    "maxProperties": _one_of_properties,
}


def _unknown(err: Error, key: str) -> str:
    allowed = sorted(_schema(err).get("properties", {}))
    guess = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    hint = f"; did you mean `{guess[0]}`?" if guess else f" (allowed: {', '.join(allowed)})"
    return f"unknown field{hint}"


def _extra(err: Error, path: findings.Path, key: str) -> str:
    reason = schema.NOT_ONLINE.get((*path, key))
    return f"is not supported by a running cluster: {reason}" if reason else _unknown(err, key)


def _render(err: Error) -> list[findings.Finding]:
    path: findings.Path = tuple(err.absolute_path)
    if err.validator == "required" and isinstance(err.instance, Mapping):
        missing = [k for k in _expected(err) if k not in err.instance]
        return [findings.error((*path, key), "is required") for key in missing]
    if err.validator == "additionalProperties" and isinstance(err.instance, Mapping):
        known = set(_schema(err).get("properties", {}))
        return [findings.error((*path, key), _extra(err, path, key)) for key in err.instance if key not in known]
    render = _MESSAGES.get(str(err.validator))
    message = render(err) if render else _custom(err, f"is not valid here ({err.validator})")
    return [findings.error(path, message)]


@functools.cache
def _validator(name: str) -> jsonschema.protocols.Validator:
    import jsonschema  # noqa: PLC0415 (lazy: only a document the compiled check refuses pays for it)

    return jsonschema.Draft202012Validator(compiled.SCHEMAS[name])


def check(data: Any, which: str = SITE) -> list[findings.Finding]:
    """Every structural problem of `data` against the site-config schema (or the network file's: `NETWORK`)."""
    if compiled.accepts(which, data):
        return []
    found: list[findings.Finding] = []
    for err in _validator(which).iter_errors(data):
        found += _render(err)
    return found

"""Fingerprints: a stable hash of a step's inputs, so a re-run knows which steps must run again.

Inputs are canonical JSON (sorted keys, no spaces); bytes, and dataclass fields kept out of `repr` (the model's
mark for secret material, such as a parsed pull secret), become their SHA-256 first, so secret material never sits
in the canonical text and is never stored: status.json keeps only the digests.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from collections.abc import Mapping
from typing import Any


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [f for f in dataclasses.fields(value) if _kept(f, value)]
        return {f.name: _field(getattr(value, f.name), secret=not f.repr) for f in fields}
    if isinstance(value, bytes):
        return "sha256:" + hashlib.sha256(value).hexdigest()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_plain(v) for v in value]
        return sorted(items, key=json.dumps) if isinstance(value, set | frozenset) else items
    return value


def _kept(field: dataclasses.Field[Any], value: Any) -> bool:
    """Every field but one marked `fingerprint_omit_empty` while it is empty (a field added to a model later keeps
    the fingerprints of values that do not use it)."""
    return not (field.metadata.get("fingerprint_omit_empty") and not getattr(value, field.name))


def _field(value: Any, *, secret: bool) -> Any:
    if secret and not isinstance(value, bytes):
        return "sha256:" + hashlib.sha256(canonical(value).encode()).hexdigest()
    return _plain(value)


def canonical(value: Any) -> str:
    return json.dumps(_plain(value), sort_keys=True, separators=(",", ":"), default=str)


def of(value: Any) -> str:
    """`sha256:<hex>` of the canonical form of `value` (dataclasses, mappings, sequences, bytes, enums)."""
    return "sha256:" + hashlib.sha256(canonical(value).encode()).hexdigest()

"""The owner's key order of a Site's site-config, kept in an annotation because the API server does not keep it.

A real kube-apiserver stores and serves a custom resource as an unstructured map, which Go's `encoding/json`
writes with its keys sorted (`encoding/json` `Marshal`: "map keys are sorted"; apiextensions-apiserver keeps custom
resources as `unstructured.Unstructured`). So a Site read back from the hub has its `spec.siteConfig` in
alphabetical order, not in the order of the site-config `fleet render` wrote: the site-config the controller lays
out for validation (its findings' lines) and the one `fleet make-media` puts on the stick would follow the
server's order, and a finding's line would point elsewhere in the owner's file.

`fleet render` therefore records the order of every mapping of `spec.siteConfig` in the Site's annotation
`fleet.snoreloc.io/key-order`: the document's shape with its values left out (`{"domain":0,"pullSecret":{"file":0,
"mode":0}}`, lists as lists of their items' shapes), a JSON string, which the server keeps byte for byte. The hub
lays the site-config out in that order (`ordered`); keys the annotation does not name (added by hand since) follow
in the server's order, and an annotation that does not parse or does not fit is ignored: order only, never
content, so it can change no value and no validation verdict. A Site written by hand without the annotation is laid
out in the order the server returns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from snoreloc_fleet.resource import siteinput

ANNOTATION = "fleet.snoreloc.io/key-order"
MAX_DEPTH = siteinput.MAX_DEPTH  # as deep as a Site's site-config may nest


def shape(value: Any, depth: int = 0) -> Any:
    """`value`'s keys in their order, values left out: a mapping's keys map to their shapes, a list to its items'
    shapes (0 when none holds a mapping), anything else is 0."""
    if depth > MAX_DEPTH:
        return 0
    if isinstance(value, Mapping):
        return {str(key): shape(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        items = [shape(item, depth + 1) for item in value]
        return items if any(item != 0 for item in items) else 0
    return 0


def annotation(site_config: Any) -> str:
    """The annotation's value for a Site whose `spec.siteConfig` is `site_config`, as the owner wrote it."""
    return json.dumps(shape(site_config), separators=(",", ":"), ensure_ascii=False)


def recorded(obj: Mapping[str, Any]) -> Any:
    """The order a Site's annotation records, or None (absent, or not JSON this module wrote)."""
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def ordered(value: Any, order: Any, depth: int = 0) -> Any:
    """`value` with each mapping's keys in `order`'s order (keys it does not name after, as they come); the same
    values, whatever `order` holds."""
    if depth > MAX_DEPTH:
        return value
    if isinstance(value, Mapping):
        known = order if isinstance(order, dict) else {}
        keys = [key for key in known if key in value] + [key for key in value if key not in known]
        return {key: ordered(value[key], known.get(key), depth + 1) for key in keys}
    if isinstance(value, list):
        items = order if isinstance(order, list) else []
        return [
            ordered(item, items[index] if index < len(items) else None, depth + 1) for index, item in enumerate(value)
        ]
    return value

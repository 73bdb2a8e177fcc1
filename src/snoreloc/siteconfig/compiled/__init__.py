"""A yes/no check of each site-config schema, compiled to plain Python once, so a valid file costs no `jsonschema`.

The modules beside this one are generated from `schema.SCHEMA` and `schema.NETWORK_SCHEMA` by
`tools/gen_schema_check.py` (which says why). They only decide; every message still comes from `jsonschema` in
`structural`, which runs whenever a check here does not pass. A generated module whose recorded digest is not the
digest of the schema in this process is ignored (as if its check had failed), so a schema edited without
regenerating costs start-up time, never a wrong verdict.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from snoreloc.siteconfig import schema

LOG = logging.getLogger(__name__)

SCHEMAS: Mapping[str, dict[str, Any]] = {"site": schema.SCHEMA, "network": schema.NETWORK_SCHEMA}


def digest(definition: Mapping[str, Any]) -> str:
    """What identifies a schema's content: SHA-256 of its canonical JSON."""
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


@functools.cache
def _check(name: str) -> Callable[[Any], Any] | None:
    """The generated `validate` of schema `name`, or None when the module is missing or from another schema."""
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ImportError:
        return None
    if getattr(module, "SCHEMA_DIGEST", None) != digest(SCHEMAS[name]):
        LOG.debug("compiled %s check is stale (run tools/gen_schema_check.py); using jsonschema alone", name)
        return None
    check: Callable[[Any], Any] = module.validate
    return check


def accepts(name: str, data: Any) -> bool:
    """True when `data` certainly matches schema `name`; False means only "ask jsonschema"."""
    check = _check(name)
    if check is None:
        return False
    try:
        check(data)
    except Exception:  # a failed check raises ValueError; anything odd goes to the full validation too
        return False
    return True

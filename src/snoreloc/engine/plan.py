"""Plans for people: each step's per-object changes as a unified diff, with every secret masked.

Secret data is replaced by a short digest before rendering (so a changed key still shows as changed), then the
whole text goes through `redact` as a second defence. Server-managed metadata and status are left out: they are
noise to someone deciding whether to let the run go ahead.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
from collections.abc import Sequence
from typing import Any

import yaml

from snoreloc import redact
from snoreloc.steps import base

_NOISE = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")
_SIGILS = {base.Action.CREATE: "+", base.Action.UPDATE: "~", base.Action.DELETE: "-"}


def masked(obj: base.Obj | None) -> base.Obj | None:
    """A copy fit to show: Secret values become digests, noise removed."""
    if obj is None:
        return None
    shown = copy.deepcopy(obj)
    shown.pop("status", None)
    for key in _NOISE:
        shown.get("metadata", {}).pop(key, None)
    if shown.get("kind") == "Secret":
        for section in ("data", "stringData"):
            for key, value in (shown.get(section) or {}).items():
                digest = hashlib.sha256(str(value).encode()).hexdigest()[:12]
                shown[section][key] = f"{redact.MASK} sha256:{digest}"
    return shown


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (PEM bundles) as literal blocks, so a diff shows them as people read them."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _lines(obj: base.Obj | None) -> list[str]:
    if obj is None:
        return []
    text = yaml.dump(masked(obj), Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=1000)
    return text.splitlines(keepends=True)


def render_change(change: base.ObjectChange) -> str:
    head = f"{_SIGILS[change.action]} {change.action.value} {change.ref}"
    if change.why:
        head += f"  ({change.why})"
    diff = difflib.unified_diff(_lines(change.before), _lines(change.after), "current", "planned", n=2)
    body = "".join(f"    {line}" if line.endswith("\n") else f"    {line}\n" for line in diff)
    return redact.redact(f"{head}\n{body}")


def render(plans: Sequence[base.Plan]) -> str:
    """All plans as text: a heading per step, its notes, its changes."""
    out = []
    for plan in plans:
        count = len(plan.changes)
        out.append(f"== {plan.step}: {count} change{'s' if count != 1 else ''}\n")
        out += [f"  . {note}\n" for note in plan.notes]
        out += [render_change(change) for change in plan.changes]
    return redact.redact("".join(out))


def as_json(plans: Sequence[base.Plan]) -> list[dict[str, Any]]:
    """The plans as data (`--output json`), masked the same way."""
    result = []
    for plan in plans:
        changes = [
            {
                "action": c.action.value,
                "object": str(c.ref),
                "why": c.why,
                "before": masked(c.before),
                "after": masked(c.after),
            }
            for c in plan.changes
        ]
        result.append({"step": plan.step, "notes": list(plan.notes), "changes": changes})
    cleaned: list[dict[str, Any]] = json.loads(redact.redact(json.dumps(result)))
    return cleaned

"""Label and field selectors as kube-apiserver parses them, turned into predicates over objects.

Label selectors: `=`, `==`, `!=`, existence, `!key`, `in`, `notin` (k8s.io/apimachinery pkg/labels/selector.go,
`Parse`). Field selectors: `metadata.name`, `metadata.namespace` and each type's own field labels, `=`, `==`, `!=`
(k8s.io/apimachinery pkg/fields/selector.go, the types' `ToSelectableFields`); anything else is a 400.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from snoreloc_sim.kube import model

Obj = dict[str, Any]

Matcher = Callable[[Obj], bool]
_REQUIREMENT = re.compile(
    r"^\s*(?P<neg>!)?\s*(?P<key>[A-Za-z0-9._/-]+)\s*"
    r"(?:(?P<op>==|=|!=)\s*(?P<value>[A-Za-z0-9._-]*)|\s(?P<setop>in|notin)\s*\((?P<set>[^)]*)\)\s*)?$"
)


def _split_requirements(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [part for part in [*parts, current] if part.strip()]


def _bad_selector(text: str) -> model.ApiError:
    return model.ApiError(400, "BadRequest", f"unable to parse requirement: invalid label selector {text!r}")


def _label_requirement(text: str) -> Matcher:
    found = _REQUIREMENT.match(text)
    if found is None or (found["neg"] and (found["op"] or found["setop"])):
        raise _bad_selector(text)
    key = found["key"]
    if found["neg"]:
        return lambda labels: key not in labels
    if found["op"]:
        value, equal = found["value"], found["op"] != "!="
        return lambda labels: (labels.get(key) == value) == equal
    if found["setop"]:
        values = {v.strip() for v in found["set"].split(",") if v.strip()}
        if found["setop"] == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    return lambda labels: key in labels


def label_matcher(selector: str) -> Matcher:
    """A predicate over an object from a `labelSelector` (=, ==, !=, exists, !exists, in, notin)."""
    requirements = [_label_requirement(part) for part in _split_requirements(selector)]

    def matches(obj: Obj) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(requirement(labels) for requirement in requirements)

    return matches


FIELD_LABELS: dict[str, tuple[str, ...]] = {
    "secrets": ("type",),
    "pods": ("spec.nodeName", "status.phase"),
    "namespaces": ("status.phase",),
    # pkg/registry/core/event/strategy.go, ToSelectableFields (`kubectl describe` selects by involvedObject.uid)
    "events": (
        *(f"involvedObject.{name}" for name in ("name", "namespace", "kind", "uid", "apiVersion", "resourceVersion")),
        *("involvedObject.fieldPath", "reason", "type", "reportingComponent"),
    ),
    "certificatesigningrequests.certificates.k8s.io": ("spec.signerName",),
}


def _dig(obj: Obj, path: str) -> str:
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return "" if node is None else str(node)


def field_matcher(rtype: model.ResourceType, selector: str) -> Matcher:
    """A predicate from a `fieldSelector`: `metadata.name`, `metadata.namespace` and the type's own field labels."""
    allowed = ("metadata.name", "metadata.namespace", *FIELD_LABELS.get(rtype.key, ()))
    checks: list[tuple[str, str, bool]] = []
    for part in _split_requirements(selector):
        found = re.match(r"^\s*([A-Za-z0-9._]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if found is None:
            raise model.ApiError(400, "BadRequest", f"invalid field selector {part!r}")
        if found[1] not in allowed:
            raise model.ApiError(400, "BadRequest", f'field label not supported: "{found[1]}"')
        checks.append((found[1], found[3], found[2] != "!="))
    return lambda obj: all((_dig(obj, path) == value) == equal for path, value, equal in checks)

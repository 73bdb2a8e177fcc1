"""What the hub accepts from a Site before anything is read, laid out or walked: names, file names, size, depth.

A Site is written by anyone who may write Sites, and the controller holds a cluster-wide read of Secrets and
ConfigMaps (it must read each Site's namespace). So every name a Site puts into an API path is proven a Kubernetes
name first: the kube client builds `/namespaces/NS/secrets/NAME` and normalises `..` in it, so a `secretKeyRef`
name `../../kube-system/secrets/x` would read another namespace's Secret. The rules are kube-apiserver's own
(k8s.io/apimachinery/pkg/util/validation/validation.go: `IsDNS1123Subdomain` for a Secret's or ConfigMap's name,
`IsConfigMapKey` for a key), and the CRD carries the same patterns (`snoreloc_fleet.resource.site`), so the hub
refuses such a Site at admission; this module is what the controller and `fleet make-media` check, whatever the
hub let in (a Site created before the CRD had them).

A Site's spec is bounded before it is walked: the site-config nested at most as deep, with as many values and as
many bytes as the node's own loader accepts (`snoreloc.siteconfig.yamlpos`), the walk itself iterative and stopping
at the first excess, so a 400-deep or 1.4 MiB Site costs the controller a bounded pass and turns Invalid with the
field. File names are the medium's rule (`snoreloc.siteconfig.medium.file_name_problem`, one definition for the
node and the hub). A reporting Site's name is a label value on what the controller makes for it, so at most 63
characters (the CRD says so too).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from snoreloc.siblings import errors, medium, redact, sanitize, yamlpos

# k8s.io/apimachinery/pkg/util/validation/validation.go: dns1123SubdomainFmt, DNS1123SubdomainMaxLength
DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
MAX_OBJECT_NAME = 253
# the same file: configMapKeyFmt `[-._a-zA-Z0-9]+`, and hasChDirPrefix (not `.`, not starting with `..`)
CONFIG_KEY = r"^(\.[-_a-zA-Z0-9]|[-_a-zA-Z0-9])[-._a-zA-Z0-9]*$"
MAX_CONFIG_KEY = 253
# a Site's name is the value of the `fleet.snoreloc.io/site` label on its ServiceAccount, Role, RoleBinding and
# Secrets (validation.go: LabelValueMaxLength)
MAX_SITE_NAME = 63
MAX_DEPTH = yamlpos.MAX_DEPTH - 1  # the site-config document nests the Site's siteConfig one level down
MAX_VALUES = yamlpos.MAX_DOCUMENT_NODES
MAX_BYTES = yamlpos.MAX_BYTES
REFS = ("secretKeyRef", "configMapKeyRef")
SHOWN_NAME = 64  # of a refused file name, the characters shown (escaped) in its field


def object_name_problem(value: object) -> str | None:
    """Why `value` is not a Secret's or ConfigMap's name (None: it is). Never quotes the value."""
    if not isinstance(value, str) or not value:
        return "give the name of a Secret or ConfigMap of this namespace"
    if len(value) > MAX_OBJECT_NAME:
        return f"a Secret's or ConfigMap's name is at most {MAX_OBJECT_NAME} characters (this one has {len(value)})"
    if not re.fullmatch(DNS1123_SUBDOMAIN, value):
        return (
            "not a Kubernetes name (lower case letters, digits, '-' and '.', starting and ending with a letter or "
            "digit; no '/', '%' or '..'): name a Secret or ConfigMap of this Site's namespace"
        )
    return None


def key_problem(value: object) -> str | None:
    """Why `value` is not a key of a Secret or ConfigMap (None: it is). Never quotes the value."""
    if not isinstance(value, str) or not value:
        return "give the key of the Secret or ConfigMap that holds the file"
    if len(value) > MAX_CONFIG_KEY:
        return f"a key is at most {MAX_CONFIG_KEY} characters (this one has {len(value)})"
    if not re.fullmatch(CONFIG_KEY, value):
        return "not a Secret or ConfigMap key: letters, digits, '-', '_' and '.', neither '.' nor starting with '..'"
    return None


def _shape(value: Any) -> tuple[str, str] | None:
    """The first excess of the site-config's shape, as (what, limit reached), walking at most `MAX_VALUES` values
    without recursion; None when it fits."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            return "values", f"it holds more than {MAX_VALUES} values"
        if isinstance(item, Mapping | list):
            if depth >= MAX_DEPTH:
                return "depth", f"it is nested deeper than {MAX_DEPTH} levels"
            children = item.values() if isinstance(item, Mapping) else item
            stack.extend((child, depth + 1) for child in children)
    return None


def spec_problems(obj: Mapping[str, Any]) -> list[errors.Problem]:
    """Everything wrong with a Site's inputs that must be known before anything is read, laid out or walked."""
    given = obj.get("spec")
    spec: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    found = _name(obj) + _site_config(spec.get("siteConfig"))
    files = spec.get("files")
    if isinstance(files, Mapping):
        found += _files(files)
    return found


def _name(obj: Mapping[str, Any]) -> list[errors.Problem]:
    meta = obj.get("metadata")
    name = str(meta.get("name") or "") if isinstance(meta, Mapping) else ""
    if len(name) <= MAX_SITE_NAME:
        return []
    message = (
        f"a Site's name is at most {MAX_SITE_NAME} characters (this one has {len(name)}): it labels the objects "
        "made for the site; create it again under a shorter name"
    )
    return [errors.Problem("metadata.name", message)]


def _site_config(value: Any) -> list[errors.Problem]:
    excess = _shape(value)
    if excess is not None:
        return [errors.Problem("spec.siteConfig", f"too large for a site-config: {excess[1]}; split or trim it")]
    size = len(json.dumps(value, separators=(",", ":")))  # depth bounded above: no recursion trouble
    if size > MAX_BYTES:
        message = f"too large for a site-config: {size} bytes, at most {MAX_BYTES} (the node's limit for the file)"
        return [errors.Problem("spec.siteConfig", message)]
    return []


def _files(files: Mapping[str, Any]) -> list[errors.Problem]:
    found = []
    for name, source in files.items():
        problem = medium.file_name_problem(str(name))
        if problem:  # the name is shown escaped and cut: it may hold anything (a NUL, a control, a path)
            shown = sanitize.visible(redact.redact(str(name)), keep_lines=False)[:SHOWN_NAME]
            found.append(errors.Problem(f'spec.files["{shown}"]', f"a file's name: {problem}"))
            continue
        found += _refs(f"spec.files.{name}", source)
    for file, inner in medium.name_clashes(str(n) for n in files):
        message = f"{file} is a file and also the directory of {inner}: rename one of them"
        found.append(errors.Problem(f"spec.files.{file}", message))
    return found


def _refs(field: str, source: Any) -> list[errors.Problem]:
    if not isinstance(source, Mapping):
        return [errors.Problem(field, "give a secretKeyRef or a configMapKeyRef")]
    found = []
    for kind in REFS:
        ref = source.get(kind)
        if ref is None:
            continue
        ref = ref if isinstance(ref, Mapping) else {}
        for part, check in (("name", object_name_problem), ("key", key_problem)):
            problem = check(ref.get(part))
            if problem:
                found.append(errors.Problem(f"{field}.{kind}.{part}", problem))
    return found

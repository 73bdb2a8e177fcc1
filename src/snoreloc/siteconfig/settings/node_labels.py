"""`spec.nodeLabels`: labels put on the node at the site (a site, a region, a role of the site's own), for the site's
workloads to select it by. The step (`snoreloc.steps.cluster.node_labels`) merges them into the Node's labels: a
label the node carries and the site-config does not name is left alone, a label a later run no longer names stays
(the node keeps its labels across a re-relocation, as the lifecycle agent keeps them across an image-based
reconfiguration); `rollback` puts back the values the listed keys had before the first run, and only those.

Each key and value is checked as the API server checks a label (apimachinery, `pkg/util/validation/validation.go`:
`IsQualifiedName` for the key, an optional DNS-1123 subdomain prefix of at most 253 characters, `/`, a name of at most
63 characters; `IsValidLabelValue` for the value, at most 63 characters, possibly empty). Keys under `kubernetes.io`
or `k8s.io` (and their subdomains, `node-role.kubernetes.io/*` among them) are refused: they belong to Kubernetes.
The kubelet sets the node's own labels under them (`k8s.io/kubelet/pkg/apis/well_known_labels.go`, `IsKubeletLabel`)
and refuses others there (`cmd/kubelet/app/options/options.go`), the NodeRestriction admission plugin guards them
(`plugin/pkg/admission/noderestriction/admission.go`), and the node's role is the cluster's. No reboot, no rollout.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from snoreloc.siteconfig import checks, fragments, setting

KEY = "nodeLabels"
MAX_NODE_LABELS = 32  # a site needs a few; each is on every read of the Node and a mistake in bulk is likely a paste
NAME_MAX = 63  # apimachinery: qualifiedNameMaxLength, LabelValueMaxLength
PREFIX_MAX = 253  # apimachinery: DNS1123SubdomainMaxLength
RESERVED = ("kubernetes.io", "k8s.io")  # the prefixes Kubernetes keeps, with their subdomains

# apimachinery's qualifiedNameFmt and labelValueFmt; dns1123SubdomainFmt for the prefix.
_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
VALUE_PATTERN = rf"^({_NAME})?$"
_NAME_RE = re.compile(_NAME)
_VALUE_RE = re.compile(f"({_NAME})?")
_PREFIX_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _schema() -> dict[str, Any]:
    return fragments.prop(
        "Labels put on the node at the site, merged into the labels it has (no other label is changed or removed; "
        "labels set by an earlier run stay). Keys and values as Kubernetes takes them; no key under kubernetes.io "
        "or k8s.io (node-role.kubernetes.io/* included). `rollback` restores what these keys were. No reboot.",
        [{"site.example.com/region": "north", "site.example.com/store": "store-0042"}],
        type="object",
        minProperties=1,
        maxProperties=MAX_NODE_LABELS,
        additionalProperties={
            "type": "string",
            "maxLength": NAME_MAX,
            "pattern": VALUE_PATTERN,
            "x-message": "must be a label value: letters, digits, '-', '_' or '.', starting and ending with a letter "
            "or digit (or empty)",
        },
        **{"x-message": f"give between 1 and {MAX_NODE_LABELS} labels"},
    )


@dataclass(frozen=True)
class NodeLabels:
    """The labels to put on the node, in the site-config's order (key, value)."""

    labels: tuple[tuple[str, str], ...] = ()

    def as_dict(self) -> dict[str, str]:
        return dict(self.labels)


def _load(values: Mapping[str, Any] | None, checked: checks.Checked) -> NodeLabels | None:
    if values is None:
        return None
    return NodeLabels(tuple((str(key), str(value)) for key, value in values.items()))


def key_problem(key: str) -> str | None:
    """Why `key` cannot be a label key the site-config sets on the node, or None (apimachinery's `IsQualifiedName`,
    then the prefixes Kubernetes keeps)."""
    parts = key.split("/")
    if len(parts) > 2:
        return "is not a label key: at most one '/', between an optional DNS prefix and the name"
    prefix, name = ("", parts[0]) if len(parts) == 1 else (parts[0], parts[1])
    if len(parts) == 2 and not prefix:
        return "has an empty prefix before '/'"
    return _name_problem(name) or _prefix_problem(prefix)


def _name_problem(name: str) -> str | None:
    if not name:
        return "has an empty name"
    if len(name) > NAME_MAX:
        return f"has a name longer than {NAME_MAX} characters"
    if not _NAME_RE.fullmatch(name):
        return "has a name that is not letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
    return None


def _prefix_problem(prefix: str) -> str | None:
    if len(prefix) > PREFIX_MAX:
        return f"has a prefix longer than {PREFIX_MAX} characters"
    if prefix and not _PREFIX_RE.fullmatch(prefix):
        return "has a prefix that is not a DNS subdomain (lowercase letters, digits, '-' and '.')"
    if any(prefix == domain or prefix.endswith(f".{domain}") for domain in RESERVED):
        return (
            f"is under {prefix}, which Kubernetes keeps for itself (the kubelet and the node's role set those "
            "labels); use a prefix of your own, such as site.example.com/"
        )
    return None


def _check(run: checks.Run, spec: Mapping[str, Any]) -> None:
    labels = spec.get(KEY)
    if not isinstance(labels, Mapping):
        return
    for key, value in labels.items():
        where = (*SETTING.path, str(key))
        if not isinstance(key, str):
            run.error(where, "a label key must be text; quote it")
            continue
        problem = key_problem(key)
        if problem:
            run.error(where, problem)
        elif isinstance(value, str) and run.sound(where) and not _VALUE_RE.fullmatch(value):
            run.error(where, "must be a label value on one line")  # the schema's `$` lets a final line break pass


SETTING = setting.Setting(
    key=KEY,
    field="",
    schema=_schema(),
    load=_load,
    check=_check,
    cost=setting.Cost(reboot="no", note="node labels: the Node's labels change; no rollout, no reboot"),
    rollback=setting.Rollback(why="the node's labels go back as they were before the first run (no rollout)"),
)

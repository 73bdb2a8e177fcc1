"""`spec.kubelet`: the node's name in the cluster and whether its own CSRs are approved (the kubelet-start host step,
the csr step and every wait after it read it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from snoreloc.siteconfig import checks, fragments, setting


def _schema() -> dict[str, Any]:
    return fragments.prop(
        "Node settings.",
        [{"nodeName": "sno1", "approveCSRs": True}],
        **fragments.obj(
            {
                "nodeName": fragments.prop(
                    "The node's name in the cluster (default: the host name).",
                    ["sno1"],
                    type="string",
                    maxLength=253,
                    pattern=fragments.DNS_SUBDOMAIN_PATTERN,
                    **{"x-message": "must be a lowercase DNS name (letters, digits, '-' and '.')"},
                ),
                "approveCSRs": fragments.prop(
                    "Approve this node's pending kubelet certificate requests (only its own).", [True], type="boolean"
                ),
            }
        ),
    )


@dataclass(frozen=True)
class Kubelet:
    """Node facts the agent needs at the site."""

    node_name: str | None = None  # default: the host's name
    approve_csrs: bool = True


def _load(values: Mapping[str, Any] | None, checked: checks.Checked) -> Kubelet:
    values = values or {}
    return Kubelet(node_name=values.get("nodeName"), approve_csrs=values.get("approveCSRs", True))


SETTING = setting.Setting(key="kubelet", field="kubelet", schema=_schema(), load=_load)

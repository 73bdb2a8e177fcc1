"""`spec.dns`: whether the node's own dnsmasq answers the cluster's new names (the host step `node-dns`,
`snoreloc.steps.host.node_dns`), or the site's DNS is authoritative and must hold them before the run (preflight
checks it on the node). No reboot either way; the host step names this setting and runs between the network and
kubelet (`engine.order.host_steps`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from snoreloc.siteconfig import checks, fragments, setting


@dataclass(frozen=True)
class Dns:
    """Whether the node's own dnsmasq answers the new names (host/node_dns.py), or the site's DNS must."""

    node_local: bool = True


def _schema() -> dict[str, Any]:
    default = Dns()
    return fragments.prop(
        "How the cluster resolves its new names (api, api-int, *.apps of `domain`).",
        [{"nodeLocal": default.node_local}],
        **fragments.obj(
            {
                "nodeLocal": fragments.prop(
                    "The node's own dnsmasq answers the new names with the node's internal address, so the cluster "
                    "resolves them whatever the site DNS holds (default true; no reboot). false: the site DNS is "
                    "authoritative and must hold api.<domain> and *.apps.<domain> before the run, which checks it.",
                    [False],
                    type="boolean",
                ),
            }
        ),
    )


def _load(values: Mapping[str, Any] | None, checked: checks.Checked) -> Dns:
    return Dns(node_local=(values or {}).get("nodeLocal", Dns().node_local))


SETTING = setting.Setting(
    key="dns",
    field="",
    schema=_schema(),
    load=_load,
    cost=setting.Cost(reboot="no", note="the node's dnsmasq restarts (node-local DNS), no reboot"),
)

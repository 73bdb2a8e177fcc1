"""`spec.networkProbes`: what must be reachable after the network change before it is committed (gateway, DNS, TCP
targets), or `none`. The site-network host step (`snoreloc.steps.host.site_network`) and the network transaction
(`snoreloc.host.network`) read it; it has no step of its own and costs nothing on the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from snoreloc.siteconfig import checks, fragments, nmstate_check, setting

KEY = "networkProbes"
PROBE_NONE = "none"
NONE_SAID = f"{KEY}: {PROBE_NONE}"  # how the site-config says "commit without probing"


def _schema() -> dict[str, Any]:
    probes = fragments.obj(
        {
            "gateway": fragments.prop(
                "Check that each default gateway answers ARP (IPv4) or neighbour discovery (IPv6); ICMP is not "
                "needed. Default true.",
                [True],
                type="boolean",
            ),
            "dns": fragments.prop(
                "Check that each DNS server answers a query; any answer counts, REFUSED and SERVFAIL included. "
                "Default true.",
                [True],
                type="boolean",
            ),
            "tcp": fragments.prop(
                "host:port targets that must accept a TCP connection (the registry, the hub). IPv6: [addr]:port.",
                [["registry.site.example.com:8443"]],
                type="array",
                uniqueItems=True,
                maxItems=16,
                items={
                    "type": "string",
                    "pattern": r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}$",
                    "x-message": "must be host:port (IPv6: [address]:port)",
                },
            ),
        }
    )
    return fragments.prop(
        "What must be reachable after the network change before it is committed (bounded by "
        "`timeouts.networkProbe`); `none` commits without checking. Default: gateway and DNS.",
        [{"gateway": True, "dns": True, "tcp": ["registry.site.example.com:8443"]}, PROBE_NONE],
        type=["string", "object"],
        **{"if": {"type": "string"}, "then": {"const": PROBE_NONE}, "else": probes},
    )


@dataclass(frozen=True)
class NetworkProbes:
    """What must answer after the network change before it is committed (`spec.networkProbes`)."""

    enabled: bool = True  # False: `networkProbes: none`, commit without checking
    gateway: bool = True
    dns: bool = True
    tcp: tuple[tuple[str, int], ...] = ()  # (host, port); IPv6 hosts without brackets


def _host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


def _load(value: Any, checked: checks.Checked) -> NetworkProbes:
    if value == PROBE_NONE:
        return NetworkProbes(enabled=False, gateway=False, dns=False)
    values = value or {}
    return NetworkProbes(
        gateway=values.get("gateway", True),
        dns=values.get("dns", True),
        tcp=tuple(_host_port(target) for target in values.get("tcp") or ()),
    )


SETTING = setting.Setting(key=KEY, field="network_probes", schema=_schema(), load=_load)


def check_probed(run: checks.Run, spec: Mapping[str, Any], network: Mapping[str, Any]) -> None:
    """A network change must be checked by something, or say `networkProbes: none`."""
    probes = spec.get(KEY)
    path = (*checks.SPEC, KEY)
    for index, target in enumerate(probes.get("tcp") or () if isinstance(probes, Mapping) else ()):
        checks.port(run, (*path, "tcp", index), target)
    if probes == PROBE_NONE or not run.sound(path):
        return
    if not nmstate_check.probe_sources(network, probes if isinstance(probes, Mapping) else {}):
        run.error(
            (*checks.SPEC, "network"),
            "nothing would prove this network works before it is committed: it names no default gateway or DNS "
            "server and uses no DHCP; add them, add `networkProbes.tcp` targets, or set `networkProbes: none`",
        )

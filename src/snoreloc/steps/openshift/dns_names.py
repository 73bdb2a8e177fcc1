"""Who can reach the cluster by its new names, and the records the site's DNS needs, ready to paste.

Shared by the host step that makes the node answer for the names (`steps.node_dns`) and by preflight, which
checks them from the node: one wording, one set of records. The records point at the node's site address, the
static address the site-config gives it (the internal address is the node's own and no client can reach it).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from snoreloc.siteconfig import model

DHCP_ADDRESS = "<the node's site address>"  # a site network on DHCP: the address is known only at the site


def site_addresses(site: model.SiteConfig) -> list[str]:
    """The node's static site addresses (IPv4 first), from the site-config's network."""
    found: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for iface in (site.network or {}).get("interfaces") or []:
        if not isinstance(iface, dict) or iface.get("state") == "absent":
            continue
        for version in (4, 6):
            section: Any = iface.get(f"ipv{version}")
            for entry in (section.get("address") or []) if isinstance(section, dict) else []:
                try:
                    found.append(ipaddress.ip_address(str(entry["ip"])))
                except (KeyError, TypeError, ValueError):
                    continue
    return [str(a) for a in sorted(set(found), key=lambda a: (a.version, a))]


def zone_lines(site: model.SiteConfig) -> list[str]:
    """`api` and the `*.apps` wildcard as zone-file lines (A for IPv4, AAAA for IPv6)."""
    addresses = site_addresses(site) or [DHCP_ADDRESS]
    lines = []
    for name in (f"{site.api_host}.", f"*.{site.apps_domain}."):
        for address in addresses:
            kind = "AAAA" if ":" in address else "A"
            lines.append(f"{name:<48} IN {kind:<4} {address}")
    return lines


def clients_warning(site: model.SiteConfig, names: list[str]) -> str:
    """The warning for a site DNS that does not (yet) hold the names, while the node answers them itself."""
    return (
        f"{', '.join(names)} not in the site DNS yet. The cluster itself reaches its new names through the node's "
        "own DNS (node-local dnsmasq); clients on the site (oc, browsers) reach it by name only once the site DNS "
        "has these records:\n" + "\n".join(zone_lines(site))
    )


def refusal(site: model.SiteConfig, names: list[str], why: str) -> str:
    """Why a run that relies on the site's DNS refuses to start: the operators would stay Degraded."""
    return (
        f"{', '.join(names)} do not resolve from the node, and {why}: OpenShift's authentication and console "
        "operators check their routes by name and would stay Degraded. The site DNS needs these records:\n"
        + "\n".join(zone_lines(site))
    )

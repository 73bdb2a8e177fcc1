"""The node's fixed internal addresses, as the factory left them, and how they enter a site network.

The factory MachineConfig writes `/etc/snoreloc/config` (interface and internal addresses) and a dispatcher script
that puts those addresses on that interface (`br-ex`) at every activation. A site network that describes `br-ex`
must carry them too: nmstate replaces an interface's address list with the desired one and then verifies the
device holds exactly that list, with no way to exclude single addresses (nmstate/nmstate
rust/src/lib/query_apply/ip.rs: `InterfaceIpv4::update` takes the desired `addresses` whole, and the verification
compares the sorted lists). Without them, nmstate would drop the addresses from the profile, the dispatcher would
add them back during the apply, and verification would fail every time. With them, nmstate keeps them and the
dispatcher finds nothing to add.
"""

from __future__ import annotations

import copy
import ipaddress
from dataclasses import dataclass
from typing import Any

from snoreloc.adapters import fs

CONFIG_PATH = "/etc/snoreloc/config"

Address = ipaddress.IPv4Interface | ipaddress.IPv6Interface


def parse_config(text: str) -> dict[str, str]:
    """The KEY=VALUE pairs of `/etc/snoreloc/config` (comments and blank lines ignored, quotes removed)."""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and not key.startswith("#"):
            values[key.strip()] = value.strip().strip('"')
    return values


@dataclass(frozen=True)
class Internal:
    """The interface that carries the internal addresses, and the addresses (primary first)."""

    interface: str = ""
    addresses: tuple[Address, ...] = ()


def read(host: fs.HostFS) -> Internal:
    """What the factory configured; empty when the node has no internal addresses (or no factory config)."""
    if not host.exists(CONFIG_PATH):
        return Internal()
    values = parse_config(host.read_text(CONFIG_PATH))
    addresses = tuple(ipaddress.ip_interface(text) for text in values.get("SNORELOC_INTERNAL_IPS", "").split())
    return Internal(values.get("SNORELOC_INTERFACE", ""), addresses)


def with_internal(desired: dict[str, Any], internal: Internal) -> dict[str, Any]:
    """`desired`, with the internal addresses added to the static address lists of their interface."""
    if not internal.addresses:
        return desired
    out = copy.deepcopy(desired)
    for iface in out.get("interfaces") or []:
        if isinstance(iface, dict) and iface.get("name") == internal.interface and iface.get("state") != "absent":
            _add(iface, internal.addresses)
    return out


def _add(iface: dict[str, Any], addresses: tuple[Address, ...]) -> None:
    for address in addresses:
        section = iface.get(f"ipv{address.version}")
        if not isinstance(section, dict) or section.get("enabled") is False or "address" not in section:
            continue
        entries = section["address"]
        present = {_key(entry) for entry in entries if isinstance(entry, dict)}
        if (address.ip, address.network.prefixlen) not in present:
            entries.append({"ip": str(address.ip), "prefix-length": address.network.prefixlen})


def _key(entry: dict[str, Any]) -> tuple[Any, Any]:
    try:
        return ipaddress.ip_address(str(entry.get("ip"))), entry.get("prefix-length")
    except ValueError:
        return entry.get("ip"), entry.get("prefix-length")


def conflicts(desired: dict[str, Any], internal: Internal) -> list[str]:
    """Site addresses whose subnet overlaps an internal address's subnet: the node would route its own node IP
    traffic out to the site (or the site's to itself)."""
    return [message for _path, message in located_conflicts(desired, internal)]


def located_conflicts(desired: dict[str, Any], internal: Internal) -> list[tuple[tuple[str | int, ...], str]]:
    """`conflicts`, each with its path in the nmstate document (`interfaces[i].ipv4.address[j]`)."""
    found: list[tuple[tuple[str | int, ...], str]] = []
    for index, iface in enumerate(desired.get("interfaces") or []):
        if not isinstance(iface, dict) or iface.get("state") == "absent":
            continue
        for path, entry in _static(iface):
            for address in internal.addresses:
                if entry.version == address.version and entry.network.overlaps(address.network) and entry != address:
                    message = (
                        f"{iface.get('name')}: {entry.with_prefixlen} overlaps the node's internal address "
                        f"{address.with_prefixlen}"
                    )
                    found.append((("interfaces", index, *path), message))
    return found


def _static(iface: dict[str, Any]) -> list[tuple[tuple[str | int, ...], Address]]:
    out: list[tuple[tuple[str | int, ...], Address]] = []
    for version in (4, 6):
        section = iface.get(f"ipv{version}")
        entries = (section.get("address") or []) if isinstance(section, dict) else []
        for position, entry in enumerate(entries):
            try:
                address = ipaddress.ip_interface(f"{entry['ip']}/{entry['prefix-length']}")
            except (KeyError, TypeError, ValueError):
                continue
            out.append(((f"ipv{version}", "address", position), address))
    return out

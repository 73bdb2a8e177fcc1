"""Sanity checks of an nmstate desired state, before it is applied to a node nobody can reach by hand.

nmstate itself rejects malformed states, but only at apply time, on the node, with the network half-changed and
after a rollback timeout. The mistakes a site-config author makes (a typo'd address, a prefix of 240, a gateway
outside the subnet, a VLAN on a port that is not there, two interfaces with one name) are all visible on paper, so
we look for them here and report them with the rest. Only the keys we understand are checked; nmstate keeps the
final word on the others.

About br-ex: on OVN-Kubernetes the node's IP lives on the `br-ex` OVS bridge, which ovs-configuration builds from
the physical port at boot. A site-config may give the `br-ex` interface its addresses, but editing the bridge itself
(`type: ovs-bridge`) would fight ovs-configuration, so that is an error.

Some changes remove the way back to the node: deleting `br-ex`, removing the default route, emptying the DNS
servers. Those are errors unless the site-config lists them in `spec.networkAccept`, which is how an author says
"yes, I mean it". The accepted names are `ACCEPT_NAMES`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from typing import Any

from snoreloc.siteconfig import findings
from snoreloc.siteconfig.settings import network_accept

ACCEPT = ".".join(map(str, network_accept.SETTING.path))  # where an author says they mean a risky change

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPInterface = ipaddress.IPv4Interface | ipaddress.IPv6Interface

_IFNAME = re.compile(r"^[^\s/:]{1,15}$")
_DOMAIN = re.compile(
    r"^(?=.{1,253}$)([a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*\.?$"
)
_OVN_BRIDGE = "br-ex"
_FAMILIES = (("ipv4", 4, 32), ("ipv6", 6, 128))
DEFAULT_ROUTES = ("0.0.0.0/0", "::/0")

REMOVE_DEFAULT_ROUTE = "removeDefaultRoute"
REMOVE_DNS = "removeDNSServers"
REMOVE_BR_EX = "removeBrEx"
ACCEPT_NAMES = (REMOVE_DEFAULT_ROUTE, REMOVE_DNS, REMOVE_BR_EX)


def plausible_ifname(name: str) -> bool:
    """A name the kernel accepts: 1-15 characters, no whitespace, '/' or ':', and not '.' or '..'."""
    return bool(_IFNAME.match(name)) and name not in {".", ".."}


class _State:
    """One pass over a desired state, collecting findings and the facts later checks need."""

    def __init__(self, state: Mapping[str, Any], prefix: findings.Path, accept: frozenset[str]) -> None:
        self.state = state
        self.prefix = prefix
        self.accept = accept
        self.out: list[findings.Finding] = []
        self.names: dict[str, int] = {}
        self.subnets: dict[str, list[IPInterface]] = {}
        self.static = False
        self.own: set[IPAddress] = set()

    def error(self, path: findings.Path, message: str) -> None:
        self.out.append(findings.error((*self.prefix, *path), message))

    def warn(self, path: findings.Path, message: str) -> None:
        self.out.append(findings.warning((*self.prefix, *path), message))

    def known_or_plausible(self, path: findings.Path, name: Any, what: str) -> None:
        if not isinstance(name, str) or not (name in self.names or plausible_ifname(name)):
            self.error(path, f"{what} is not a valid interface name")


def _interfaces(run: _State) -> list[tuple[int, Mapping[str, Any]]]:
    items = [(i, iface) for i, iface in enumerate(run.state.get("interfaces") or []) if isinstance(iface, Mapping)]
    for index, iface in items:
        name = iface.get("name")
        path: findings.Path = ("interfaces", index, "name")
        if not isinstance(name, str):
            continue
        if not plausible_ifname(name):
            run.error(path, "is not a valid interface name (1-15 characters, no spaces, '/' or ':')")
        elif name in run.names:
            run.error(path, f"duplicate interface name (also interfaces[{run.names[name]}])")
        else:
            run.names[name] = index
        if name == _OVN_BRIDGE:
            _br_ex(run, index, iface)
    return items


def _br_ex(run: _State, index: int, iface: Mapping[str, Any]) -> None:
    if iface.get("state") == "absent" and REMOVE_BR_EX not in run.accept:
        run.error(
            ("interfaces", index, "state"),
            "removes br-ex, which carries the node's IP on OVN-Kubernetes: the node would lose the cluster network "
            f"(list {REMOVE_BR_EX} in {ACCEPT} if you mean it)",
        )
    elif iface.get("type") == "ovs-bridge":
        run.error(
            ("interfaces", index, "type"),
            "edits the br-ex OVS bridge, which ovs-configuration builds at boot; give br-ex addresses as "
            "`type: ovs-interface`, or configure its physical port (or VLAN/bond) instead",
        )


def parse_ip(text: Any) -> IPAddress | None:
    """An IP address without a zone id (`fe80::1%eth0`), or None."""
    if not isinstance(text, str) or "%" in text:
        return None
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _usable_problem(address: IPAddress) -> str | None:
    if address.is_multicast:
        return f"{address} is a multicast address"
    if address.is_unspecified:
        return f"{address} is the unspecified address"
    if address.is_loopback:
        return f"{address} is a loopback address"
    return None


def _address(run: _State, path: findings.Path, entry: Any, version: int, bits: int) -> IPInterface | None:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("ip"), str):
        return None
    prefix = entry.get("prefix-length")
    address = parse_ip(entry["ip"])
    if address is None:
        run.error((*path, "ip"), f"is not a valid IPv{version} address (without a zone id)")
        return None
    if address.version != version:
        run.error((*path, "ip"), f"is an IPv{address.version} address in the ipv{version} section")
        return None
    if not isinstance(prefix, int) or not 0 <= prefix <= bits:
        run.error((*path, "prefix-length"), f"must be 0-{bits} for IPv{version}")
        return None
    return ipaddress.ip_interface(f"{address}/{prefix}")


def _host_problem(found: IPInterface) -> str | None:
    network = found.network
    if network.num_addresses <= 2 or found.ip not in {network.network_address, network.broadcast_address}:
        return None
    if found.version == 6 and found.ip != network.network_address:
        return None
    return f"{found.ip} is the {'network' if found.ip == network.network_address else 'broadcast'} address of {network}"


def _family(run: _State, index: int, iface: Mapping[str, Any], seen: dict[IPAddress, str]) -> None:
    for key, version, bits in _FAMILIES:
        section = iface.get(key)
        if not isinstance(section, Mapping) or section.get("enabled") is False:
            continue
        entries = section.get("address") or []
        if not section.get("dhcp") and not section.get("autoconf"):
            run.static = run.static or bool(entries)
            if section.get("enabled") and not entries:
                run.warn(("interfaces", index, key), f"IPv{version} is enabled without DHCP or a static address")
        for position, entry in enumerate(entries):
            path = ("interfaces", index, key, "address", position)
            found = _address(run, path, entry, version, bits)
            if found is None:
                continue
            problem = _host_problem(found) or _usable_problem(found.ip)
            if problem:
                run.error((*path, "ip"), problem)
            if found.ip in seen:
                run.error((*path, "ip"), f"{found.ip} is also set on {seen[found.ip]}")
            seen[found.ip] = str(iface.get("name"))
            run.own.add(found.ip)
            run.subnets.setdefault(str(iface.get("name")), []).append(found)


def _vlan(run: _State, index: int, iface: Mapping[str, Any]) -> None:
    vlan = iface.get("vlan")
    if not isinstance(vlan, Mapping):
        run.error(("interfaces", index), "type vlan needs `vlan: {base-iface: ..., id: ...}`")
        return
    base = vlan.get("base-iface")
    if base == iface.get("name"):
        run.error(("interfaces", index, "vlan", "base-iface"), "a VLAN cannot be its own base interface")
        return
    run.known_or_plausible(("interfaces", index, "vlan", "base-iface"), base, "base-iface")


def _mtu(run: _State, index: int, iface: Mapping[str, Any]) -> None:
    # JSON Schema counts 1500.0 as an integer; nmstate does not.
    if isinstance(iface.get("mtu"), float):
        run.error(("interfaces", index, "mtu"), "must be a whole number of bytes (1500, not 1500.0)")


def _bond(run: _State, index: int, iface: Mapping[str, Any], ports_seen: dict[str, str]) -> None:
    aggregation = iface.get("link-aggregation")
    if not isinstance(aggregation, Mapping) or not aggregation.get("mode"):
        run.error(("interfaces", index), "type bond needs `link-aggregation: {mode: ..., port: [...]}`")
        return
    for position, port in enumerate(aggregation.get("port") or []):
        path = ("interfaces", index, "link-aggregation", "port", position)
        run.known_or_plausible(path, port, "port")
        if port == iface.get("name"):
            run.error(path, "a bond cannot contain itself")
        elif isinstance(port, str) and ports_seen.setdefault(port, str(iface.get("name"))) != iface.get("name"):
            run.error(path, f"{port} is already a port of {ports_seen[port]}")


def _check_interfaces(run: _State) -> None:
    seen: dict[IPAddress, str] = {}
    ports_seen: dict[str, str] = {}
    for index, iface in _interfaces(run):
        if iface.get("state") == "absent":
            continue
        _mtu(run, index, iface)
        _family(run, index, iface, seen)
        if iface.get("type") == "vlan":
            _vlan(run, index, iface)
        elif iface.get("type") == "bond":
            _bond(run, index, iface, ports_seen)


def _destination(run: _State, path: findings.Path, value: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(str(value), strict=True)
    except ValueError:
        pass
    try:
        loose = ipaddress.ip_network(str(value), strict=False)
    except ValueError:
        run.error(path, "is not a valid network (CIDR such as 0.0.0.0/0 or 10.0.0.0/8)")
        return None
    run.warn(path, f"has host bits set; nmstate will use {loose}")
    return loose


def _gateway_reachable(run: _State, path: findings.Path, gateway: IPAddress, device: Any) -> None:
    subnets = [s for s in run.subnets.get(str(device), []) if s.version == gateway.version]
    if gateway in run.own:
        run.error(path, f"next hop {gateway} is one of the node's own addresses")
    elif any(gateway == s.network.network_address and s.network.num_addresses > 2 for s in subnets):
        run.error(path, f"next hop {gateway} is the network address of its subnet")
    elif subnets and not any(gateway in s.network for s in subnets):
        nets = ", ".join(str(s.network) for s in subnets)
        run.warn(path, f"next hop {gateway} is not in a subnet of {device} ({nets})")


def _route(run: _State, index: int, route: Mapping[str, Any]) -> None:
    path: findings.Path = ("routes", "config", index)
    if route.get("state") == "absent":
        _removed_route(run, path, route)
        return
    if "destination" not in route:
        run.error(path, "a route needs a destination")
        return
    network = _destination(run, (*path, "destination"), route["destination"])
    if "next-hop-interface" in route:
        run.known_or_plausible((*path, "next-hop-interface"), route["next-hop-interface"], "next-hop-interface")
    if "next-hop-address" not in route:
        return
    gateway = parse_ip(route["next-hop-address"])
    if gateway is None:
        run.error((*path, "next-hop-address"), "is not a valid IP address (without a zone id)")
        return
    problem = _usable_problem(gateway)
    if problem:
        run.error((*path, "next-hop-address"), problem)
        return
    if network is not None and network.version != gateway.version:
        run.error((*path, "next-hop-address"), f"is IPv{gateway.version} but the destination is IPv{network.version}")
        return
    _gateway_reachable(run, (*path, "next-hop-address"), gateway, route.get("next-hop-interface"))


def _removed_route(run: _State, path: findings.Path, route: Mapping[str, Any]) -> None:
    # nmstate reads an absent route as a wildcard: with no destination it matches every route, the default too.
    destination = route.get("destination")
    if (destination is None or str(destination) in DEFAULT_ROUTES) and REMOVE_DEFAULT_ROUTE not in run.accept:
        run.error(
            path,
            "removes the default route: the node would be cut off from everything beyond its subnets "
            f"(list {REMOVE_DEFAULT_ROUTE} in {ACCEPT} if you mean it)",
        )


def _check_routes(run: _State) -> None:
    routes = run.state.get("routes")
    if not isinstance(routes, Mapping):
        return
    for index, route in enumerate(routes.get("config") or []):
        if isinstance(route, Mapping):
            _route(run, index, route)


def _each(values: Any) -> Iterable[tuple[int, Any]]:
    return enumerate(values) if isinstance(values, list) else ()


def _check_dns(run: _State) -> None:
    resolver = run.state.get("dns-resolver")
    config = resolver.get("config") if isinstance(resolver, Mapping) else None
    config = config if isinstance(config, Mapping) else {}
    servers = config.get("server")
    if isinstance(servers, list) and not servers and REMOVE_DNS not in run.accept:
        run.error(
            ("dns-resolver", "config", "server"),
            f"removes every DNS server: the node could not resolve its registry (list {REMOVE_DNS} in "
            f"{ACCEPT} if you mean it)",
        )
    for index, server in _each(servers):
        address = parse_ip(server)
        problem = "is not a valid IP address (without a zone id)" if address is None else _usable_problem(address)
        if address is not None and address in run.own:
            problem = f"{address} is one of the node's own addresses; the node runs no DNS server of its own"
        if problem:
            run.error(("dns-resolver", "config", "server", index), problem)
    for index, domain in _each(config.get("search")):
        if not _DOMAIN.match(str(domain)):
            run.error(("dns-resolver", "config", "search", index), "is not a valid domain name")
    if run.static and not config.get("server"):
        run.warn(("dns-resolver",), "static addressing without DNS servers: the node may not resolve the registry")


def check(
    state: Mapping[str, Any], prefix: findings.Path = (), accept: frozenset[str] = frozenset()
) -> list[findings.Finding]:
    """Findings for an nmstate desired state; paths are `prefix` + the path inside the state.

    `accept` holds the names from `spec.networkAccept`: risky removals the author said they mean.
    """
    run = _State(state, prefix, accept)
    _check_interfaces(run)
    _check_routes(run)
    _check_dns(run)
    return run.out


def default_gateways(state: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """(next hop, interface) of each default route the state sets."""
    routes = state.get("routes")
    config = routes.get("config") if isinstance(routes, Mapping) else None
    return [
        (str(route["next-hop-address"]), route.get("next-hop-interface"))
        for _, route in _each(config)
        if isinstance(route, Mapping)
        and str(route.get("destination")) in DEFAULT_ROUTES
        and route.get("state") != "absent"
        and "next-hop-address" in route
    ]


def dns_servers(state: Mapping[str, Any]) -> list[str]:
    """The DNS servers the state sets (`dns-resolver.config.server`)."""
    resolver = state.get("dns-resolver")
    config = resolver.get("config") if isinstance(resolver, Mapping) else None
    servers = config.get("server") if isinstance(config, Mapping) else None
    return [str(server) for _, server in _each(servers)]


def dynamic(state: Mapping[str, Any]) -> bool:
    """True when some interface takes its addresses from DHCP or SLAAC (its gateway and DNS come from there)."""
    for _, iface in _each(state.get("interfaces")):
        for key, _, _ in _FAMILIES:
            section = iface.get(key) if isinstance(iface, Mapping) else None
            if isinstance(section, Mapping) and (section.get("dhcp") or section.get("autoconf")):
                return True
    return False


def probe_sources(state: Mapping[str, Any], probes: Mapping[str, Any]) -> bool:
    """Whether the probes asked for (`spec.networkProbes`, defaults on) would find something to check."""
    gateway = probes.get("gateway", True) and (default_gateways(state) or dynamic(state))
    dns = probes.get("dns", True) and (dns_servers(state) or dynamic(state))
    return bool(gateway or dns or probes.get("tcp"))

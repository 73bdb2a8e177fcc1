"""Is the new network good enough to keep? Gateway, DNS and TCP reachability, each behind one Protocol.

After nmstate applies the site's network without committing, these checks decide between commit and rollback, so
each must test the thing itself, and nothing more than the site promises:

- a gateway is reachable when its link-layer address resolves (ARP for IPv4, neighbour discovery for IPv6): many
  site routers drop ICMP, none can route without answering ARP. We nudge the kernel with one UDP datagram to the
  gateway's discard port, then read the neighbour table (`ip -j neigh`).
- a DNS server is reachable when it answers a query sent straight to it, whatever the answer: an internal-only
  resolver may answer REFUSED or SERVFAIL for the root, which still proves the path to it works.
- a TCP target (registry, hub) is reachable when it accepts a connection.

Every verdict says what was sent and what came back, because the technician reads it after a rollback.
"""

from __future__ import annotations

import contextlib
import enum
import ipaddress
import json
import os
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from snoreloc.adapters import command

DNS_PORT = 53
DISCARD_PORT = 9
_RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}
# Neighbour states that prove the gateway answered (ip-neighbour(8)); STALE/DELAY/PROBE are not yet confirmed.
_RESOLVED = {"REACHABLE", "PERMANENT", "NOARP"}


class Kind(enum.Enum):
    GATEWAY = "gateway"
    DNS = "dns"
    TCP = "tcp"


@dataclass(frozen=True)
class Target:
    """One thing to reach: a gateway (neighbour resolution), a DNS server (any answer), or host:port (TCP)."""

    kind: Kind
    address: str
    port: int = 0
    interface: str | None = None

    def __str__(self) -> str:
        host = f"[{self.address}]" if ":" in self.address and self.port else self.address
        return f"{self.kind.value} {host}" + (f":{self.port}" if self.port else "")


@dataclass(frozen=True)
class Check:
    """The verdict on one target, with what was seen."""

    target: Target
    ok: bool
    detail: str


class Prober(Protocol):
    def check(self, target: Target) -> Check: ...


Nudge = Callable[[str, str | None], None]


def nudge(address: str, interface: str | None) -> None:
    """Make the kernel resolve `address`: one empty UDP datagram to its discard port (errors do not matter)."""
    family = socket.AF_INET6 if ipaddress.ip_address(address).version == 6 else socket.AF_INET
    scoped = f"{address}%{interface}" if interface and family == socket.AF_INET6 else address
    with socket.socket(family, socket.SOCK_DGRAM) as sock, contextlib.suppress(OSError):
        sock.sendto(b"", (scoped, DISCARD_PORT))


class NetworkProber:
    """Real probes: neighbour table through the command runner, DNS and TCP from this process, short timeouts."""

    def __init__(
        self, runner: command.Runner, *, timeout: float = 3.0, trigger: Nudge = nudge, dns_port: int = DNS_PORT
    ) -> None:
        self.runner = runner
        self.timeout = timeout
        self.trigger = trigger
        self.dns_port = dns_port

    def check(self, target: Target) -> Check:
        if target.kind is Kind.GATEWAY:
            return self._neighbour(target)
        if target.kind is Kind.DNS:
            return self._dns(target)
        return self._tcp(target)

    def _neighbour(self, target: Target) -> Check:
        self.trigger(target.address, target.interface)
        argv = ["ip", "-j", "neigh", "show", "to", target.address]
        argv += ["dev", target.interface] if target.interface else []
        result = self.runner.run(argv, timeout=self.timeout + 5, check=False)
        sent = "sent a UDP datagram to trigger ARP/neighbour discovery"
        if not result.ok:
            return Check(target, False, f"{sent}; `ip neigh` failed: {result.stderr.strip()[-200:]}")
        states = neighbour_states(result.stdout)
        if _RESOLVED & set(states):
            return Check(target, True, f"{sent}; neighbour entry {'/'.join(states)}")
        seen = "/".join(states) if states else "no entry"
        return Check(target, False, f"{sent}; no link-layer answer (neighbour table: {seen})")

    def _dns(self, target: Target) -> Check:
        sent = "sent a query for the root NS records"
        try:
            rcode = query_root_ns(target.address, port=target.port or self.dns_port, timeout=self.timeout)
        except OSError as exc:
            return Check(target, False, f"{sent}; no DNS answer within {self.timeout:g}s: {exc}")
        return Check(target, True, f"{sent}; answered {_RCODES.get(rcode, str(rcode))}")

    def _tcp(self, target: Target) -> Check:
        sent = f"opened a TCP connection to port {target.port}"
        try:
            with socket.create_connection((target.address, target.port), timeout=self.timeout):
                return Check(target, True, f"{sent}; accepted")
        except OSError as exc:
            return Check(target, False, f"{sent}; failed: {exc.strerror or exc}")


def neighbour_states(output: str) -> list[str]:
    """The states of the entries `ip -j neigh show` printed (empty when none, or unreadable)."""
    try:
        entries: Any = json.loads(output or "[]")
    except ValueError:
        return []
    if not isinstance(entries, list):
        return []
    return [str(state) for entry in entries if isinstance(entry, dict) for state in entry.get("state") or ()]


def dns_query(query_id: int) -> bytes:
    """A recursive query for the root's NS records: every resolver can answer it, and it reveals no name of ours."""
    header = struct.pack("!HHHHHH", query_id, 0x0100, 1, 0, 0, 0)
    return header + b"\x00" + struct.pack("!HH", 2, 1)


def parse_rcode(query_id: int, reply: bytes) -> int:
    """The response code of a reply to our query; ValueError if it is not one."""
    if len(reply) < 12:
        raise ValueError("short DNS reply")
    reply_id, flags = struct.unpack("!HH", reply[:4])
    if reply_id != query_id or not flags & 0x8000:
        raise ValueError("not a reply to our query")
    return int(flags & 0x000F)


def query_root_ns(server: str, *, port: int = DNS_PORT, timeout: float = 3.0) -> int:
    """Send one query to `server` over UDP and return the reply's RCODE; OSError when nothing valid comes back."""
    family = socket.AF_INET6 if ipaddress.ip_address(server).version == 6 else socket.AF_INET
    query_id = struct.unpack("!H", os.urandom(2))[0]
    with socket.socket(family, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout)
        sock.connect((server, port))
        sock.send(dns_query(query_id))
        try:
            return parse_rcode(query_id, sock.recv(4096))
        except ValueError as exc:
            raise OSError(str(exc)) from exc


@dataclass
class FakeProber:
    """Test double: each target passes unless listed in `failing`; records what was probed, in order."""

    failing: set[str] = field(default_factory=set)
    probed: list[Target] = field(default_factory=list)

    def check(self, target: Target) -> Check:
        self.probed.append(target)
        ok = target.address not in self.failing
        return Check(target, ok, "fake: reachable" if ok else "fake: unreachable")

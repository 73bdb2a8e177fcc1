"""Is the new network good enough to keep? Gateway, DNS and registry reachability, each behind one Protocol.

After nmstate applies the site's network without committing, these checks decide between commit and rollback, so
each must test the thing itself: the gateway answers a ping, each configured DNS server answers a real query sent
straight to it (not whatever resolver the host happens to use), and an optional registry accepts a TCP connection.
"""

from __future__ import annotations

import enum
import ipaddress
import os
import socket
import struct
from dataclasses import dataclass, field
from typing import Protocol

from snoreloc.adapters import command

DNS_PORT = 53
_RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}
_ANSWERED = {0, 3}


class Kind(enum.Enum):
    GATEWAY = "gateway"
    DNS = "dns"
    TCP = "tcp"


@dataclass(frozen=True)
class Target:
    """One thing to reach: a gateway (ping), a DNS server (query), or host:port (TCP connect)."""

    kind: Kind
    address: str
    port: int = 0
    interface: str | None = None

    def __str__(self) -> str:
        return f"{self.kind.value} {self.address}" + (f":{self.port}" if self.port else "")


@dataclass(frozen=True)
class Check:
    """The verdict on one target, with what was seen."""

    target: Target
    ok: bool
    detail: str


class Prober(Protocol):
    def check(self, target: Target) -> Check: ...


class NetworkProber:
    """Real probes: ping through the command runner, DNS and TCP from this process with short timeouts."""

    def __init__(self, runner: command.Runner, *, timeout: float = 3.0) -> None:
        self.runner = runner
        self.timeout = timeout

    def check(self, target: Target) -> Check:
        if target.kind is Kind.GATEWAY:
            return self._ping(target)
        if target.kind is Kind.DNS:
            return self._dns(target)
        return self._tcp(target)

    def _ping(self, target: Target) -> Check:
        address = target.address
        if target.interface and ipaddress.ip_address(address).is_link_local:
            address = f"{address}%{target.interface}"
        wait = str(max(1, round(self.timeout)))
        result = self.runner.run(["ping", "-c", "1", "-W", wait, address], timeout=self.timeout + 5, check=False)
        return Check(target, result.ok, "answers ping" if result.ok else "no answer to ping")

    def _dns(self, target: Target) -> Check:
        try:
            rcode = query_root_ns(target.address, timeout=self.timeout)
        except OSError as exc:
            return Check(target, False, f"no DNS answer: {exc}")
        name = _RCODES.get(rcode, str(rcode))
        return Check(target, rcode in _ANSWERED, f"answered {name}")

    def _tcp(self, target: Target) -> Check:
        try:
            with socket.create_connection((target.address, target.port), timeout=self.timeout):
                return Check(target, True, "accepts connections")
        except OSError as exc:
            return Check(target, False, f"connection failed: {exc}")


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

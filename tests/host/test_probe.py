from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from snoreloc.adapters import command, probe


@pytest.fixture
def dns_server() -> Iterator[tuple[int, list[int]]]:
    """A UDP server on localhost answering each query with the next RCODE from a list it is given."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    rcodes: list[int] = []

    def serve() -> None:
        while True:
            try:
                data, peer = sock.recvfrom(512)
            except OSError:
                return
            if not rcodes:
                continue  # stay silent: the client times out
            query_id, _flags = struct.unpack("!HH", data[:4])
            sock.sendto(struct.pack("!HHHHHH", query_id, 0x8180 | rcodes.pop(0), 1, 0, 0, 0) + data[12:], peer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield sock.getsockname()[1], rcodes
    sock.close()


def test_dns_query_is_well_formed() -> None:
    query = probe.dns_query(0x1234)
    assert query[:2] == b"\x12\x34" and query[2:4] == b"\x01\x00"
    assert query[12:] == b"\x00\x00\x02\x00\x01"


def test_dns_answer_and_refusal(dns_server: tuple[int, list[int]]) -> None:
    port, rcodes = dns_server
    rcodes.extend([0, 5])
    assert probe.query_root_ns("127.0.0.1", port=port, timeout=2) == 0
    assert probe.query_root_ns("127.0.0.1", port=port, timeout=2) == 5


def test_silent_dns_server_fails_within_the_timeout(dns_server: tuple[int, list[int]]) -> None:
    port, _ = dns_server
    with pytest.raises(OSError):
        probe.query_root_ns("127.0.0.1", port=port, timeout=0.2)


def test_reply_with_the_wrong_id_is_rejected() -> None:
    with pytest.raises(ValueError, match="not a reply"):
        probe.parse_rcode(1, struct.pack("!HHHHHH", 2, 0x8180, 1, 0, 0, 0))


def test_tcp_probe_against_a_listener_and_a_closed_port() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    prober = probe.NetworkProber(command.FakeRunner(), timeout=1)
    assert prober.check(probe.Target(probe.Kind.TCP, "127.0.0.1", port)).ok
    listener.close()
    failed = prober.check(probe.Target(probe.Kind.TCP, "127.0.0.1", port))
    assert not failed.ok and "connection failed" in failed.detail


def test_gateway_ping_goes_through_the_runner_with_scope_for_link_local() -> None:
    runner = command.FakeRunner().on(["ping"], command.Result(0), command.Result(1))
    prober = probe.NetworkProber(runner, timeout=2)
    assert prober.check(probe.Target(probe.Kind.GATEWAY, "10.0.0.1")).ok
    assert not prober.check(probe.Target(probe.Kind.GATEWAY, "fe80::1", interface="eno1")).ok
    assert runner.commands() == [
        ("ping", "-c", "1", "-W", "2", "10.0.0.1"),
        ("ping", "-c", "1", "-W", "2", "fe80::1%eno1"),
    ]

from __future__ import annotations

import socket
import struct

import pytest

from snoreloc.adapters import command, probe


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
    assert not failed.ok and failed.detail.startswith(f"opened a TCP connection to port {port}; failed")


NEIGH_OK = '[{"dst":"10.0.0.1","dev":"eno1","lladdr":"52:54:00:12:34:56","state":["REACHABLE"]}]'


def test_gateway_is_resolved_by_arp_not_ping() -> None:
    nudged: list[tuple[str, str | None]] = []
    runner = command.FakeRunner().on(["ip", "-j", "neigh", "show"], command.Result(0, stdout=NEIGH_OK))
    prober = probe.NetworkProber(runner, timeout=2, trigger=lambda a, i: nudged.append((a, i)))
    verdict = prober.check(probe.Target(probe.Kind.GATEWAY, "10.0.0.1", interface="eno1"))
    assert verdict.ok and "REACHABLE" in verdict.detail
    assert nudged == [("10.0.0.1", "eno1")]
    assert runner.commands() == [("ip", "-j", "neigh", "show", "to", "10.0.0.1", "dev", "eno1")]
    assert not runner.ran("ping")


@pytest.mark.parametrize(
    ("stdout", "seen"),
    [("[]", "no entry"), ('[{"dst":"10.0.0.1","state":["FAILED"]}]', "FAILED"), ('[{"state":["STALE"]}]', "STALE")],
)
def test_gateway_without_a_confirmed_link_layer_answer_fails(stdout: str, seen: str) -> None:
    runner = command.FakeRunner().on(["ip"], command.Result(0, stdout=stdout))
    prober = probe.NetworkProber(runner, timeout=2, trigger=lambda _a, _i: None)
    verdict = prober.check(probe.Target(probe.Kind.GATEWAY, "10.0.0.1"))
    assert not verdict.ok
    assert "sent a UDP datagram" in verdict.detail and seen in verdict.detail


@pytest.mark.parametrize(("rcode", "name"), [(0, "NOERROR"), (2, "SERVFAIL"), (3, "NXDOMAIN"), (5, "REFUSED")])
def test_any_dns_answer_proves_the_server_is_reachable(
    dns_server: tuple[int, list[int]], rcode: int, name: str
) -> None:
    port, rcodes = dns_server
    rcodes.append(rcode)
    prober = probe.NetworkProber(command.FakeRunner(), timeout=2)
    verdict = prober.check(probe.Target(probe.Kind.DNS, "127.0.0.1", port))
    assert verdict.ok, verdict.detail
    assert verdict.detail == f"sent a query for the root NS records; answered {name}"


def test_silent_dns_server_fails_naming_what_was_sent(dns_server: tuple[int, list[int]]) -> None:
    port, _ = dns_server
    verdict = probe.NetworkProber(command.FakeRunner(), timeout=0.2).check(
        probe.Target(probe.Kind.DNS, "127.0.0.1", port)
    )
    assert not verdict.ok and verdict.detail.startswith("sent a query for the root NS records; no DNS answer within")


def test_nudge_sends_without_raising_on_an_unroutable_address() -> None:
    probe.nudge("127.0.0.1", None)

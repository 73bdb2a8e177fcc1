"""The simulator reads HTTP requests itself (not through the `email` parser http.server uses): what clients send
is understood as before, keep-alive included, and what is not HTTP/1.x with `Name: value` fields is refused."""

from __future__ import annotations

import http.client
import json
import socket
import ssl

import pytest

from snoreloc_sim.openshift import simulator

from .conftest import tls_context

pytestmark = pytest.mark.simonly  # the simulator's HTTP request parsing, sent raw to its listener


def _exchange(sim: simulator.Simulator, payload: bytes, *, reads: int = 1) -> bytes:
    """Send raw bytes on one TLS connection; what came back (up to `reads` reads, or until the server closed)."""
    address = ("127.0.0.1", sim.running.api.port)
    with (
        socket.create_connection(address, timeout=10) as plain,
        tls_context(sim).wrap_socket(plain, server_hostname="127.0.0.1") as tls,
    ):
        tls.sendall(payload)
        received = b""
        for _ in range(reads):
            chunk = tls.recv(65536)
            if not chunk:
                break
            received += chunk
        return received


def _get(sim: simulator.Simulator, path: str, *extra: str) -> bytes:
    lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1", f"Authorization: Bearer {sim.token}", *extra, "", ""]
    return "\r\n".join(lines).encode()


def test_the_email_parser_is_not_needed(sim: simulator.Simulator, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("http.client.parse_headers was called")

    monkeypatch.setattr(http.client, "parse_headers", refuse)
    reply = _exchange(sim, _get(sim, "/api/v1/namespaces/default", "Connection: close"), reads=5)
    assert reply.startswith(b"HTTP/1.1 200 ")


def test_two_requests_share_one_connection(sim: simulator.Simulator) -> None:
    connection = http.client.HTTPSConnection("127.0.0.1", sim.running.api.port, context=tls_context(sim), timeout=10)
    headers = {"Authorization": f"Bearer {sim.token}"}
    try:
        for _ in range(2):
            connection.request("GET", "//api/v1/namespaces/default", headers=headers)  # `//`: as one `/`
            response = connection.getresponse()
            body = response.read()
            assert response.status == 200, body
            assert json.loads(body)["metadata"]["name"] == "default"
        assert connection.sock is not None  # still open: keep-alive
    finally:
        connection.close()


def test_a_folded_field_continues_the_one_before(sim: simulator.Simulator) -> None:
    request = _get(sim, "/api/v1/namespaces/default", "X-Note: one", "\ttwo", "Connection: close")
    assert _exchange(sim, request, reads=5).startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize(
    ("payload", "status"),
    [
        (b"GET /readyz\r\n\r\n", b"400"),
        (b"GET /readyz HTTP/2.0\r\n\r\n", b"400"),
        (b"GET /readyz HTTP/1.1\r\nNo colon here\r\n\r\n", b"400"),
        (b"GET /readyz HTTP/1.1\r\nSpace : before colon\r\n\r\n", b"400"),
        (b"GET /readyz HTTP/1.1\r\n" + b"".join(b"X-%d: y\r\n" % n for n in range(101)) + b"\r\n", b"431"),
    ],
    ids=["no-version", "http2", "no-colon", "space-before-colon", "too-many-fields"],
)
def test_what_is_not_http_1_is_refused_and_the_connection_closed(
    sim: simulator.Simulator, payload: bytes, status: bytes
) -> None:
    reply = _exchange(sim, payload, reads=5)
    assert reply.split(b" ", 2)[1] == status, reply[:200]
    assert b"Connection: close" in reply


def test_expect_100_continue_is_answered_before_the_body(sim: simulator.Simulator) -> None:
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"expect"}}'
    head = (
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {sim.token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
    ).encode()
    address = ("127.0.0.1", sim.running.api.port)
    with (
        socket.create_connection(address, timeout=10) as plain,
        tls_context(sim).wrap_socket(plain, server_hostname="127.0.0.1") as tls,
    ):
        tls.sendall(head)
        interim = tls.recv(65536)
        assert interim.startswith(b"HTTP/1.1 100 ")
        tls.sendall(body)
        final = b""
        while chunk := tls.recv(65536):
            final += chunk
    assert final.startswith(b"HTTP/1.1 201 "), final[:200]


def test_an_untrusted_peer_is_still_refused(sim: simulator.Simulator) -> None:
    context = ssl.create_default_context()
    with (
        socket.create_connection(("127.0.0.1", sim.running.api.port), timeout=5) as plain,
        pytest.raises(ssl.SSLCertVerificationError),
    ):
        context.wrap_socket(plain, server_hostname="127.0.0.1")

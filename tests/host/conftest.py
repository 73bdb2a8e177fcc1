"""Fixtures for host-side tests: a temporary host root, a scripted command runner, a clock that sleeps instantly."""

from __future__ import annotations

import pathlib
import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from snoreloc import redact
from snoreloc.adapters import clock, command, fs


@pytest.fixture
def host(tmp_path: pathlib.Path) -> fs.HostFS:
    root = tmp_path / "root"
    root.mkdir()
    return fs.HostFS(root)


@pytest.fixture
def runner() -> command.FakeRunner:
    return command.FakeRunner()


@pytest.fixture
def clk() -> clock.FakeClock:
    return clock.FakeClock()


@pytest.fixture(autouse=True)
def _forget_secrets() -> None:
    redact.forget_secrets()


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

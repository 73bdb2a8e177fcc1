"""Fixtures for host-side tests: a temporary host root, a scripted command runner, a clock that sleeps instantly."""

from __future__ import annotations

import pathlib

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

"""Reliability suite plumbing: the figures (summarised when a session ends) and shared fixtures."""

from __future__ import annotations

import datetime as dt
import pathlib
from collections.abc import Iterator

import pytest

from snoreloc import redact
from snoreloc.pki import certs

from . import figures


def pytest_sessionfinish(session: pytest.Session) -> None:
    if figures.summary():
        figures.write_summary()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    found = figures.summary()
    if not found:
        return
    target = figures.write_summary()
    terminalreporter.section("snoreloc reliability figures")
    for section, entry in found.items():
        terminalreporter.write_line(f"{section}: {entry}")
    terminalreporter.write_line(f"(written to {target})")


@pytest.fixture(scope="session")
def signer() -> tuple[bytes, bytes]:
    """A CA valid from 60 days ago, for corpus cases that need key material made at run time."""
    return certs.issue_ca("reliability-signer", days=3650, now=dt.datetime.now(dt.UTC) - dt.timedelta(days=60))


@pytest.fixture(autouse=True)
def _forget_secrets() -> Iterator[None]:
    yield
    redact.forget_secrets()


@pytest.fixture
def root(tmp_path: pathlib.Path) -> pathlib.Path:
    """An empty host root for one test."""
    path = tmp_path / "root"
    path.mkdir()
    return path

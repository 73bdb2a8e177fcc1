"""Fixtures of the real-host suite: every test here is marked `realhost` and gets its own sandbox on request.

The suite needs root and Linux namespaces; where a component cannot run, the test is skipped with the reason (never
silently passed). `.ci/run` installs everything, so on CI nothing here skips.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from realhost_sandbox import Sandbox, missing_prerequisites, require_libnmstate

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(HERE):
            item.add_marker(pytest.mark.realhost)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line saying how many real-host tests ran, so a CI log shows at once whether they were skipped."""
    counts = {
        outcome: sum(1 for report in reports if getattr(report, "nodeid", "").startswith("tests/realhost/"))
        for outcome, reports in terminalreporter.stats.items()
        if outcome in {"passed", "failed", "skipped", "xfailed", "xpassed", "error"}
    }
    if any(counts.values()):
        summary = ", ".join(f"{count} {outcome}" for outcome, count in sorted(counts.items()) if count)
        terminalreporter.write_line(f"real-host tests: {summary}")


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    reason = missing_prerequisites()
    if reason:
        pytest.skip(reason)
    box = Sandbox(tmp_path)
    try:
        box.start()
        yield box
    finally:
        box.stop()


@pytest.fixture
def node(sandbox: Sandbox) -> Sandbox:
    """A sandbox whose eth0 carries the factory network (IPv4), with libnmstate available."""
    require_libnmstate()
    sandbox.factory_network()
    return sandbox

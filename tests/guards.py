"""Test-suite guard: no test runs a real process through snoreloc unless it says so.

Every process snoreloc starts goes through `snoreloc.adapters.command._execute`. This autouse fixture replaces it
with one that fails the test, so a missing fake (a `systemctl`, a `mount`) shows up as an error instead of touching
the machine running the tests. A test that really means to run a program (a shell script under test,
`systemd-analyze verify`) opts in with `@pytest.mark.allow_subprocess`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import pytest

from snoreloc.adapters import command


class RealProcessRefused(AssertionError):
    """A test reached a real process without `@pytest.mark.allow_subprocess`."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "allow_subprocess: the test may run real processes through adapters.command")


def _refuse(argv: Sequence[str], stdin: str | None, timeout: float, env: Mapping[str, str] | None) -> command.Result:
    raise RealProcessRefused(f"real process refused in tests: {list(argv)!r} (fake it, or mark allow_subprocess)")


@pytest.fixture(autouse=True)
def _no_real_processes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if request.node.get_closest_marker("allow_subprocess") is None:
        monkeypatch.setattr(command, "_execute", _refuse)
    yield

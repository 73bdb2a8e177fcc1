"""Pytest fixtures that give a test a running simulated SNO, or the real cluster when one is configured.

Registered suite-wide from `tests/conftest.py`. Fixtures:

- `sim`: a fresh, started `Simulator` per test (seed "4.16", speed 600 unless told otherwise), stopped after.
  Options come from `@pytest.mark.parametrize("sim", [{...}], indirect=True)` or from overriding the
  `sim_options` fixture, e.g. `{"seed": "4.14", "faults": "seed=3,503=0.1"}`.
- `cluster_kubeconfig`: the path of a kubeconfig to test against: `$SNORELOC_TEST_KUBECONFIG` when set (a real
  cluster), else the `sim`'s.

Tests marked `simonly` (they assert simulator internals) are skipped when a real cluster is configured.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from snoreloc.sim import simulator

REAL_CLUSTER_ENV = "SNORELOC_TEST_KUBECONFIG"
DEFAULT_OPTIONS: dict[str, Any] = {"seed": "4.16", "speed": 600.0}


def real_kubeconfig() -> str | None:
    """The real cluster's kubeconfig when the suite runs against one, else None."""
    return os.environ.get(REAL_CLUSTER_ENV) or None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if real_kubeconfig() is None:
        return
    skip = pytest.mark.skip(reason=f"simonly: asserts simulator internals, and {REAL_CLUSTER_ENV} is set")
    for item in items:
        if item.get_closest_marker("simonly") is not None:
            item.add_marker(skip)


@pytest.fixture
def sim_options() -> dict[str, Any]:
    """Override in a test module or class to start `sim` with other Simulator arguments."""
    return {}


@pytest.fixture
def sim(request: pytest.FixtureRequest, sim_options: dict[str, Any]) -> Iterator[simulator.Simulator]:
    options = {**DEFAULT_OPTIONS, **sim_options, **getattr(request, "param", {})}
    with simulator.Simulator(**options) as running:
        yield running


@pytest.fixture
def cluster_kubeconfig(request: pytest.FixtureRequest) -> str:
    real = real_kubeconfig()
    if real is not None:
        return real
    running: simulator.Simulator = request.getfixturevalue("sim")
    return str(running.kubeconfig_path)

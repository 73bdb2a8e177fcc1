"""Pytest fixtures that give a test a running simulated SNO, or the real cluster when one is configured.

Registered suite-wide from `tests/conftest.py`. Fixtures:

- `sim`: a fresh, started `Simulator` per test (seed "4.16", speed 600 unless told otherwise), stopped after. Its
  speed is divided by the machine's `slowdown()` when the test starts (the load per core, 1 to 8): the agent and
  the harness take their budgets in the cluster's seconds at `sim.speed`, so on a loaded machine every
  simulator-timed budget gets as many more wall seconds as the machine is slower (a test at 600x on a two-core
  machine under a load of 8 runs at 150x).
  Options come from `@pytest.mark.parametrize("sim", [{...}], indirect=True)` or from overriding the
  `sim_options` fixture, e.g. `{"seed": "4.14", "faults": "seed=3,503=0.1"}`.
  When a real cluster is configured, `sim` is None: tests that need the simulator itself are marked `simonly`.
- `cluster_target`: what a cluster test talks to, the simulator or the real cluster, as a `ClusterTarget`.
- `cluster_kubeconfig`: the path of that target's kubeconfig.
- `hub_sim`: a fresh, started plain Kubernetes hub (`snoreloc_sim.hub.simulator.HubSimulator`) per test, with
  options from the `hub_options` fixture (e.g. `{"history_window": 5, "bookmark_seconds": 0.2}`).

A real cluster is configured through the environment:
- `SNORELOC_TEST_KUBECONFIG`: its kubeconfig (cluster-admin). Tests change the cluster and roll back after.
- `SNORELOC_TEST_INGRESS`: `host:port` of its router (default: the API server's host, port 443).
- `SNORELOC_TEST_TIME_SCALE`: how much faster than real time the cluster runs (default 1; only a simulator
  served on its own with `snoreloc sim serve --speed X` runs faster, which is how the switch itself is tested).

Tests marked `simonly` (they assert simulator internals, or need its faults, seeds or clock) are skipped then.
Every other test that uses `cluster_target` or `cluster_kubeconfig` is marked `realcluster` at collection, so
`pytest -m realcluster` selects what runs against a real cluster.
"""

from __future__ import annotations

import os
import socket
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from snoreloc_sim.hub import simulator as hub_simulator
from snoreloc_sim.openshift import simulator

REAL_CLUSTER_ENV = "SNORELOC_TEST_KUBECONFIG"
INGRESS_ENV = "SNORELOC_TEST_INGRESS"
TIME_SCALE_ENV = "SNORELOC_TEST_TIME_SCALE"
DEFAULT_OPTIONS: dict[str, Any] = {"seed": "4.16", "speed": 600.0}
MAX_SLOWDOWN = 8.0  # a machine slower than this is not one the suite can promise anything on


def slowdown(load: float | None = None, cores: int | None = None) -> float:
    """How many times slower than idle the machine runs now: the 1-minute load average per core, between 1 and
    `MAX_SLOWDOWN` (1 where the platform has no load average)."""
    if load is None:
        try:
            load = os.getloadavg()[0]
        except OSError:
            return 1.0
    per_core = load / (cores or os.cpu_count() or 1)
    return min(max(per_core, 1.0), MAX_SLOWDOWN)


@dataclass(frozen=True)
class ClusterTarget:
    """The cluster under test. `node_address` is where the site's new names (`api.<domain>`, `*.apps.<domain>`)
    must resolve for the checks that dial them, since no DNS knows them during a test."""

    kubeconfig: str
    router_address: tuple[str, int]
    node_address: str
    speed: float
    simulator: simulator.Simulator | None

    @property
    def real(self) -> bool:
        return self.simulator is None


def real_kubeconfig() -> str | None:
    """The real cluster's kubeconfig when the suite runs against one, else None."""
    return os.environ.get(REAL_CLUSTER_ENV) or None


def _api_host(kubeconfig: str) -> str:
    document = yaml.safe_load(Path(kubeconfig).read_text())
    wanted = document.get("current-context")
    contexts = {c["name"]: c["context"] for c in document.get("contexts") or []}
    cluster_name = contexts.get(wanted, {}).get("cluster") if wanted else None
    clusters = {c["name"]: c["cluster"] for c in document.get("clusters") or []}
    chosen = clusters.get(cluster_name) if cluster_name else next(iter(clusters.values()), None)
    return urllib.parse.urlsplit(str((chosen or {}).get("server", ""))).hostname or "127.0.0.1"


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise pytest.UsageError(f"{INGRESS_ENV} must be host:port, got {text!r}")
    return host, int(port)


def real_target(kubeconfig: str) -> ClusterTarget:
    """The real cluster described by the environment."""
    host = _api_host(kubeconfig)
    router = _address(os.environ[INGRESS_ENV]) if os.environ.get(INGRESS_ENV) else (host, 443)
    node = socket.gethostbyname(router[0])
    return ClusterTarget(kubeconfig, router, node, float(os.environ.get(TIME_SCALE_ENV) or 1.0), None)


CLUSTER_FIXTURES = frozenset({"cluster_target", "cluster_kubeconfig"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_realcluster(items)
    if real_kubeconfig() is None:
        return
    skip = pytest.mark.skip(reason=f"simonly: asserts simulator internals, and {REAL_CLUSTER_ENV} is set")
    unmarked = []
    for item in items:
        if item.get_closest_marker("simonly") is not None:
            item.add_marker(skip)
        elif "sim" in getattr(getattr(item, "_fixtureinfo", None), "argnames", ()):
            unmarked.append(item.nodeid)
    if unmarked:
        raise pytest.UsageError(
            "these tests take the `sim` fixture, which is None against a real cluster; mark them simonly or use "
            "`cluster_target`: " + ", ".join(unmarked)
        )


def mark_realcluster(items: list[pytest.Item]) -> None:
    """Mark `realcluster` every test that talks to the cluster under test (`cluster_target`, `cluster_kubeconfig`)
    and is not `simonly`: what `pytest -m realcluster` runs against a real cluster."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & CLUSTER_FIXTURES and item.get_closest_marker("simonly") is None:
            item.add_marker(pytest.mark.realcluster)


@pytest.fixture
def sim_options() -> dict[str, Any]:
    """Override in a test module or class to start `sim` with other Simulator arguments."""
    return {}


@pytest.fixture
def sim(request: pytest.FixtureRequest, sim_options: dict[str, Any]) -> Iterator[simulator.Simulator | None]:
    if real_kubeconfig() is not None:
        yield None
        return
    options = {**DEFAULT_OPTIONS, **sim_options, **getattr(request, "param", {})}
    options["speed"] = float(options["speed"]) / slowdown()
    with simulator.Simulator(**options) as running:
        yield running


@pytest.fixture
def cluster_target(sim: simulator.Simulator | None) -> ClusterTarget:
    real = real_kubeconfig()
    if real is not None:
        return real_target(real)
    assert sim is not None
    return ClusterTarget(str(sim.kubeconfig_path), sim.router_address, "127.0.0.1", sim.speed, sim)


@pytest.fixture
def cluster_kubeconfig(cluster_target: ClusterTarget) -> str:
    return cluster_target.kubeconfig


@pytest.fixture
def hub_options() -> dict[str, Any]:
    """Override in a test module or class to start `hub_sim` with other HubSimulator arguments."""
    return {}


@pytest.fixture
def hub_sim(hub_options: dict[str, Any]) -> Iterator[hub_simulator.HubSimulator]:
    with hub_simulator.HubSimulator(**hub_options) as running:
        yield running

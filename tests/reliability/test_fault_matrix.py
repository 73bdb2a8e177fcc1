"""The fault matrix: every cluster step under every kind of API misbehaviour, one fresh simulator per cell.

For a cell (step, fault) the fault is switched on when the step starts and off when the next one starts. The run
must either complete or stop with a retryable error (exit 69 or 75, with a message); a stopped run is run again,
without faults, and must complete. Then every object the relocation manages must equal a clean run's (see
`state.managed`) and every route that existed before must still exist.
"""

from __future__ import annotations

import datetime as dt
import pathlib
import time
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

from snoreloc import errors
from snoreloc.pki import certs
from snoreloc_sim.kube import faults
from snoreloc_sim.openshift import simulator

from . import figures, harness, inprocess, state

SPEED = 600.0
OUTAGE_SECONDS = 1.0  # wall: ten minutes of cluster time, a kube-apiserver restart
RATE_FAULTS = {
    "500": "500=0.3",
    "503": "503=0.3,retry-after=1",
    "429": "429=0.3,retry-after=1",
    "reset": "reset=0.3",
    "hang": "hang=0.1,hang-for=3s",
    "conflict": "conflict=0.5",
}
KINDS = (*RATE_FAULTS, "outage", "mcp-reboot")
RETRYABLE = (int(errors.ExitCode.UNAVAILABLE), int(errors.ExitCode.TEMPORARY))

pytestmark = [pytest.mark.simonly, pytest.mark.slow]


def machine_config(name: str) -> dict[str, Any]:
    """A MachineConfig for the master pool: the machine-config operator answers with a drain and a reboot."""
    return {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": name, "labels": {"machineconfiguration.openshift.io/role": "master"}},
        "spec": {"config": {"ignition": {"version": "3.2.0"}}},
    }


class StepFault:
    """Switches one kind of fault on when `step` starts and off when any other step starts."""

    def __init__(self, sim: simulator.Simulator, step: str, kind: str, seed: int) -> None:
        self.sim, self.step, self.kind, self.seed = sim, step, kind, seed
        self.fired = False

    def __call__(self, step: str, what: str) -> None:
        if step == self.step and not self.fired:
            self.fired = True
            self._on()
        elif step != self.step:
            self.off()

    def _on(self) -> None:
        if self.kind in RATE_FAULTS:
            spec = faults.parse(f"seed={self.seed},{RATE_FAULTS[self.kind]}")
            self.sim.running.front.injector = faults.Injector(spec)
        elif self.kind == "outage":
            self.sim.cluster.availability.outage(OUTAGE_SECONDS, "refuse")
        else:
            types = self.sim.cluster.types["machineconfigs.machineconfiguration.openshift.io"]
            self.sim.cluster.store.create(types, machine_config(f"99-reliability-{self.step}"))

    def off(self) -> None:
        self.sim.running.front.injector = None


@pytest.fixture(scope="module")
def ca_pem() -> str:
    return certs.issue_ca("edge9-registry-ca", days=365, now=dt.datetime.now(dt.UTC))[0].decode()


@pytest.fixture(scope="module")
def clean(ca_pem: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What a fault-free relocation leaves behind (the reference every cell is compared with)."""
    with simulator.Simulator(seed="4.16", speed=SPEED) as sim:
        result = inprocess.relocate(sim, harness.site_model(ca_pem), tmp_path_factory.mktemp("clean"))
        assert result.state in inprocess.FINISHED
        return state.managed(sim)


def _cells() -> Iterator[Any]:
    for step in inprocess.STEPS:
        for kind in KINDS:
            yield pytest.param(step, kind, id=f"{step}-{kind}")


def _first_run(sim: simulator.Simulator, site: Any, root: pathlib.Path, fault: StepFault) -> str:
    """Run with the fault; "completed", or how it stopped (only a retryable stop is allowed)."""
    try:
        result = inprocess.relocate(sim, site, root, fault, read_timeout=1.0)
    except errors.SnorelocError as exc:
        assert exc.exit_code in RETRYABLE, f"not retryable: exit {exc.exit_code}: {exc.message}"
        assert exc.message and exc.hint, "a stop must say what failed and what to do"
        return f"stopped with exit {exc.exit_code}"
    finally:
        fault.off()
    assert result.state in inprocess.FINISHED, result.state
    return "completed"


@pytest.mark.parametrize(("step", "kind"), list(_cells()))
def test_cell(step: str, kind: str, clean: dict[str, Any], ca_pem: str, tmp_path: pathlib.Path) -> None:
    began = time.monotonic()
    site = harness.site_model(ca_pem)
    with simulator.Simulator(seed="4.16", speed=SPEED) as sim:
        routes_before = set(state.routes(sim))
        fault = StepFault(sim, step, kind, seed=zlib.crc32(f"{step}/{kind}".encode()))
        passed, outcome = False, "raised"
        try:
            outcome = _first_run(sim, site, tmp_path, fault)
            assert fault.fired, f"step {step} never started"
            if outcome != "completed":
                inprocess.wait_until_up(sim)
                assert inprocess.relocate(sim, site, tmp_path).state in inprocess.FINISHED
            final = state.managed(sim)
            assert state.differences(clean, final) == []
            assert routes_before <= set(final["routes"]), routes_before - set(final["routes"])
            passed = True
        finally:
            seconds = time.monotonic() - began
            figures.record("fault-matrix", f"{step}/{kind}", passed, seconds=seconds, first_run=outcome)

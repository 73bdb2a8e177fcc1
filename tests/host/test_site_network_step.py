"""The network step probes for as long as the site-config's `timeouts.networkProbe` says, and no longer."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from snoreloc import errors
from snoreloc.adapters import clock, fs, nmstate, probe
from snoreloc.host.services import HostServices
from snoreloc.siteconfig import model
from snoreloc.steps import base, context
from snoreloc.steps.host import site_network

DESIRED: dict[str, Any] = {
    "interfaces": [{"name": "eno1", "type": "ethernet", "state": "up"}],
    "routes": {"config": [{"destination": "0.0.0.0/0", "next-hop-address": "10.42.0.1", "next-hop-interface": "eno1"}]},
}


@dataclass
class RecordingNmstate:
    """Keeps the state it is given; records the rollback timeout of each apply and whether it was rolled back."""

    current: dict[str, Any] = field(default_factory=lambda: {"interfaces": []})
    timeouts: list[int] = field(default_factory=list)
    rolled_back: bool = False

    def show(self) -> dict[str, Any]:
        return copy.deepcopy(self.current)

    def apply(self, desired: dict[str, Any], *, commit: bool, rollback_timeout: int) -> nmstate.Checkpoint | None:
        self.timeouts.append(rollback_timeout)
        self.current = copy.deepcopy(desired)
        return nmstate.Checkpoint("/checkpoint/1")

    def commit(self, checkpoint: nmstate.Checkpoint) -> None:
        pass

    def rollback(self, checkpoint: nmstate.Checkpoint) -> None:
        self.rolled_back = True


@pytest.mark.parametrize("window", [20, 300])
def test_the_probe_window_and_rollback_come_from_the_site_config(window: int, tmp_path: Path) -> None:
    backend, clk = RecordingNmstate(), clock.FakeClock()
    host = HostServices(
        fs=fs.HostFS(str(tmp_path)), nmstate=backend, prober=probe.FakeProber(failing={"10.42.0.1"}), units=None
    )  # type: ignore[arg-type]
    site = model.SiteConfig("s", "a.example.com", network=DESIRED, timeouts=model.Timeouts(network_probe=window))
    ctx = context.Context(site, kube=None, clock=clk, backups=None, rollouts=None)  # type: ignore[arg-type]
    step = site_network.SiteNetwork(host)

    with pytest.raises(errors.SnorelocError):
        step.apply(ctx, base.Plan(step.name))

    assert backend.timeouts == [window + site_network.ROLLBACK_MARGIN]
    assert backend.rolled_back
    assert window <= clk.monotonic() < window + 2 * 5.0  # probed through the window (5 s rounds), then gave up

"""sushy-tools' Redfish emulator (the BMC metal3 and Ironic test with) as a site's BMC, over HTTPS with basic auth,
for the zero-touch tests: the emulator, its TLS files and the server it stands for are the fleet demo's own
(`snoreloc_sim.demo.bmc`); here they are a pytest fixture that skips, saying why, without sushy-tools."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from snoreloc_sim.demo import bmc as demo_bmc
from snoreloc_sim.demo.bmc import PASSWORD, SYSTEM, USERNAME, Emulator, Tls, tls

__all__ = ["PASSWORD", "SYSTEM", "USERNAME", "Emulator", "Tls", "_free_port", "bmc", "launched", "tls"]
_free_port = demo_bmc.free_port


@contextlib.contextmanager
def launched(tmp_path: Path, port: int | None = None) -> Iterator[Emulator]:
    """The emulator on `port` (None: a free one) until the block ends, its files under `tmp_path`; skipped when
    sushy-tools is not installed."""
    if demo_bmc.emulator_binary() is None:
        pytest.skip("sushy-tools is not installed (pip install sushy-tools)")
    with demo_bmc.launched(tmp_path, port) as emulator:
        yield emulator


@pytest.fixture
def bmc(tmp_path: Path) -> Iterator[Emulator]:
    with launched(tmp_path) as emulator:
        yield emulator

"""Fixtures of the fleet tests: a template and inventories in the test's directory, a signer, and the hub's own
fixtures (the hub simulator with the Site CRD, its admin client, a controller) for the tests against a hub."""

from __future__ import annotations

import datetime as dt
import pathlib
from collections.abc import Callable, Sequence

import pytest
from fleetinputs import HEADER, write_template

from hub.conftest import admin, hub, start_controller  # noqa: F401 (the hub's fixtures: simulator, admin, controller)
from snoreloc.pki import certs


@pytest.fixture
def template_path(tmp_path: pathlib.Path) -> pathlib.Path:
    return write_template(tmp_path / "template")


@pytest.fixture
def write_inventory(tmp_path: pathlib.Path) -> Callable[[Sequence[str]], pathlib.Path]:
    def write(rows: Sequence[str], name: str = "sites.csv") -> pathlib.Path:
        path = tmp_path / name
        path.write_text("\n".join([HEADER, *rows]) + "\n")
        return path

    return write


@pytest.fixture(scope="session")
def signer() -> tuple[bytes, bytes]:
    return certs.issue_ca("fleet-test-signer", days=3650, now=dt.datetime.now(dt.UTC) - dt.timedelta(days=1))

"""`fleet make-media` when its Site is not there (issue 30, "Exit codes"): a Site deleted while it waits for the
reporting credential, or never created, exits 69 (unavailable) saying so, with nothing written; it was 70 ("report
the problem")."""

from __future__ import annotations

import pathlib
import threading
from collections.abc import Callable

import pytest
from snoreloc_fleet.resource import site

from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc.cli import main
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import NS, SITES, Running, ready_site, wait_for


def _make(hub: HubSimulator, name: str, out: pathlib.Path, *extra: str) -> int:
    argv = ["fleet", "make-media", name, "-n", NS, "--kubeconfig", str(hub.kubeconfig_path), "--out-dir", str(out)]
    return main.main([*argv, *extra])


def test_a_site_deleted_while_make_media_waits_exits_69(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    running = start_controller()
    ready_site(admin, "store-1")
    running.stop()  # nobody issues the credential: make-media waits
    ref = kube.Ref(SITES, "store-1", NS)

    def delete_once_asked() -> None:
        wait_for("the request", lambda: site.MEDIA_REQUESTED in (admin.get(ref)["metadata"].get("annotations") or {}))
        admin.delete(ref)

    deleter = threading.Thread(target=delete_once_asked)
    deleter.start()
    try:
        code = _make(hub, "store-1", tmp_path / "stick", "--timeout", "30")
    finally:
        deleter.join(30)
    assert code == errors.ExitCode.UNAVAILABLE == 69
    err = capsys.readouterr().err
    assert "site store-1 in namespace fleet was deleted while make-media waited for its reporting credential" in err
    assert "nothing was written" in err
    assert not (tmp_path / "stick").exists()


def test_make_media_for_a_site_that_does_not_exist_exits_69(
    hub: HubSimulator, admin: kube.Client, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _make(hub, "store-404", tmp_path / "stick") == 69
    assert "site store-404 in namespace fleet does not exist" in capsys.readouterr().err
    assert not (tmp_path / "stick").exists()

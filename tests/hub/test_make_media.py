"""`snoreloc fleet make-media SITE`: the FAT image the technician's stick is made from, written by the agent's own
media maker with the site-config, its files and the reporting kubeconfig; nothing written for a Site that is not
ready (exit 75) or whose inputs changed since the controller checked them (exit 75)."""

from __future__ import annotations

import base64
import pathlib
import shutil
import threading
from collections.abc import Callable

import pytest
import yaml
from snoreloc_fleet.controller import operator
from snoreloc_fleet.resource import site

from snoreloc import errors
from snoreloc.adapters import command, kube
from snoreloc.cli import main
from snoreloc.siteconfig import medium
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import NS, SITES, Running, ready_site, site_config, site_object, stick_site, wait_for, wait_phase

needs_mtools = pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in ("mkfs.vfat", "mcopy", "mtype")), reason="needs dosfstools and mtools"
)


def _make(hub: HubSimulator, name: str, *output: str) -> int:
    return main.main(["fleet", "make-media", name, "-n", NS, "--kubeconfig", str(hub.kubeconfig_path), *output])


@needs_mtools
@pytest.mark.allow_subprocess
def test_the_fat_image_carries_the_site_config_and_the_reporting_kubeconfig(
    hub: HubSimulator, admin: kube.Client, controller: operator.Controller, tmp_path: pathlib.Path
) -> None:
    ready_site(admin, "store-1")
    image = tmp_path / "store-1.img"
    assert _make(hub, "store-1", "--fat", str(image)) == 0

    def read(name: str) -> str:
        return command.SubprocessRunner().run(["mtype", "-i", str(image), f"::/{name}"], timeout=60).stdout

    assert yaml.safe_load(read(medium.SITE_CONFIG_NAME))["metadata"]["name"] == "store-1"
    assert "auths" in read("pull-secret.json")
    kubeconfig = yaml.safe_load(read(medium.HUB_FILE))
    assert kubeconfig["contexts"][0]["context"]["namespace"] == NS


def test_nothing_is_written_for_a_site_not_ready_or_changed_since(
    hub: HubSimulator, admin: kube.Client, start_controller: Callable[..., Running], tmp_path: pathlib.Path
) -> None:
    start_controller(sweep=3600.0)  # no sweep during the test: the changed Secret stays unseen
    admin.create(SITES, site_object("store-9", site_config("store-9", domain="not a domain")))
    wait_phase(admin, "store-9", site.Phase.INVALID)
    assert _make(hub, "store-9", "--out-dir", str(tmp_path / "invalid")) == 75
    stick_site(admin, "store-1")  # its credential issued: make-media asks nothing, so nothing wakes the controller
    changed = base64.b64encode(b'{"auths": {"other:5000": {"auth": "b3RoZXI6cHc="}}}').decode()
    admin.patch(kube.Ref(kube.SECRETS, "pull-secret", NS), {"data": {".dockerconfigjson": changed}})
    assert _make(hub, "store-1", "--out-dir", str(tmp_path / "changed")) == 75  # seen at the next sweep
    assert not (tmp_path / "invalid").exists() and not (tmp_path / "changed").exists()


def test_make_media_asks_for_the_credential_and_gives_up_visibly_when_no_controller_issues_it(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    running = start_controller()
    ready_site(admin, "store-1")
    running.stop()  # nobody issues the credential now
    assert _make(hub, "store-1", "--out-dir", str(tmp_path / "stick"), "--timeout", "1") == 75
    err = capsys.readouterr().err
    assert "timed out after 1s waiting for the hub's controller to issue site store-1's reporting credential" in err
    assert "Is the hub's controller running" in err
    assert site.MEDIA_REQUESTED in admin.get(kube.Ref(SITES, "store-1", NS))["metadata"]["annotations"]
    assert not (tmp_path / "stick").exists()
    start_controller()  # the request stands: a controller that starts later issues it
    assert _make(hub, "store-1", "--out-dir", str(tmp_path / "stick")) == 0
    assert (tmp_path / "stick" / medium.HUB_FILE).exists()


def test_a_site_that_does_not_report_needs_no_credential(
    hub: HubSimulator, admin: kube.Client, controller: operator.Controller, tmp_path: pathlib.Path
) -> None:
    ready_site(admin, "store-2", report={"enabled": False})
    assert _make(hub, "store-2", "--out-dir", str(tmp_path / "stick")) == 0
    assert sorted(p.name for p in (tmp_path / "stick").iterdir()) == ["pull-secret.json", "site-config.yaml"]
    annotations = admin.get(kube.Ref(SITES, "store-2", NS))["metadata"].get("annotations") or {}
    assert site.MEDIA_REQUESTED not in annotations, "nothing asked for"
    assert admin.find(kube.Ref(kube.SECRETS, "store-2-report", NS)) is None


def test_the_out_dir_is_written_privately_and_never_through_a_planted_link(
    hub: HubSimulator, admin: kube.Client, controller: operator.Controller, tmp_path: pathlib.Path
) -> None:
    """The directory holds the site's reporting token: a link planted at a file's path is refused (exit 77, as the
    agent's own verbs refuse one) before anything is written; once it is gone every file is 0600, a file there
    before included."""
    ready_site(admin, "store-1")
    out, elsewhere = tmp_path / "stick", tmp_path / "elsewhere.txt"
    elsewhere.write_text("not the stick's\n")
    out.mkdir(mode=0o700)
    (out / medium.HUB_FILE).symlink_to(elsewhere)
    (out / medium.SITE_CONFIG_NAME).write_text("old\n")
    (out / medium.SITE_CONFIG_NAME).chmod(0o644)

    assert _make(hub, "store-1", "--out-dir", str(out)) == 77

    assert elsewhere.read_text() == "not the stick's\n", "the link was followed"
    assert (out / medium.SITE_CONFIG_NAME).read_text() == "old\n", "a refusal changes nothing"
    (out / medium.HUB_FILE).unlink()
    assert _make(hub, "store-1", "--out-dir", str(out)) == 0
    assert yaml.safe_load((out / medium.SITE_CONFIG_NAME).read_text())["metadata"]["name"] == "store-1"
    assert yaml.safe_load((out / medium.HUB_FILE).read_text())["contexts"][0]["context"]["namespace"] == NS
    written = [path for path in out.rglob("*") if path.is_file()]
    assert written and all(path.stat().st_mode & 0o777 == 0o600 for path in written)


# --- the Site is not there (issue 30, exit codes): 69 saying so, nothing written; it was 70 ------------------


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
        code = _make(hub, "store-1", "--out-dir", str(tmp_path / "stick"), "--timeout", "30")
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
    assert _make(hub, "store-404", "--out-dir", str(tmp_path / "stick")) == 69
    assert "site store-404 in namespace fleet does not exist" in capsys.readouterr().err
    assert not (tmp_path / "stick").exists()

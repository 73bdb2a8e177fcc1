"""`snoreloc make-media`: validated first, labelled images holding the site-config and its files, found by the real
discovery code on a loop device."""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
from collections.abc import Iterator, Sequence

import pytest

from snoreloc import errors
from snoreloc.adapters import blockdev, clock, command, fs
from snoreloc.cli import main
from snoreloc.factory import media
from snoreloc.siteconfig import discovery, medium

SITE_CONFIG = """\
apiVersion: snoreloc.io/v1alpha1
kind: SiteConfig
metadata: {name: store-042}
spec:
  domain: store042.example.com
  network: {file: net/network.yaml}
"""
NETWORK = "dns-resolver: {config: {server: [10.0.0.53]}}\n"
TOOLS = ("genisoimage", "isoinfo", "mkfs.vfat", "mcopy", "mdir", "mlabel")
needs_tools = pytest.mark.skipif(any(shutil.which(tool) is None for tool in TOOLS), reason=f"needs {', '.join(TOOLS)}")


@pytest.fixture
def site(tmp_path: pathlib.Path) -> pathlib.Path:
    (tmp_path / "net").mkdir()
    (tmp_path / "net/network.yaml").write_text(NETWORK)
    path = tmp_path / "my-site.yaml"
    path.write_text(SITE_CONFIG)
    return path


def _run(*argv: str) -> str:
    return command.SubprocessRunner().run(list(argv), timeout=60).stdout


def test_a_bad_site_config_writes_nothing(tmp_path: pathlib.Path, site: pathlib.Path) -> None:
    site.write_text(SITE_CONFIG.replace("store042.example.com", "Not A Domain"))
    with pytest.raises(errors.ConfigError, match="no medium written") as caught:
        media.write(command.FakeRunner(), site, iso=tmp_path / "x.iso", fat=tmp_path / "x.img")
    assert caught.value.problems and caught.value.exit_code == 65
    assert not (tmp_path / "x.iso").exists() and not (tmp_path / "x.img").exists()


def test_the_medium_carries_the_extra_manifests(site: pathlib.Path) -> None:
    (site.parent / "manifests").mkdir()
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\n"
    (site.parent / "manifests" / "10-a.yaml").write_text(cm)
    site.write_text(SITE_CONFIG + "  extraManifests: {directory: manifests}\n")
    contents = media.gather(site)
    assert contents["manifests/10-a.yaml"] == cm.encode()


def test_the_verb_needs_an_output(site: pathlib.Path) -> None:
    assert main.main(["make-media", str(site)]) == 64


@needs_tools
@pytest.mark.allow_subprocess
def test_images_carry_the_labels_and_the_files_at_their_paths(tmp_path: pathlib.Path, site: pathlib.Path) -> None:
    iso, fat = tmp_path / "site.iso", tmp_path / "site.img"
    assert main.main(["make-media", str(site), "--iso", str(iso), "--fat", str(fat)]) == 0
    assert "Volume id: relocation-config" in _run("isoinfo", "-d", "-i", str(iso))
    assert _run("isoinfo", "-f", "-J", "-i", str(iso)).split() == ["/net", "/site-config.yaml", "/net/network.yaml"]
    assert "RELOCCONFIG" in _run("mlabel", "-i", str(fat), "-s", "::")
    assert _run("mdir", "-i", str(fat), "-/", "-b", "::/").split() == [
        "::/net/",
        "::/site-config.yaml",
        "::/net/network.yaml",
    ]
    assert _run("mtype", "-i", str(fat), "::/site-config.yaml") == SITE_CONFIG


class HostRootRunner:
    """The real runner, with mount targets (host paths) placed under the test's host root."""

    def __init__(self, root: pathlib.Path) -> None:
        self.root = root
        self.real = command.SubprocessRunner()

    def run(
        self, argv: Sequence[str], *, input: str | None = None, timeout: float, check: bool = True
    ) -> command.Result:
        if argv[0] in {"mount", "umount"}:
            argv = [*argv[:-1], str(self.root) + argv[-1]]
        return self.real.run(argv, input=input, timeout=timeout, check=check)


@contextlib.contextmanager
def _loop(image: pathlib.Path) -> Iterator[str]:
    attached = command.SubprocessRunner().run(["losetup", "-f", "--show", "-r", str(image)], timeout=30, check=False)
    if not attached.ok:
        pytest.skip(f"loop devices are unavailable here: {attached.stderr.strip()}")
    device = attached.stdout.strip()
    try:
        yield device
    finally:
        command.SubprocessRunner().run(["losetup", "-d", device], timeout=30, check=False)


@needs_tools
@pytest.mark.allow_subprocess
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("losetup") is None, reason="loop devices need root")
@pytest.mark.parametrize("kind", ["iso", "fat"])
def test_discovery_finds_the_image_on_a_loop_device(tmp_path: pathlib.Path, site: pathlib.Path, kind: str) -> None:
    image = tmp_path / f"site.{kind}"
    media.write(command.SubprocessRunner(), site, **{kind: image, "iso" if kind == "fat" else "fat": None})
    root = tmp_path / "root"
    root.mkdir()
    host = fs.HostFS(root)
    runner = HostRootRunner(root)
    with _loop(image) as device:
        devices = blockdev.BlockDevices(runner, host)
        assert devices.find_by_label(discovery.LABELS) == device
        probe = runner.run(["mount", "-o", "ro", device, "/"], timeout=30, check=False)
        if not probe.ok:
            pytest.skip(f"this kernel cannot mount the image: {probe.stderr.strip()}")
        runner.run(["umount", "/"], timeout=30)
        found = discovery.discover(host, devices, clock.FakeClock())
    assert (found.source, found.device) == (discovery.Source.DEVICE, device)
    assert found.copied == ("site-config.yaml", "net/network.yaml")
    assert found.path.read_text() == SITE_CONFIG


@needs_tools
@pytest.mark.allow_subprocess
def test_the_fleet_hubs_reporting_kubeconfig_rides_along_outside_the_digest(
    tmp_path: pathlib.Path, site: pathlib.Path
) -> None:
    kubeconfig = tmp_path / "report.kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    fat = tmp_path / "site.img"
    assert main.main(["make-media", str(site), "--fat", str(fat), "--hub-report", str(kubeconfig)]) == 0
    assert _run("mtype", "-i", str(fat), f"::/{medium.HUB_FILE}") == "apiVersion: v1\nkind: Config\n"
    with_hub = {**media.gather(site), medium.HUB_FILE: kubeconfig.read_bytes()}
    assert medium.digest(with_hub) == medium.digest(media.gather(site)) == medium.digest_of(site)

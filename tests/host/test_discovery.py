from __future__ import annotations

import logging
import os
import pathlib
import shutil
import stat
import time
from collections.abc import Sequence

import pytest

from snoreloc import errors
from snoreloc.adapters import blockdev, clock, command, fs
from snoreloc.siteconfig import discovery

SITE_CONFIG = """\
apiVersion: snoreloc.io/v1alpha1
kind: SiteConfig
metadata: {name: store-042}
spec:
  domain: store042.example.com
  pullSecret: {file: secrets/pull-secret.json}
  network: {file: network.yaml}
"""
NETWORK = "dns-resolver: {config: {server: [10.0.0.53]}}\n"
PULL_SECRET = '{"auths": {"mirror:5000": {"auth": "dXNlcjpwYXNz"}}}'
UNSAFE = (
    SITE_CONFIG
    + """\
  registryCA:
    - {registry: "mirror:5000", certificate: {file: ../outside.pem}}
"""
)


class FakeStick:
    """A device whose contents appear in the mount point while mounted, and vanish on umount."""

    def __init__(self, host: fs.HostFS, files: dict[str, str]) -> None:
        self.host = host
        self.files = files
        self.mounted_at: str | None = None

    def mount(self, argv: Sequence[str], _input: str | None) -> command.Result:
        assert argv[1:3] == ["-o", "ro,nosuid,nodev,noexec"]
        target = self.host.path(argv[-1])
        assert stat.S_IMODE(target.stat().st_mode) == 0o700
        for name, text in self.files.items():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).write_text(text)
        self.mounted_at = argv[-1]
        return command.Result(0)

    def umount(self, argv: Sequence[str], _input: str | None) -> command.Result:
        assert argv[-1] == self.mounted_at
        target = self.host.path(argv[-1])
        for child in target.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        self.mounted_at = None
        return command.Result(0)


BLKID = "DEVNAME=/dev/sda1\nLABEL=boot\n\nDEVNAME=/dev/sr0\nLABEL={label}\n"


def _script(
    runner: command.FakeRunner, stick: FakeStick, *, blkid_misses: int = 0, label: str = "relocation-config"
) -> None:
    misses = [command.Result(2)] * blkid_misses
    runner.on(blockdev.BLKID_LABELS, *misses, command.Result(0, BLKID.format(label=label)))
    runner.on(["mount"], stick.mount)
    runner.on(["umount"], stick.umount)


def _stick(host: fs.HostFS) -> FakeStick:
    files = {
        "site-config.yaml": SITE_CONFIG,
        "secrets/pull-secret.json": PULL_SECRET,
        "network.yaml": NETWORK,
        "unreferenced.txt": "not copied",
    }
    return FakeStick(host, files)


def test_device_found_by_blkid_is_copied_into_the_state_dir(
    host: fs.HostFS, runner: command.FakeRunner, clk: clock.FakeClock
) -> None:
    stick = _stick(host)
    _script(runner, stick)
    found = discovery.discover(host, blockdev.BlockDevices(runner, host), clk)
    assert found.source is discovery.Source.DEVICE and found.device == "/dev/sr0"
    assert found.path == host.path("/var/lib/snoreloc/site-config/site-config.yaml")
    assert found.path.read_text() == SITE_CONFIG
    copy = host.path("/var/lib/snoreloc/site-config")
    assert sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file()) == [
        "network.yaml",
        "secrets/pull-secret.json",
        "site-config.yaml",
    ]
    assert found.skipped == ()
    for path in copy.rglob("*"):
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600)
    assert stat.S_IMODE(copy.stat().st_mode) == 0o700
    assert stick.mounted_at is None, "unmounted"
    assert os.listdir(host.path("/run/snoreloc")) == [], "mount point removed"


def test_udev_label_link_is_used_before_blkid(
    host: fs.HostFS, runner: command.FakeRunner, clk: clock.FakeClock
) -> None:
    host.write_text("/dev/disk/by-label/relocation-config", "")
    host.write_text("/dev/disk/by-label/boot", "")
    stick = _stick(host)
    runner.on(["mount"], stick.mount).on(["umount"], stick.umount)
    found = discovery.discover(host, blockdev.BlockDevices(runner, host), clk)
    assert found.device == "/dev/disk/by-label/relocation-config"
    assert not runner.ran("blkid")


def test_unmounts_even_when_the_device_has_no_site_config(
    host: fs.HostFS, runner: command.FakeRunner, clk: clock.FakeClock
) -> None:
    stick = FakeStick(host, {"README.txt": "hello"})
    _script(runner, stick)
    with pytest.raises(errors.ConfigError, match=r"no site-config.yaml.*README.txt"):
        discovery.discover(host, blockdev.BlockDevices(runner, host), clk)
    assert runner.ran("umount")
    assert stick.mounted_at is None


def test_waits_bounded_and_tells_the_console_what_to_insert(
    host: fs.HostFS, runner: command.FakeRunner, clk: clock.FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    runner.on(["blkid"], command.Result(2))
    messages: list[str] = []
    policy = discovery.WaitPolicy(timeout=300, poll=5, remind_every=60)
    with caplog.at_level(logging.INFO, logger="snoreloc.progress"), pytest.raises(errors.WaitTimeout) as caught:
        discovery.discover(host, blockdev.BlockDevices(runner, host), clk, policy=policy, progress=messages.append)
    assert caught.value.step == "discover" and "relocation-config or RELOCCONFIG" in caught.value.waited_for
    assert clk.monotonic() == 300
    assert messages == [discovery.INSERT_MESSAGE.format(minutes=5)]
    reports = [r.getMessage() for r in caplog.records if r.name == "snoreloc.progress"]
    assert len(reports) == 5 and all("of at most 5m 00s" in line for line in reports)
    assert "relocation-config" in caught.value.hint and "make-media" in caught.value.hint


def test_device_inserted_while_waiting_is_picked_up(
    host: fs.HostFS, runner: command.FakeRunner, clk: clock.FakeClock
) -> None:
    stick = _stick(host)
    _script(runner, stick, blkid_misses=3)
    found = discovery.discover(host, blockdev.BlockDevices(runner, host), clk, progress=lambda _m: None)
    assert found.device == "/dev/sr0"
    assert clk.monotonic() == 10, "looked at once, then at 0s and 5s of the wait"


def test_host_file_wins_over_a_device(host: fs.HostFS, runner: command.FakeRunner, clk: clock.FakeClock) -> None:
    host.write_text(discovery.HOST_FILE, SITE_CONFIG)
    found = discovery.discover(host, blockdev.BlockDevices(runner, host), clk)
    assert found.source is discovery.Source.HOST_FILE
    assert runner.calls == []


def test_explicit_path_wins_and_must_exist(
    host: fs.HostFS, runner: command.FakeRunner, clk: clock.FakeClock, tmp_path: pathlib.Path
) -> None:
    given = tmp_path / "site.yaml"
    given.write_text(SITE_CONFIG)
    found = discovery.discover(host, blockdev.BlockDevices(runner, host), clk, explicit=str(given))
    assert (found.source, found.path) == (discovery.Source.ARGUMENT, given)
    with pytest.raises(errors.UsageError):
        discovery.discover(host, blockdev.BlockDevices(runner, host), clk, explicit=str(tmp_path / "nope.yaml"))


def test_alias_bomb_does_not_explode_the_reference_walk() -> None:
    bomb = "a: &a [{file: x.pem}]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(20)
    )
    # the bounded loader refuses the bomb (the loader reports it with its line); the walk copies nothing
    started = time.perf_counter()
    assert discovery.references(bomb.encode()) == []
    assert time.perf_counter() - started < 10.0  # bounded by the node budget (shared, loaded machine)


def test_deep_nesting_does_not_crash_the_reference_walk() -> None:
    """Plain `yaml.safe_load` raised RecursionError here (exit 70); the bounded loader refuses it instead."""
    deep = "a: " + "[" * 10_000 + "]" * 10_000 + "\nb: {file: x.pem}\n"
    assert discovery.references(deep.encode()) == []


@pytest.mark.parametrize("label", ["RELOCCONFIG", "relocconfig", "Relocation-Config"])
def test_fat_label_and_any_case_are_found(
    host: fs.HostFS, runner: command.FakeRunner, clk: clock.FakeClock, label: str
) -> None:
    _script(runner, _stick(host), label=label)
    assert discovery.discover(host, blockdev.BlockDevices(runner, host), clk).device == "/dev/sr0"


def test_rerun_without_the_stick_uses_the_saved_copy_and_says_so(
    host: fs.HostFS, runner: command.FakeRunner, clk: clock.FakeClock
) -> None:
    _script(runner, _stick(host))
    first = discovery.discover(host, blockdev.BlockDevices(runner, host), clk)
    runner.on(blockdev.BLKID_LABELS, command.Result(0, "DEVNAME=/dev/sda1\nLABEL=boot\n"))
    messages: list[str] = []
    again = discovery.discover(host, blockdev.BlockDevices(runner, host), clk, progress=messages.append)
    assert (again.source, again.path) == (discovery.Source.SAVED, first.path)
    assert messages == [f"no site-config medium is present: using the copy saved by an earlier run, {first.path}"]
    assert clk.monotonic() == 0, "no wait when a saved copy exists"


def test_a_newer_stick_with_a_different_site_config_wins_and_says_so(
    host: fs.HostFS, runner: command.FakeRunner, clk: clock.FakeClock
) -> None:
    stick = _stick(host)
    _script(runner, stick)
    discovery.discover(host, blockdev.BlockDevices(runner, host), clk)
    stick.files["site-config.yaml"] = SITE_CONFIG.replace("store042", "store043")
    messages: list[str] = []
    found = discovery.discover(host, blockdev.BlockDevices(runner, host), clk, progress=messages.append)
    assert "store043" in found.path.read_text()
    assert messages == ["the site-config on /dev/sr0 differs from the saved copy: the medium's replaces it"]


def test_a_bad_stick_never_replaces_a_good_saved_copy(
    host: fs.HostFS, runner: command.FakeRunner, clk: clock.FakeClock
) -> None:
    stick = _stick(host)
    _script(runner, stick)
    good = discovery.discover(host, blockdev.BlockDevices(runner, host), clk).path
    stick.files["site-config.yaml"] = UNSAFE
    with pytest.raises(errors.ConfigError, match=r"not valid; the saved copy .* is kept") as caught:
        discovery.discover(host, blockdev.BlockDevices(runner, host), clk)
    assert caught.value.exit_code == 65 and caught.value.problems
    assert good.read_text() == SITE_CONFIG
    assert not host.exists(discovery.STAGING_DIR)


MANIFEST = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: site-info, namespace: default}\ndata: {region: north}\n"


def test_the_saved_copy_carries_the_extra_manifests_directory(
    host: fs.HostFS, runner: command.FakeRunner, clk: clock.FakeClock
) -> None:
    stick = _stick(host)
    stick.files["site-config.yaml"] = SITE_CONFIG + "  extraManifests: {directory: manifests}\n"
    stick.files["manifests/10-site.yaml"] = MANIFEST
    stick.files["manifests/README.txt"] = "not a manifest\n"
    _script(runner, stick)
    first = discovery.discover(host, blockdev.BlockDevices(runner, host), clk)
    assert "manifests/10-site.yaml" in first.copied
    assert (first.path.parent / "manifests" / "10-site.yaml").read_text() == MANIFEST
    assert not (first.path.parent / "manifests" / "README.txt").exists()
    runner.on(blockdev.BLKID_LABELS, command.Result(0, "DEVNAME=/dev/sda1\nLABEL=boot\n"))
    again = discovery.discover(host, blockdev.BlockDevices(runner, host), clk)
    assert again.source is discovery.Source.SAVED
    assert (again.path.parent / "manifests" / "10-site.yaml").read_text() == MANIFEST


def test_the_fleet_hubs_reporting_kubeconfig_is_copied_beside_the_site_config(
    host: fs.HostFS, runner: command.FakeRunner, clk: clock.FakeClock
) -> None:
    stick = _stick(host)
    stick.files[discovery.HUB_FILE] = "apiVersion: v1\nkind: Config\n"
    _script(runner, stick)
    found = discovery.discover(host, blockdev.BlockDevices(runner, host), clk)
    copied = found.path.parent / discovery.HUB_FILE
    assert copied.read_text() == "apiVersion: v1\nkind: Config\n"
    assert stat.S_IMODE(copied.stat().st_mode) == 0o600
    assert discovery.HUB_FILE in found.copied

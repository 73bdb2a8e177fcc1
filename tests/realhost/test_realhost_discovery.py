"""Discovery of the site-config from a real labelled image on a real loop device, with the real blkid and mount.

This kernel has no iso9660 or vfat module, so the images are mounted through FUSE (fuseiso, fusefat): `mount`
runs `/usr/sbin/mount.<type>` helpers, which exist only in the test's private mount namespace (an overlay over
/usr/sbin). That namespace also has its own /run and /var/lib, where discovery mounts and copies. Loop devices are
global, so the tests that attach one hold a lock: two images with the same label at once would race for `blkid -L`.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from realhost_sandbox import HERE, require

from snoreloc.adapters import command
from snoreloc.factory import media
from snoreloc.siteconfig import discovery

LOCK = Path("/tmp/snoreloc-realhost-loop.lock")
SITE_CONFIG = "apiVersion: snoreloc.io/v1alpha1\nkind: SiteConfig\nmetadata:\n  name: store-0413\nspec:\n"
SITE_CONFIG += "  domain: sno1.store-0413.example.com\n  registryCA:\n"
SITE_CONFIG += "    - registry: registry.store-0413.example.com:8443\n      certificate: {file: ca/registry.pem}\n"
CA = (Path(__file__).resolve().parents[2] / "examples/registry-ca.crt").read_text()  # a real certificate: validated
PRIVATE_NAMESPACE = r"""
set -eu
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /var/lib
mkdir -p /run/helpers/upper /run/helpers/work
printf '#!/bin/sh\nexec fuseiso "$1" "$2"\n' > /run/helpers/upper/mount.iso9660
printf '#!/bin/sh\nexec fusefat -o ro "$1" "$2"\n' > /run/helpers/upper/mount.vfat
chmod 755 /run/helpers/upper/mount.iso9660 /run/helpers/upper/mount.vfat
mount -t overlay overlay -o lowerdir=/usr/sbin,upperdir=/run/helpers/upper,workdir=/run/helpers/work /usr/sbin
exec "$@"
"""


def tree(root: Path, site_config: str = SITE_CONFIG) -> Path:
    (root / "ca").mkdir(parents=True)
    (root / "site-config.yaml").write_text(site_config)
    (root / "ca/registry.pem").write_text(CA)
    return root


def made_by_make_media(tmp_path: Path, kind: str) -> Path:
    """The image `snoreloc make-media --iso/--fat` writes (its product code, with the real genisoimage/mkfs.vfat)."""
    image = tmp_path / f"site.{kind}"
    if kind == "iso":
        require("genisoimage", "fuseiso")
        iso, fat = image, None
    else:
        require("mkfs.vfat", "mcopy", "fusefat")
        iso, fat = None, image
    media.write(command.SubprocessRunner(), tree(tmp_path / "source") / "site-config.yaml", iso=iso, fat=fat)
    return image


def fat_image(tmp_path: Path, label: str, site_config: str = SITE_CONFIG) -> Path:
    """A FAT image made by hand, for what make-media never writes (another label case, a bad site-config)."""
    require("mkfs.vfat", "mcopy", "fusefat")
    image = tmp_path / "site.img"
    subprocess.run(["mkfs.vfat", "-C", "-n", label, image, "4096"], check=True, capture_output=True)
    source = tree(tmp_path / "fat", site_config)
    subprocess.run(["mcopy", "-i", image, "-s", source / "site-config.yaml", source / "ca", "::"], check=True)
    return image


@contextmanager
def attached(image: Path) -> Iterator[str]:
    """`image` as a read-only loop device, detached afterwards; one at a time across test processes."""
    if not Path("/dev/loop-control").exists():
        pytest.skip("no loop devices (/dev/loop-control)")
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        device = subprocess.run(
            ["losetup", "--find", "--show", "--read-only", image], capture_output=True, text=True, check=True
        ).stdout.strip()
        try:
            yield device
        finally:
            subprocess.run(["losetup", "--detach", device], check=False)


def discover(*labels: str) -> dict[str, Any]:
    """Run the real discovery in a private mount and PID namespace (its FUSE daemons die with it).

    `labels`, when given, replace the labels discovery looks for.
    """
    if os.path.exists(discovery.HOST_FILE):
        pytest.skip(f"{discovery.HOST_FILE} exists on this machine and would win over any device")
    argv = ["unshare", "--mount", "--pid", "--fork", "--mount-proc", "sh", "-c", PRIVATE_NAMESPACE, "sh"]
    argv += [sys.executable, str(HERE / "agent.py"), "discover", *labels]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    try:
        verdict: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        pytest.fail(f"discovery printed no verdict (exit {done.returncode}): {done.stderr[-3000:]}")
    return verdict


@pytest.mark.allow_subprocess
@pytest.mark.parametrize("kind", ["iso", "fat"])
def test_image_made_by_make_media_is_found_and_copied(tmp_path: Path, kind: str) -> None:
    image = made_by_make_media(tmp_path, kind)

    with attached(image) as device:
        verdict = discover()

    assert verdict.get("source") == "device", verdict
    assert verdict["device"] == device
    assert verdict["files"] == {"site-config.yaml": SITE_CONFIG, "ca/registry.pem": CA}
    assert verdict["skipped"] == []


def test_fat_label_in_another_case_is_found(tmp_path: Path) -> None:
    """Labels match in any case: blkid reports a FAT label as written, and some tools write lower case."""
    image = fat_image(tmp_path, discovery.FAT_LABEL.lower())

    with attached(image) as device:
        verdict = discover()

    assert verdict.get("source") == "device", verdict
    assert verdict["device"] == device


def test_stick_with_an_invalid_site_config_is_refused_and_nothing_is_saved(tmp_path: Path) -> None:
    image = fat_image(tmp_path, discovery.FAT_LABEL, SITE_CONFIG.replace("registryCA", "registry"))

    with attached(image) as device:
        verdict = discover()

    assert verdict.get("exit") == 65, verdict
    assert verdict["message"].startswith(f"{device}: the site-config on the medium is not valid"), verdict
    assert verdict["saved"] == [], verdict

"""Block devices by filesystem label, and read-only mounts of them.

A technician hands the node its site-config on a USB stick or a virtual-media ISO with a known label. Labels are
matched without regard to case: FAT tools store labels in upper case, ISO9660 volume ids are upper case unless the
image has Joliet names. udev's `/dev/disk/by-label/` links are the cheap way to see a device; `blkid` (probing, not
its cache) is the fallback when the links are not visible (inside a container, or before udev settled). Mounting
goes through the command runner so that, when the agent runs in a container, the mount happens in the host's mount
namespace.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence

from snoreloc.adapters import command, fs

LOG = logging.getLogger(__name__)

BY_LABEL_DIR = "/dev/disk/by-label"
READ_ONLY_OPTIONS = "ro,nosuid,nodev,noexec"
COMMAND_TIMEOUT = 30.0
BLKID_LABELS = ["blkid", "-c", "/dev/null", "-s", "LABEL", "-o", "export"]


def parse_blkid(output: str) -> list[tuple[str, str]]:
    """(label, device) pairs from `blkid -o export` (blank-line separated KEY=value blocks)."""
    pairs = []
    for block in output.split("\n\n"):
        values = dict(line.partition("=")[::2] for line in block.splitlines() if "=" in line)
        if values.get("LABEL") and values.get("DEVNAME"):
            pairs.append((values["LABEL"], values["DEVNAME"]))
    return pairs


def _first(labels: Sequence[str], present: Sequence[tuple[str, str]]) -> str | None:
    for label in labels:
        for name, device in present:
            if name.casefold() == label.casefold():
                return device
    return None


class BlockDevices:
    """Finds devices by label and mounts them read-only."""

    def __init__(self, runner: command.Runner, host: fs.HostFS) -> None:
        self.runner = runner
        self.host = host

    def find_by_label(self, labels: Sequence[str]) -> str | None:
        """The device of the first label present (any case), trying udev links first, then `blkid`."""
        links = self.host.listdir(BY_LABEL_DIR) if self.host.is_dir(BY_LABEL_DIR) else []
        found = _first(labels, [(name, f"{BY_LABEL_DIR}/{name}") for name in sorted(links)])
        if found is not None:
            return found
        probed = self.runner.run(BLKID_LABELS, timeout=COMMAND_TIMEOUT, check=False)
        return _first(labels, parse_blkid(probed.stdout)) if probed.ok else None

    def mount_readonly(self, device: str, target: str) -> None:
        """Mount `device` on the host directory `target` (a host path) read-only, without devices or exec."""
        self.runner.run(["mount", "-o", READ_ONLY_OPTIONS, device, target], timeout=COMMAND_TIMEOUT)

    def unmount(self, target: str) -> None:
        self.runner.run(["umount", target], timeout=COMMAND_TIMEOUT)

    @contextlib.contextmanager
    def mounted(self, device: str, target: str) -> Iterator[None]:
        """Mounted for the duration of the block; unmounted afterwards, also when the block fails."""
        self.mount_readonly(device, target)
        try:
            yield
        except BaseException:
            self._unmount_quietly(target)
            raise
        self.unmount(target)

    def _unmount_quietly(self, target: str) -> None:
        """Unmount while another error propagates: a failure here is logged, never allowed to mask that error."""
        try:
            self.unmount(target)
        except Exception as exc:
            LOG.error("could not unmount %s: %s", target, exc)

"""Block devices by filesystem label, and read-only mounts of them.

A technician hands the node its site-config on a USB stick or a virtual-media ISO labelled `relocation-config`.
udev's `/dev/disk/by-label/` links are the cheap way to see it; `blkid -L` is the fallback when the links are not
visible (inside a container, or before udev settled). Mounting goes through the command runner so that, when the
agent runs in a container, the mount happens in the host's mount namespace.
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


class BlockDevices:
    """Finds devices by label and mounts them read-only."""

    def __init__(self, runner: command.Runner, host: fs.HostFS) -> None:
        self.runner = runner
        self.host = host

    def find_by_label(self, labels: Sequence[str]) -> str | None:
        """The device path of the first label present, trying udev links first, then `blkid -L`."""
        for label in labels:
            link = f"{BY_LABEL_DIR}/{label}"
            if self.host.exists(link):
                return link
        for label in labels:
            found = self.runner.run(["blkid", "-L", label], timeout=COMMAND_TIMEOUT, check=False)
            if found.ok and found.stdout.strip():
                return found.stdout.strip().splitlines()[0]
        return None

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

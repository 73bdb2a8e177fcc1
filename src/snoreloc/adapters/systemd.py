"""systemd, both ways: units we drive with `systemctl`, and the STATUS= line we report to our own unit.

`systemctl` goes through the command runner (so it reaches the host's systemd from a container too). Progress goes
to systemd with the sd_notify datagram protocol, written out here because it is a dozen lines and RHCOS offers no
python-systemd to us: read `NOTIFY_SOCKET`, do nothing when it is unset (interactive runs), send one datagram. A
leading `@` names a Linux abstract socket. The unit must say `NotifyAccess=` (a oneshot defaults to `none`, which
drops every message); `systemctl status snoreloc` then shows the line.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

from snoreloc import redact
from snoreloc.adapters import command

LOG = logging.getLogger(__name__)

SYSTEMCTL_TIMEOUT = 120.0


class Systemd:
    """A few `systemctl` verbs on the host."""

    def __init__(self, runner: command.Runner, *, timeout: float = SYSTEMCTL_TIMEOUT) -> None:
        self.runner = runner
        self.timeout = timeout

    def start(self, unit: str) -> None:
        """Start the unit and return once systemd has queued it (`--no-block`: we watch readiness ourselves)."""
        self.runner.run(["systemctl", "start", "--no-block", unit], timeout=self.timeout)

    def restart(self, unit: str) -> None:
        """Restart the unit and return once it has started again (its ExecStartPre= ran)."""
        self.runner.run(["systemctl", "restart", unit], timeout=self.timeout)

    def stop(self, unit: str) -> None:
        self.runner.run(["systemctl", "stop", unit], timeout=self.timeout)

    def enable(self, unit: str) -> None:
        self.runner.run(["systemctl", "enable", unit], timeout=self.timeout)

    def disable(self, unit: str) -> None:
        self.runner.run(["systemctl", "disable", unit], timeout=self.timeout)

    def is_active(self, unit: str) -> bool:
        return self.runner.run(["systemctl", "is-active", "--quiet", unit], timeout=self.timeout, check=False).ok

    def is_enabled(self, unit: str) -> bool:
        return self.runner.run(["systemctl", "is-enabled", "--quiet", unit], timeout=self.timeout, check=False).ok


def notify(state: str, *, environ: Mapping[str, str] | None = None) -> bool:
    """Send `state` (e.g. "STATUS=network: probing") to systemd; False when not under a notify socket or on error."""
    address = (environ if environ is not None else os.environ).get("NOTIFY_SOCKET", "")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto(redact.redact(state).encode("utf-8"), address)
    except OSError as exc:  # progress reporting must never fail the run
        LOG.debug("sd_notify failed: %s", exc)
        return False
    return True


def extend_timeout(seconds: float, *, environ: Mapping[str, str] | None = None) -> bool:
    """Ask systemd for `seconds` more before the unit's start timeout (TimeoutStartSec) may end the run, counted from
    now; to be repeated within that time while the wait lasts. systemd moves the start timer out to now + `seconds`
    when that is later (src/core/service.c `service_extend_event_source_timeout`, EXTEND_TIMEOUT_USEC since v236,
    sd_notify(3)); documented for Type=notify, it holds for our oneshot unit too (its start is ExecStart running:
    `tests/realhost/test_realhost_systemd.py` boots the unit under a real systemd with a 6 s TimeoutStartSec)."""
    return notify(f"EXTEND_TIMEOUT_USEC={max(int(seconds * 1_000_000), 0)}", environ=environ)


def status(text: str, *, environ: Mapping[str, str] | None = None) -> bool:
    """Set the one-line status `systemctl status snoreloc` shows."""
    return notify(f"STATUS={' '.join(text.split())}", environ=environ)

"""kubelet and the API at the edge: start it after the network is right, wait for the API, hand back at the end.

`seal` disables kubelet at the factory, so on the first boot at the site nothing of the cluster runs until the
agent has put the node on its site network: then the agent starts kubelet, and waits (bounded, with progress) for
the API behind the node-local kubeconfig. This is why the snoreloc unit must not be ordered before kubelet: the
agent itself starts kubelet and waits for it, which would deadlock behind its own start job.

At the very end the agent enables kubelet again (so later boots are ordinary) and removes the seal marker, which
disarms snoreloc.service (`ConditionPathExists=/etc/snoreloc/sealed`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from snoreloc import errors
from snoreloc.adapters import clock, fs, systemd

LOG = logging.getLogger(__name__)

KUBELET = "kubelet.service"
SEAL_MARKER = "/etc/snoreloc/sealed"
API_HINT = (
    "kubelet started but the API did not answer on the node-local kubeconfig. Look at `journalctl -u kubelet -b` "
    "and `crictl ps -a` (is kube-apiserver running?), then run `snoreloc run` again."
)

ApiReady = Callable[[], bool]
Progress = Callable[[str], None]


@dataclass(frozen=True)
class ApiWait:
    """How long to wait for the API, how often to ask, how often to say we are still waiting."""

    timeout: float = 1200.0
    poll: float = 5.0
    report_every: float = 60.0


def start_kubelet(units: systemd.Systemd, progress: Progress = LOG.info) -> bool:
    """Start kubelet unless it already runs; True when this call started it."""
    if units.is_active(KUBELET):
        progress("kubelet: already running")
        return False
    progress("kubelet: starting")
    units.start(KUBELET)
    return True


def wait_for_api(
    api_ready: ApiReady, clk: clock.Clock, *, policy: ApiWait = ApiWait(), progress: Progress = LOG.info
) -> float:
    """Poll `api_ready` until it says yes; returns the seconds waited, raises WaitTimeout when the bound is hit."""
    start = clk.monotonic()
    report_at = start + policy.report_every
    while not _ready(api_ready):
        now = clk.monotonic()
        if now - start >= policy.timeout:
            raise errors.WaitTimeout("kubelet", "the API on the node-local kubeconfig", policy.timeout, hint=API_HINT)
        if now >= report_at:
            progress(f"kubelet: waiting for the API ({now - start:.0f}s of at most {policy.timeout:.0f}s)")
            report_at = now + policy.report_every
        clk.sleep(min(policy.poll, policy.timeout - (now - start)))
    waited = clk.monotonic() - start
    progress(f"kubelet: the API answers (after {waited:.0f}s)")
    return waited


def _ready(api_ready: ApiReady) -> bool:
    try:
        return api_ready()
    except Exception as exc:  # a refused connection while kube-apiserver starts is the normal case here
        LOG.debug("API not ready: %s", exc)
        return False


def finish(units: systemd.Systemd, host: fs.HostFS) -> None:
    """Make later boots ordinary: kubelet enabled again, snoreloc.service disarmed."""
    units.enable(KUBELET)
    host.remove(SEAL_MARKER)

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

from snoreloc import waits
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


def start_kubelet(units: systemd.Systemd, progress: Progress = LOG.info) -> bool:
    """Start kubelet unless it already runs; True when this call started it."""
    if units.is_active(KUBELET):
        progress("kubelet: already running")
        return False
    progress("kubelet: starting")
    units.start(KUBELET)
    return True


def wait_for_api(api_ready: ApiReady, clk: clock.Clock, *, budget: float = 1200.0, poll: float = 5.0) -> float:
    """Poll `api_ready` until it says yes; returns the seconds waited, raises WaitTimeout when the budget is spent."""
    start = clk.monotonic()
    wait = waits.Wait("api", "the API on the node-local kubeconfig", budget, interval=poll, hint=API_HINT)
    waits.until(lambda: True if _ready(api_ready) else None, wait, clk)
    waited = clk.monotonic() - start
    waits.PROGRESS.info("api: the API answers (after %s)", waits.duration(waited))
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

"""The host systems the node steps act on, bundled so the engine builds them once (real adapters on a node, fakes
in tests and the demo)."""

from __future__ import annotations

from dataclasses import dataclass

from snoreloc.adapters import fs, nmstate, probe, systemd


@dataclass(frozen=True)
class HostServices:
    """Files under the host root, NetworkManager through nmstate, the network prober, systemd."""

    fs: fs.HostFS
    nmstate: nmstate.NmstateBackend
    prober: probe.Prober
    units: systemd.Systemd

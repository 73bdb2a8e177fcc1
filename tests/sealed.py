"""A node's root as `snoreloc seal` leaves it at the factory, for the node-flow tests (tests/node): the seal marker
naming the factory domain, and, where a test needs it, the internal address kept on br-ex."""

from __future__ import annotations

import json
from pathlib import Path

from snoreloc.adapters import fs
from snoreloc.host import kubelet

FACTORY_DOMAIN = "sno1.factory.example.com"


def sealed_root(tmp_path: Path, *, internal_ip: bool = False) -> fs.HostFS:
    host = fs.HostFS(tmp_path / "root")
    host.mkdir("/etc/snoreloc", 0o700)
    host.write_text(kubelet.SEAL_MARKER, json.dumps({"domain": FACTORY_DOMAIN}), mode=0o644)
    if internal_ip:
        host.write_text("/etc/snoreloc/config", "SNORELOC_INTERFACE=br-ex\nSNORELOC_INTERNAL_IPS=192.168.127.10/24\n")
    return host

"""A node's root as `snoreloc seal` leaves it at the factory, for the node-flow tests (tests/node): the seal marker
naming the factory domain, and, where a test needs it, the internal address kept on br-ex; and the request the
node flow is run with on that root against a simulated cluster."""

from __future__ import annotations

import json
from pathlib import Path

from snoreloc.adapters import fs
from snoreloc.engine import node, paths, runner
from snoreloc.host import kubelet
from snoreloc.steps import context

FACTORY_DOMAIN = "sno1.factory.example.com"


def sealed_root(tmp_path: Path, *, internal_ip: bool = False) -> fs.HostFS:
    host = fs.HostFS(tmp_path / "root")
    host.mkdir("/etc/snoreloc", 0o700)
    host.write_text(kubelet.SEAL_MARKER, json.dumps({"domain": FACTORY_DOMAIN}), mode=0o644)
    if internal_ip:
        host.write_text("/etc/snoreloc/config", "SNORELOC_INTERFACE=br-ex\nSNORELOC_INTERNAL_IPS=192.168.127.10/24\n")
    return host


def node_request(root: fs.HostFS, router_address: str) -> node.NodeRequest:
    """The node flow's request on `root`, its ingress checks aimed at the simulated cluster's router."""
    return node.NodeRequest(
        paths=paths.Paths.under(root.path("/")),
        options=runner.Options(),
        settings=context.Settings(ingress_endpoint=router_address, poll_interval=5.0),
        page_host="127.0.0.1",
        page_port=0,
    )

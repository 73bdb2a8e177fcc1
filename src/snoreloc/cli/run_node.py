"""`snoreloc run` on the node (without --cluster-only): the whole flow the systemd unit starts at the site.

Discovery, validation, network, kubelet, the API wait and the cluster steps run in one journal; see
`snoreloc.engine.node`. This module only turns arguments into that request and the real host services.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from snoreloc.cli import common

if TYPE_CHECKING:
    from snoreloc.engine import runner


def _echo(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def execute(args: argparse.Namespace) -> runner.Result:
    """Run the node flow; returns the runner's result (the caller picks the exit code)."""
    from snoreloc.engine import node  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

    clock = common.make_clock(args)
    req = node.NodeRequest(
        paths=common.make_paths(args),
        site_config=args.site_config,
        options=common.make_options(args, dry_run=args.dry_run),
        settings=common.make_settings(args),
    )
    svc = node.host_services(args.root, lambda: common.make_client(args, clock), clock, _echo)
    try:
        result = node.relocate(req, svc)
        sys.stdout.write(node.summary(req))
        return result
    finally:
        node.linger(svc.pages)  # the progress page shows the outcome for its keep time


def plan(args: argparse.Namespace) -> list[Any]:
    """The node's plans (site-config, network per interface, kubelet), then the cluster's when its API is up."""
    from snoreloc.engine import node, pipeline  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)
    from snoreloc.steps import base  # noqa: PLC0415 (lazy, as above)

    clock = common.make_clock(args)
    req = node.NodeRequest(paths=common.make_paths(args), site_config=args.site_config)
    svc = node.host_services(args.root, lambda: common.make_client(args, clock), clock, _echo)
    found = node.plan_node(req, svc)
    if not found.kubelet_running:
        note = "the API is down until kubelet starts: run `snoreloc plan` again after the network and kubelet steps"
        return [*found.plans, base.Plan("cluster", notes=(note,))]
    args.site_config = found.site_config
    client = common.make_client(args, clock)
    try:
        result = pipeline.execute(common.make_request(args, dry_run=True), client, clock)
    finally:
        client.close()
    return [*found.plans, *result.plans]

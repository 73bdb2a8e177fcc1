"""`snoreloc run` on the node (without --cluster-only): the whole flow the systemd unit starts at the site.

Discovery, validation, network, kubelet, the API wait and the cluster steps run in one journal; see
`snoreloc.engine.node`. This module only turns arguments into that request and the real host services.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from snoreloc.cli import run as run_cmd


def _echo(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def execute(args: argparse.Namespace) -> Any:
    """Run the node flow; returns the runner's result (the caller prints the report and picks the exit code)."""
    from snoreloc.engine import node, runner  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)
    from snoreloc.steps import context  # noqa: PLC0415 (lazy, as above)

    clock = run_cmd.make_clock(args)
    settings = context.Settings(
        ingress_endpoint=args.ingress_endpoint,
        route_workers=args.route_workers,
        poll_interval=args.poll_interval,
        ignore_preflight=args.ignore_preflight,
    )
    options = runner.Options(force=args.force, step=args.step, start_from=args.start_from, dry_run=args.dry_run)
    req = node.NodeRequest(
        paths=run_cmd.make_paths(args), site_config=args.site_config, options=options, settings=settings
    )
    svc = node.host_services(args.root, lambda: run_cmd.make_client(args, clock), clock, _echo)
    try:
        result = node.relocate(req, svc)
        sys.stdout.write(node.summary(req))
        return result
    finally:
        node.linger(svc.pages)  # the progress page shows the outcome for its keep time

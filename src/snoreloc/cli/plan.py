"""`snoreloc plan`: what `run` would change, object by object, with every secret masked. Changes nothing.

On the node (without --cluster-only) the node comes first: where the site-config was found, the network change per
interface, whether kubelet would be started; then the cluster's plan when its API is up.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from snoreloc import redact
from snoreloc.cli import common

HELP = "show what `run` would change (per-object diffs, secrets masked); changes nothing"
OUTPUTS: tuple[str, ...] = ()  # writes nothing (stdout only)
INPUTS: tuple[str, ...] = ()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_run(parser)


def _cluster_plans(args: argparse.Namespace) -> list[Any]:
    from snoreloc.engine import pipeline  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

    req = common.make_request(args, dry_run=True)
    clock = common.make_clock(args)
    client = common.make_client(args, clock)
    try:
        return list(pipeline.execute(req, client, clock).plans)
    finally:
        client.close()


def _node_plans(args: argparse.Namespace) -> list[Any]:
    from snoreloc.cli import run_node  # noqa: PLC0415 (lazy: keeps the node adapters off `--help`)

    return run_node.plan(args)


def run(args: argparse.Namespace) -> int:
    from snoreloc.engine import plan  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

    plans = _cluster_plans(args) if args.cluster_only else _node_plans(args)
    if args.output == "json":
        sys.stdout.write(redact.redact(json.dumps(plan.as_json(plans), indent=2)) + "\n")
    else:
        sys.stdout.write(plan.render(plans))
    return 0

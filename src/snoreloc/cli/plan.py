"""`snoreloc plan`: what `run` would change, object by object, with every secret masked. Changes nothing.

On the node (without --cluster-only) the node comes first: where the site-config was found, the network change per
interface, whether kubelet would be started; then the cluster's plan when its API is up.
"""

from __future__ import annotations

import argparse

from snoreloc.cli import run as run_cmd

HELP = "show what `run` would change (per-object diffs, secrets masked); changes nothing"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    run_cmd.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    if args.cluster_only:
        return run_cmd.execute(args, dry_run=True)
    from snoreloc.cli import run_node  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

    run_cmd.print_plans(args, run_node.plan(args))
    return 0

"""`snoreloc plan`: what `run` would change, object by object, with every secret masked. Changes nothing."""

from __future__ import annotations

import argparse
import json
import sys

from snoreloc.cli import common

HELP = "show what `run` would change (per-object diffs, secrets masked); changes nothing"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_run(parser)


def run(args: argparse.Namespace) -> int:
    from snoreloc.engine import pipeline, plan  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

    req = common.make_request(args, dry_run=True)
    clock = common.make_clock(args)
    client = common.make_client(args, clock)
    try:
        result = pipeline.execute(req, client, clock)
    finally:
        client.close()
    if args.output == "json":
        sys.stdout.write(json.dumps(plan.as_json(result.plans), indent=2) + "\n")
    else:
        sys.stdout.write(plan.render(result.plans))
    return 0

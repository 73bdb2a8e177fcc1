"""`snoreloc plan`: what `run` would change, object by object, with every secret masked. Changes nothing."""

from __future__ import annotations

import argparse

from snoreloc.cli import run as run_cmd

HELP = "show what `run` would change (per-object diffs, secrets masked); changes nothing"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    run_cmd.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    return run_cmd.execute(args, dry_run=True)

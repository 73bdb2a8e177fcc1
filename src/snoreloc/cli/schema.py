"""`snoreloc schema`: print the site-config JSON Schema, for editors and for fleet tooling that writes configs."""

from __future__ import annotations

import argparse
import sys

from snoreloc.siteconfig import schema

HELP = "print the site-config JSON Schema (Draft 2020-12)"
OUTPUTS: tuple[str, ...] = ()  # writes nothing (stdout only)
INPUTS: tuple[str, ...] = ()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options: the schema goes to stdout."""


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(schema.dumps())
    return 0

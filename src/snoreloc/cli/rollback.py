"""`snoreloc rollback`: put back every object snoreloc changed, exactly as it was before its first change."""

from __future__ import annotations

import argparse
import json
import sys

from snoreloc.cli import common

HELP = "restore every object snoreloc changed to its original, and delete what it created"
OUTPUTS: tuple[str, ...] = ()  # writes only the state directory under --root, through safefile
INPUTS: tuple[str, ...] = ()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_cluster(parser)


def run(args: argparse.Namespace) -> int:
    from snoreloc.engine import pipeline  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

    clock = common.make_clock(args)
    client = common.make_client(args, clock)
    try:
        result = pipeline.rollback(common.make_paths(args), client, clock)
    finally:
        client.close()
    doc = {"restored": result.restored, "deleted": result.deleted, "recreated": result.recreated}
    if args.output == "json":
        gone = [str(ref) for ref in result.namespaces]  # waited for: deleted namespaces that are gone now
        sys.stdout.write(json.dumps({**doc, "gone": gone}, indent=2) + "\n")
    else:
        for what, items in doc.items():
            sys.stdout.writelines(f"{what}: {item}\n" for item in items)
        sys.stdout.writelines(f"gone: {ref} (its content removed by the cluster)\n" for ref in result.namespaces)
        sys.stdout.write(f"rolled back {sum(len(v) for v in doc.values())} object(s)\n")
    return 0

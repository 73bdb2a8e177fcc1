"""`snoreloc rollback`: put back every object snoreloc changed, exactly as it was before its first change, and the
node's files the host steps changed (the DNS overrides, restarting dnsmasq) when this is the node that ran them."""

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
    from snoreloc.engine import node, pipeline  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

    clock = common.make_clock(args)
    client = common.make_client(args, clock)
    try:
        result = pipeline.rollback(common.make_paths(args), client, clock)
    finally:
        client.close()
    doc: dict[str, tuple[str, ...]] = {
        "restored": result.restored,
        "deleted": result.deleted,
        "recreated": result.recreated,
    }
    paths_ = common.make_paths(args)
    if (paths_.state_dir / "host-backups").is_dir():  # only the node that ran the host steps has any
        host = node.host_services(args.root, lambda: client, clock, lambda _line: None).host
        doc["host"] = tuple(node.rollback_host(paths_, host))
    if args.output == "json":
        gone = [str(ref) for ref in result.namespaces]  # waited for: deleted namespaces that are gone now
        sys.stdout.write(json.dumps({**doc, "gone": gone}, indent=2) + "\n")
    else:
        for what, items in doc.items():
            sys.stdout.writelines(f"{what}: {item}\n" for item in items)
        sys.stdout.writelines(f"gone: {ref} (its content removed by the cluster)\n" for ref in result.namespaces)
        sys.stdout.write(f"rolled back {sum(len(v) for v in doc.values())} object(s)\n")
    return 0

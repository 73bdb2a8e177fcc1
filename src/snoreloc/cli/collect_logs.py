"""`snoreloc collect-logs`: one tarball a technician can send, with everything needed for triage and no secret.

What goes in, and how secrets are kept out, is `snoreloc.engine.bundle`; this verb only parses and prints the path.
"""

from __future__ import annotations

import argparse
import pathlib
import socket
import time

from snoreloc.cli import common

HELP = (
    "write a tarball of status, report, route table, logs, journals, network states, the node's DNS files, a read of "
    "the cluster and its configuration and the redacted site-config for triage, with a MANIFEST of what is in it and "
    "what could not be read"
)
OUTPUTS = ("output",)  # argument names of the files this verb writes (checked before it runs: cli.main)
INPUTS = ("kubeconfig",)  # argument names of the files it reads, which no output may be


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_state(parser)
    parser.add_argument("--output", help="tarball to write (default: ./snoreloc-logs-<host>-<time>.tar.gz)")
    parser.add_argument(
        "--kubeconfig",
        default=common.DEFAULT_KUBECONFIG,
        help="read ClusterOperators, the master pool, the Node, CSRs, the cluster's configuration and recent Events "
        "through this kubeconfig (default: the node-local one; an empty value skips the cluster)",
    )


def run(args: argparse.Namespace) -> int:
    from snoreloc.adapters import command  # noqa: PLC0415 (kept off the import path of other commands)
    from snoreloc.engine import bundle  # noqa: PLC0415 (as above)

    state = common.make_paths(args).state_dir
    output = pathlib.Path(
        args.output or f"snoreloc-logs-{socket.gethostname()}-{time.strftime('%Y%m%dT%H%M%S')}.tar.gz"
    )
    runner = command.SubprocessRunner(enter_host=command.in_container())
    inputs = [state / name for name in ("status.json", "report.json", "snoreloc.log")]
    cluster = None
    if args.kubeconfig:
        from snoreloc.engine import cluster_read  # noqa: PLC0415 (as above)

        connect = cluster_read.connector(args.kubeconfig, common.make_clock(args))
        cluster = lambda: cluster_read.read(connect)  # noqa: E731 (read when the bundle asks for it)
    members = bundle.collect(state, runner, root=pathlib.Path(args.root), cluster=cluster)
    bundle.write_tarball(output, members, inputs=inputs)
    print(output)
    return 0

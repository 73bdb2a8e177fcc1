"""`snoreloc collect-logs`: one tarball a technician can send, with everything needed for triage and no secret.

What goes in, and how secrets are kept out, is `snoreloc.engine.bundle`; this verb only parses and prints the path.
"""

from __future__ import annotations

import argparse
import pathlib
import socket
import time

from snoreloc.cli import common

HELP = "write a tarball of status, report, logs, journal excerpts and the redacted site-config for triage"
OUTPUTS = ("output",)  # argument names of the files this verb writes (checked before it runs: cli.main)
INPUTS: tuple[str, ...] = ()  # argument names of the files it reads, which no output may be


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_state(parser)
    parser.add_argument("--output", help="tarball to write (default: ./snoreloc-logs-<host>-<time>.tar.gz)")


def run(args: argparse.Namespace) -> int:
    from snoreloc.adapters import command  # noqa: PLC0415 (kept off the import path of other commands)
    from snoreloc.engine import bundle  # noqa: PLC0415 (as above)

    state = common.make_paths(args).state_dir
    output = pathlib.Path(
        args.output or f"snoreloc-logs-{socket.gethostname()}-{time.strftime('%Y%m%dT%H%M%S')}.tar.gz"
    )
    runner = command.SubprocessRunner(enter_host=command.in_container())
    inputs = [state / name for name in ("status.json", "report.json", "snoreloc.log")]
    bundle.write_tarball(output, bundle.collect(state, runner, root=pathlib.Path(args.root)), inputs=inputs)
    print(output)
    return 0

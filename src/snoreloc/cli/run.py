"""`snoreloc run`: relocate the cluster (with `--cluster-only`, the cluster steps against any reachable cluster).

Arguments become an engine request; the engine does the work. stdout gets the report (text or JSON), stderr the
progress lines. Without `--cluster-only` the whole node flow runs (`cli.run_node`); with `--dry-run` this is
`snoreloc plan`. The kubernetes client is imported only once the command runs, so `--help` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from snoreloc.cli import common
from snoreloc.cli import plan as plan_cmd

HELP = "relocate the cluster to the site described by the site-config (resumes where a previous run stopped)"
OUTPUTS: tuple[str, ...] = ()  # writes only the state directory and host files under --root, through safefile
INPUTS: tuple[str, ...] = ()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_run(parser)


def progress(step: str, what: str) -> None:
    """A step's progress line on stderr (journald under systemd)."""
    sys.stderr.write(f"{step}: {what}\n")
    sys.stderr.flush()


def _print_report(args: argparse.Namespace, report_path: Path) -> None:
    from snoreloc.engine import report  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

    rep = report.read(report_path)
    if rep is None:
        return
    sys.stdout.write(json.dumps(rep, indent=2) + "\n" if args.output == "json" else report.render(rep))


def _cluster_only(args: argparse.Namespace) -> int:
    from snoreloc import logs  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)
    from snoreloc.engine import pipeline  # noqa: PLC0415 (lazy, as above)

    req = common.make_request(args, dry_run=False)
    clock = common.make_clock(args)
    client = common.make_client(args, clock)
    req.paths.ensure()
    try:
        with logs.file_log(req.paths.log):
            result = pipeline.execute(req, client, clock, progress=progress)
    finally:
        client.close()
    _print_report(args, req.paths.report)
    return common.exit_code(result.state)


def run(args: argparse.Namespace) -> int:
    if args.dry_run:
        return plan_cmd.run(args)
    if not args.cluster_only:  # `run` on the node: the whole flow
        from snoreloc.cli import run_node  # noqa: PLC0415 (lazy: keeps the node adapters off `--help`)

        return common.exit_code(run_node.execute(args).state)
    return _cluster_only(args)

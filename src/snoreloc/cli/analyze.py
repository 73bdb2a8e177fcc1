"""`snoreloc analyze`: where the time went, step by step, from status.json (cloud-init's `analyze` is the model)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from snoreloc import safefile
from snoreloc.cli import common

if TYPE_CHECKING:
    from snoreloc.engine import journal

HELP = "per-step timings of the last run, from status.json"
OUTPUTS = ("svg",)  # argument names of the files this verb writes (checked before it runs: cli.main)
INPUTS: tuple[str, ...] = ()  # argument names of the files it reads, which no output may be


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_state(parser)
    common.add_output(parser)
    parser.add_argument("--svg", metavar="FILE", help="also draw the run's timeline (steps, rollouts, waits) as SVG")


def write_svg(doc: journal.Document, path: str, status: Path) -> None:
    """The timeline picture to `path` (0600, never over status.json, the verb's input)."""
    from snoreloc.engine import timeline, view  # noqa: PLC0415 (lazy: only this option draws)

    picture = timeline.svg(view.timeline_of(view.facts(doc)))
    safefile.write(path, picture, inputs=[status], shared_dir=safefile.NAMED_OUTPUT)


def _critical_chain(doc: journal.Document) -> list[str]:
    from snoreloc.engine import view  # noqa: PLC0415 (lazy, as above)

    return view.timeline_of(view.facts(doc)).critical_chain


def run(args: argparse.Namespace) -> int:
    from snoreloc.engine import journal  # noqa: PLC0415 (lazy: `--help` builds this parser too)

    status = common.make_paths(args).status
    doc = journal.read(status)
    if args.svg:
        write_svg(doc, args.svg, status)
    rows = journal.timings(doc)
    total = sum(row.seconds or 0.0 for row in rows)
    chain = _critical_chain(doc)
    if args.output == "json":
        out = {"steps": [row.as_json() for row in rows], "total_seconds": round(total, 3), "critical_chain": chain}
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return 0
    sys.stdout.write(f"{'step':16} {'state':10} {'seconds':>9}  share\n")
    for row in rows:
        seconds = row.seconds or 0.0
        share = f"{100 * seconds / total:5.1f}%" if total else "    -"
        sys.stdout.write(f"{row.step:16} {row.state.value:10} {seconds:9.2f}  {share}\n")
    sys.stdout.write(f"{'total':27} {total:9.2f}\n")
    if chain:
        sys.stdout.write(f"the run waited for: {' -> '.join(chain)} (the critical chain; --svg draws it)\n")
    return 0

"""`snoreloc analyze`: where the time went, step by step, from status.json (cloud-init's `analyze` is the model).

The journal keeps the last runs (`journal.MAX_HISTORY`); `analyze` shows the last one that ran a step, so neither a
re-run that found nothing to do nor a rollback (which forgets every step) hides the relocation, unless `--run N`
asks for another (`view.pick_run`); the runs after the one shown are named below its headline."""

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

HELP = "per-step timings of the last run that ran a step (or of --run N), from status.json"
OUTPUTS = ("svg",)  # argument names of the files this verb writes (checked before it runs: cli.main)
INPUTS: tuple[str, ...] = ()  # argument names of the files it reads, which no output may be


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_state(parser)
    common.add_output(parser)
    parser.add_argument("--svg", metavar="FILE", help="also draw the run's timeline (steps, rollouts, waits) as SVG")
    parser.add_argument(
        "--run",
        type=int,
        metavar="N",
        help="the run to show: 1 is the oldest kept, -1 the latest (default: the last run that did work)",
    )


def write_svg(doc: journal.Document, path: str, status: Path) -> None:
    """The timeline picture to `path` (0600, never over status.json, the verb's input)."""
    from snoreloc.engine import timeline, view  # noqa: PLC0415 (lazy: only this option draws)

    picture = timeline.svg(view.timeline_of(view.facts(doc)))
    safefile.write(path, picture, inputs=[status], shared_dir=safefile.NAMED_OUTPUT)


def _critical_chain(doc: journal.Document) -> list[str]:
    from snoreloc.engine import view  # noqa: PLC0415 (lazy, as above)

    return view.timeline_of(view.facts(doc)).critical_chain


def _about(doc: journal.Document) -> dict[str, str]:
    started = doc.run.started if doc.run else None
    return {
        "state": doc.state.value,
        "mode": doc.run.mode if doc.run else "",
        "started": started.isoformat(timespec="seconds") if started else "",
    }


def _later(whole: journal.Document, number: int) -> list[str]:
    """A line for each run after the one shown (a rollback, a re-run that changed nothing), so none is missed."""
    lines = []
    for later, doc in enumerate(whole.runs()[number:], start=number + 1):
        about = _about(doc)
        lines.append(
            f"run {later} ({about['mode'] or 'run'}, {about['state']}) came after it: --run {later} shows it\n"
        )
    return lines


def run(args: argparse.Namespace) -> int:
    from snoreloc.engine import journal, view  # noqa: PLC0415 (lazy: `--help` builds this parser too)

    status = common.make_paths(args).status
    whole = journal.read(status)
    number, doc = view.pick_run(whole, args.run)
    if args.svg:
        write_svg(doc, args.svg, status)
    rows = journal.timings(doc)
    total = sum(row.seconds or 0.0 for row in rows)
    chain = _critical_chain(doc)
    if args.output == "json":
        out = {
            "run": {"number": number, "of": len(whole.runs()), **_about(doc)},
            "steps": [row.as_json() for row in rows],
            "total_seconds": round(total, 3),
            "critical_chain": chain,
        }
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return 0
    about = _about(doc)
    sys.stdout.write(f"run {number} of {len(whole.runs())}: {about['mode'] or 'run'}, {about['state']}, started ")
    sys.stdout.write(f"{about['started'] or 'unknown'} (--run N shows another)\n")
    sys.stdout.write("".join(_later(whole, number)))
    sys.stdout.write(f"{'step':16} {'state':10} {'seconds':>9}  share\n")
    for row in rows:
        seconds = row.seconds or 0.0
        share = f"{100 * seconds / total:5.1f}%" if total else "    -"
        sys.stdout.write(f"{row.step:16} {row.state.value:10} {seconds:9.2f}  {share}\n")
    sys.stdout.write(f"{'total':27} {total:9.2f}\n")
    if chain:
        sys.stdout.write(f"the run waited for: {' -> '.join(chain)} (the critical chain; --svg draws it)\n")
    return 0

"""`snoreloc analyze`: where the time went, step by step, from status.json (cloud-init's `analyze` is the model)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from snoreloc.cli import status

HELP = "per-step timings of the last run, from status.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", default="/", help="host root prefix (default /)")
    parser.add_argument("--state-dir", help="state directory (default ROOT/var/lib/snoreloc)")
    parser.add_argument("--output", choices=("text", "json"), default="text", help="stdout format")
    parser.add_argument("--svg", metavar="FILE", help="also draw the run's timeline (steps, rollouts, waits) as SVG")


def timings(doc: dict[str, Any]) -> list[dict[str, Any]]:
    steps = doc.get("steps", {})
    return [
        {
            "step": name,
            "state": steps.get(name, {}).get("state", "pending"),
            "started": steps.get(name, {}).get("started"),
            "seconds": steps.get(name, {}).get("duration"),
            "skipped": steps.get(name, {}).get("skipped"),
        }
        for name in doc.get("order") or list(steps)
    ]


def write_svg(doc: dict[str, Any], path: str) -> None:
    from snoreloc.engine import timeline, view  # noqa: PLC0415 (lazy: only this option draws)

    with open(path, "w", encoding="utf-8") as handle:
        handle.write(timeline.svg(view.timeline_of(view.facts(doc))))


def run(args: argparse.Namespace) -> int:
    doc, _state = status._read(args)
    if args.svg:
        write_svg(doc, args.svg)
    rows = timings(doc)
    total = sum(r["seconds"] or 0 for r in rows)
    if args.output == "json":
        sys.stdout.write(json.dumps({"steps": rows, "total_seconds": round(total, 3)}, indent=2) + "\n")
        return 0
    sys.stdout.write(f"{'step':16} {'state':10} {'seconds':>9}  share\n")
    for row in rows:
        seconds = row["seconds"] or 0.0
        share = f"{100 * seconds / total:5.1f}%" if total else "    -"
        sys.stdout.write(f"{row['step']:16} {row['state']:10} {seconds:9.2f}  {share}\n")
    sys.stdout.write(f"{'total':27} {total:9.2f}\n")
    return 0

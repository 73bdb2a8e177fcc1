"""`snoreloc status`: the relocation's state from status.json, for people and for scripts.

Exit codes: 0 done, 1 failed (or cut off), 2 done with warnings, 3 still running. `--wait` blocks (bounded)
until the run is no longer running.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from snoreloc.cli import run as run_cmd

HELP = "show the relocation's progress (exit 0 done, 1 failed, 2 done with warnings, 3 running)"

_EXIT = {"done": 0, "failed": 1, "done-with-warnings": 2, "running": 3}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", default="/", help="host root prefix (default /)")
    parser.add_argument("--state-dir", help="state directory (default ROOT/var/lib/snoreloc)")
    parser.add_argument("--wait", action="store_true", help="wait until the run is no longer running")
    parser.add_argument("--timeout", type=float, default=7200.0, help="longest --wait, in seconds")
    parser.add_argument("--long", action="store_true", help="every step, its timing, and errors with hints")
    parser.add_argument("--output", choices=("text", "json"), default="text", help="stdout format")


def effective_state(doc: dict[str, Any], lock_held: bool) -> str:
    state = str(doc.get("state", "new"))
    if state == "running" and not lock_held:
        return "interrupted"
    return state


def _read(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    from snoreloc.engine import journal, lock  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

    paths = run_cmd.make_paths(args)
    doc = journal.read(paths.status)
    return doc, effective_state(doc, lock.held(paths.lock))


def _guide(doc: dict[str, Any], state: str, args: argparse.Namespace) -> dict[str, str]:
    """What the technician should do now, and where the progress page is (while it serves)."""
    from snoreloc.engine import view  # noqa: PLC0415 (lazy, as above)

    return {"now": view.todo_of(view.facts(doc), state), "page": view.page_address(run_cmd.make_paths(args).state_dir)}


def _render(doc: dict[str, Any], state: str, long: bool, guide: dict[str, str] | None = None) -> str:
    lines = [f"status: {state}"] + [f"{key}: {value}" for key, value in (guide or {}).items() if value]
    steps = doc.get("steps", {})
    for name in doc.get("order") or list(steps):
        record = steps.get(name, {})
        if not long and record.get("state") in ("done", None):
            continue
        took = f" {record['duration']:.1f}s" if isinstance(record.get("duration"), int | float) else ""
        lines.append(f"  {name}: {record.get('state', 'pending')}{took}")
        error = record.get("error") or {}
        if error:
            lines.append(f"    error: {error.get('message')}")
            lines.append(f"    hint: {error.get('hint')}")
        if long:
            lines += [f"    warning: {w}" for w in record.get("warnings") or []]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    doc, state = _read(args)
    deadline = time.monotonic() + args.timeout
    while args.wait and state == "running" and time.monotonic() < deadline:
        time.sleep(0.5)
        doc, state = _read(args)
    guide = _guide(doc, state, args)
    if args.output == "json":
        sys.stdout.write(json.dumps({**doc, "state": state, **guide}, indent=2) + "\n")
    else:
        sys.stdout.write(_render(doc, state, args.long, guide))
    return _EXIT.get(state, 1)

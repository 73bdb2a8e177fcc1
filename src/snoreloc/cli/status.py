"""`snoreloc status`: the relocation's state from status.json, for people and for scripts.

Exit codes: 0 done, 1 failed (or cut off, or a rollback that failed), 2 done with warnings, 3 still running (a
relocation or a rollback), 4 rolled back (a rollback finished: the cluster's objects are as before the relocation;
neither a relocation done nor a failure). `--wait` blocks (bounded) until the run is no longer running. A journal
that says "running" or "rolling-back" while no process holds the run lock was cut off (a crash, a reboot): it is
shown as interrupted and exits 1, and the line to act on says which verb resumes it. Every number and time in the
journal is read through one plausibility check (`journal.plausible`): a garbage one is unknown, never exit 70; only
a file that cannot be read at all exits 69.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from snoreloc.cli import common

if TYPE_CHECKING:
    from snoreloc.engine import journal

HELP = "show the relocation's progress (exit 0 done, 1 failed, 2 done with warnings, 3 running, 4 rolled back)"

OUTPUTS: tuple[str, ...] = ()  # writes nothing (stdout only)
INPUTS: tuple[str, ...] = ()
INTERRUPTED_EXIT = 1
ROLLED_BACK_EXIT = 4  # a rollback that finished is not a failure, nor a relocation done (issue 35)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_state(parser)
    parser.add_argument("--wait", action="store_true", help="wait until the run is no longer running")
    parser.add_argument("--timeout", type=float, default=7200.0, help="longest --wait, in seconds")
    parser.add_argument("--long", action="store_true", help="every step, its timing, and errors with hints")
    common.add_output(parser)


def exit_codes() -> dict[journal.RunState, int]:
    """The exit code for each state a journal can hold."""
    from snoreloc.engine import journal  # noqa: PLC0415 (lazy: `--help` builds this parser too)

    state = journal.RunState
    return {
        state.NEW: 1,
        state.RUNNING: 3,
        state.DONE: 0,
        state.DONE_WITH_WARNINGS: 2,
        state.FAILED: 1,
        state.PARTIAL: 1,
        state.ROLLING_BACK: 3,
        state.ROLLED_BACK: ROLLED_BACK_EXIT,
        state.ROLLBACK_FAILED: 1,
    }


def _read(args: argparse.Namespace) -> tuple[journal.Document, bool]:
    """The journal, and whether it was cut off (says running, but no process holds the lock)."""
    from snoreloc.engine import journal, lock  # noqa: PLC0415 (lazy: `--help` builds this parser too)

    the_paths = common.make_paths(args)
    doc = journal.read(the_paths.status)
    going = doc.state in (journal.RunState.RUNNING, journal.RunState.ROLLING_BACK)
    return doc, going and not lock.held(the_paths.lock)


def _headline(doc: journal.Document, interrupted: bool) -> str:
    if interrupted:
        again = "rollback" if doc.state.value == "rolling-back" else "run"
        return f"status: {doc.state.value} (interrupted: no snoreloc process is running; `snoreloc {again}` resumes)"
    return f"status: {doc.state.value}"


def _waiting_line(doc: journal.Document) -> list[str]:
    from snoreloc import waits  # noqa: PLC0415 (lazy, as above)

    wait = doc.waiting
    if wait is None:
        return []
    tail = f" (last seen: {wait.detail})" if wait.detail else ""
    spent = f"{waits.duration(wait.elapsed)} of at most {waits.duration(wait.budget)}"
    return [f"  waiting: {wait.step}: {wait.what}: {spent}, since {wait.since:%H:%M:%S}{tail}"]


def _step_lines(name: str, record: journal.StepRecord, long: bool) -> list[str]:
    took = f" {record.duration:.1f}s" if record.duration is not None else ""
    lines = [f"  {name}: {record.state.value}{took}"]
    if record.error is not None:
        lines += [f"    error: {record.error.message}", f"    hint: {record.error.hint}"]
    if long:
        lines += [f"    warning: {w}" for w in record.warnings]
    return lines


def _guide(doc: journal.Document, interrupted: bool, args: argparse.Namespace) -> dict[str, str]:
    """What the technician should do now, and where the progress page is (while it serves)."""
    from snoreloc.engine import view  # noqa: PLC0415 (lazy, as above)

    state = "interrupted" if interrupted else ""
    page = view.page_address(common.make_paths(args).state_dir)
    return {"now": view.todo_of(view.facts(doc), state), "page": page}


def _run_error(doc: journal.Document) -> list[str]:
    """The run's error when no step carries it (a refusal before the first step, where the site-config asks what
    this cluster cannot do; a rollback that failed), so it is said, and no step is blamed for it."""
    from snoreloc.engine import journal  # noqa: PLC0415 (lazy, as above)

    failed = any(doc.record(name).state is journal.StepState.FAILED for name in doc.step_names())
    if doc.error is None or failed:
        return []
    lines = [f"  error: {doc.error.message}"]
    return lines + ([f"  hint: {doc.error.hint}"] if doc.error.hint else [])


def _render(doc: journal.Document, interrupted: bool, long: bool, guide: dict[str, str]) -> str:
    from snoreloc.engine import journal  # noqa: PLC0415 (lazy, as above)

    lines = [_headline(doc, interrupted), *(f"{key}: {value}" for key, value in guide.items() if value)]
    lines += _waiting_line(doc)
    lines += _run_error(doc)
    if long and doc.run is not None:
        from snoreloc.engine import report  # noqa: PLC0415 (lazy, as above)

        lines.append(f"step times: {report.clock_label(doc.run.speed)}")
    for name in doc.step_names():
        record = doc.record(name)
        if long or record.state is not journal.StepState.DONE:
            lines += _step_lines(name, record, long)
    return "\n".join(lines) + "\n"


def _as_json(doc: journal.Document, interrupted: bool) -> dict[str, Any]:
    from snoreloc.engine import hubreport  # noqa: PLC0415 (lazy, as above)

    hub = hubreport.signed(doc)  # a site with a fleet hub: the report signed for `snoreloc fleet import-report`
    return {**doc.to_storage(), "interrupted": interrupted, **({"hub": hub} if hub else {})}


def run(args: argparse.Namespace) -> int:
    from snoreloc.engine import journal  # noqa: PLC0415 (lazy, as above)

    doc, interrupted = _read(args)
    deadline = time.monotonic() + args.timeout
    going = (journal.RunState.RUNNING, journal.RunState.ROLLING_BACK)
    while args.wait and doc.state in going and not interrupted and time.monotonic() < deadline:
        time.sleep(0.5)
        doc, interrupted = _read(args)
    guide = _guide(doc, interrupted, args)
    if args.output == "json":
        sys.stdout.write(json.dumps({**_as_json(doc, interrupted), **guide}, indent=2) + "\n")
    else:
        sys.stdout.write(_render(doc, interrupted, args.long, guide))
    return INTERRUPTED_EXIT if interrupted else exit_codes()[doc.state]

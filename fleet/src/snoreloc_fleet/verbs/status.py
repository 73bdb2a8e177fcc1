"""`snoreloc fleet status`: the fleet at a glance: sites by phase and by failure reason, the silent, what to re-run.

The Sites are read in pages (`limit`/`continue`, 500 a page by default: no response holds 10,000 objects) and
each page is reduced to rows at once, so memory stays small however big the fleet. `--phase` and `-l` select on
the server by label (the controller keeps `fleet.snoreloc.io/phase` equal to the phase). Output: a table for
people (counts, reasons ranked, the silent sites, the re-run list), `-o json` (the same, whole), `-o csv` (one
line per site).

Each sink has its sanitiser (`snoreloc.sanitize`): the table goes through the terminal stream (`visible`), the JSON
is escaped by its encoder (`\\u001b`, and a lone surrogate as `\\ud800`), and each CSV text cell passes `csv_cell`
(controls shown, a formula's first character defused). A report's implausible values (`fleetstate.report`) are
shown as unknown and the sites that sent them are counted in the table and listed in the JSON and the CSV.

`--wave NAME` shows the Wave first (its phase, each batch's counts, the cause of a halt: `state.wavestate`) and
then only its Sites; the JSON carries it as `wave`. A Wave that does not exist exits 69.

`--shelf` lists instead the Sites whose node is still to be relocated and whose horizon is known (issue 37: the date
the node must boot by, from its report or the depot's seal record, `spec.shelf`), the soonest first, with the days
left (negative: past it), the certificate that sets it, its wave and whence the date comes: what must be shipped
first. Table, JSON (`shelf`: every such Site) or CSV.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import json
import sys
import time
from typing import Any

from snoreloc.siblings import errors, sanitize
from snoreloc_fleet.state import fleetstate, wavestate
from snoreloc_fleet.verbs import common

HELP = "the fleet at a glance: sites by phase and failure reason, silent sites, the list to re-run (table/JSON/CSV)"
SHOWN = 20  # rows of each list in the table (JSON and CSV carry all)
CSV_COLUMNS = (
    "namespace", "name", "phase", "reason", "failure", "step", "reportedAt", "silentSeconds", "todo", "implausible",
)  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_hub_reading(parser)
    parser.add_argument("-o", "--output", choices=["table", "json", "csv"], default="table")
    parser.add_argument(
        "--shelf",
        action="store_true",
        help="the Sites not yet relocated whose must-boot-by date is known, soonest first, with the days left",
    )


def _row_data(item: fleetstate.Row, now: dt.datetime) -> dict[str, Any]:
    return {
        "namespace": item.namespace,
        "name": item.name,
        "phase": item.phase,
        "reason": item.reason,
        "failure": item.failure,
        "step": item.step,
        "reportedAt": item.reported_at.isoformat() if item.reported_at else None,
        "silentSeconds": round(s) if (s := item.silent_for(now)) is not None else None,
        "todo": item.todo,
        "implausible": " ".join(item.implausible),  # the fields read as unknown (a string: rows hold scalars)
    }


def to_json(summary: fleetstate.Summary, rows: list[fleetstate.Row], now: dt.datetime) -> str:
    """The document as `json.dumps(document, indent=1)` writes it; its three lists of sites (up to 10,000 rows
    each) are written row by row with the C encoder, since with `indent` `json` encodes in Python (a third of the
    command's time after reading)."""
    head = {
        "total": summary.total,
        "byPhase": dict(summary.by_phase),
        "failureReasons": [{"reason": r, "count": n} for r, n in summary.reasons],
        "silentAfterSeconds": summary.silent_after,
        "implausibleReports": len(summary.implausible),
    }
    lists = {"silent": summary.silent, "rerun": summary.rerun, "sites": rows}
    parts = [json.dumps(head, indent=1).removesuffix("\n}")]
    parts += [f',\n "{key}": {_rows_json([_row_data(r, now) for r in items])}' for key, items in lists.items()]
    return "".join(parts) + "\n}\n"


# A row (a flat mapping of scalars) one level deeper than a top-level list, as `indent=1` lays it out.
_ROW_ENCODER = json.JSONEncoder(separators=(",\n   ", ": "))


def _rows_json(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "[]"
    return "[\n" + ",\n".join("  {\n   " + _ROW_ENCODER.encode(r)[1:-1] + "\n  }" for r in rows) + "\n ]"


def _csv_row(item: fleetstate.Row, now: dt.datetime) -> dict[str, Any]:
    """A row's cells: text through `sanitize.csv_cell`, numbers as they are."""
    data = _row_data(item, now)
    return {key: sanitize.csv_cell(value) if isinstance(value, str) else value for key, value in data.items()}


def to_csv(rows: list[fleetstate.Row], now: dt.datetime) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for item in rows:
        writer.writerow(_csv_row(item, now))
    return out.getvalue()


def _listed(title: str, rows: list[fleetstate.Row], now: dt.datetime) -> list[str]:
    if not rows:
        return []
    lines = [f"{title}: {len(rows)}"]
    for item in rows[:SHOWN]:
        detail = item.failure or item.reason or item.phase
        todo = f"  -> {item.todo}" if item.todo else ""
        lines.append(f"  {item.name:24s} {item.phase:10s} {detail}  (reported {item.report_age(now)} ago){todo}")
    if len(rows) > SHOWN:
        lines.append(f"  ... and {len(rows) - SHOWN} more (-o csv lists every site)")
    return lines


def to_table(summary: fleetstate.Summary, now: dt.datetime, footer: str) -> str:
    lines = [f"{summary.total} sites"]
    lines += [f"  {phase:11s} {count:6d}" for phase, count in summary.by_phase.items() if count]
    if summary.reasons:
        lines.append("failure reasons:")
        lines += [f"  {count:6d}  {reason}" for reason, count in summary.reasons[:SHOWN]]
    lines += _listed(f"silent for more than {fleetstate.ago(summary.silent_after)}", list(summary.silent), now)
    lines += _listed("to re-run (Failed or Stale)", list(summary.rerun), now)
    if summary.implausible:
        names = ", ".join(r.name for r in summary.implausible[:SHOWN])
        more = f" and {len(summary.implausible) - SHOWN} more" if len(summary.implausible) > SHOWN else ""
        lines.append(f"reports with implausible values (shown as unknown): {len(summary.implausible)}")
        lines.append(f"  {names}{more} (snoreloc fleet why SITE names the fields)")
    lines.append(footer)
    return "\n".join(lines) + "\n"


def _with_wave(text: str, wave: wavestate.Wave | None, output: str) -> str:
    if wave is None or output == "csv":
        return text
    if output == "json":
        return json.dumps({"wave": wavestate.document(wave)}, indent=1)[:-2] + "," + text.lstrip()[1:]
    return "\n".join(sanitize.visible(line) for line in wavestate.lines(wave)) + "\n" + text


SHELF_COLUMNS = ("namespace", "name", "phase", "mustBootBy", "daysLeft", "setBy", "sealedAt", "source", "wave")


def _shelf_data(item: fleetstate.Row, now: dt.datetime) -> dict[str, Any]:
    horizon = item.horizon
    return {
        "namespace": item.namespace,
        "name": item.name,
        "phase": item.phase,
        "mustBootBy": horizon.must_boot_by.isoformat() if horizon else None,
        "daysLeft": fleetstate.days_left(item, now),
        "setBy": horizon.set_by if horizon else "",
        "sealedAt": horizon.sealed_at.isoformat() if horizon and horizon.sealed_at else None,
        "source": horizon.source if horizon else "",
        "wave": item.wave,
    }


def shelf_text(rows: list[fleetstate.Row], now: dt.datetime, output: str, footer: str) -> str:
    """`--shelf`: the Sites to ship first (`fleetstate.shelf_order`), as a table, JSON or CSV."""
    ordered = fleetstate.shelf_order(rows)
    if output == "json":
        return json.dumps({"shelf": [_shelf_data(r, now) for r in ordered]}, indent=1) + "\n"
    if output == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=SHELF_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for item in ordered:
            data = _shelf_data(item, now)
            writer.writerow({k: sanitize.csv_cell(v) if isinstance(v, str) else v for k, v in data.items()})
        return out.getvalue()
    unknown = sum(1 for r in rows if r.horizon is None and r.to_relocate)
    lines = [f"{len(ordered)} sites not yet relocated with a known must-boot-by date, soonest first"]
    for item in ordered[:SHOWN]:
        data = _shelf_data(item, now)
        when = f"{item.horizon.must_boot_by:%Y-%m-%d}" if item.horizon else "?"
        left = data["daysLeft"]
        days = f"{left} days left" if left is not None and left >= 0 else f"PAST by {-(left or 0)} days"
        wave = f"  wave {item.wave}" if item.wave else ""
        lines.append(
            f"  {item.name:24s} {item.phase:10s} {when}  {days:18s} {data['setBy'] or '?'} ({data['source']}){wave}"
        )
    if len(ordered) > SHOWN:
        lines.append(f"  ... and {len(ordered) - SHOWN} more (-o csv lists every site)")
    if unknown:
        lines.append(f"{unknown} sites not yet relocated have no known must-boot-by date (spec.shelf, or a report)")
    lines.append(footer)
    return sanitize.visible("\n".join(lines) + "\n")


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    wave = common.read_waves(args)[0] if args.wave else None
    with common.no_cycle_collection():
        rows, pages = common.read_rows(args, steps=False, wave=wave)  # no step is shown
        now = dt.datetime.now(dt.UTC)
        summary = fleetstate.summarize(rows, now, silent_after=args.silent_for)
        footer = f"(read in {pages} page{'s' if pages != 1 else ''}, {time.monotonic() - started:.1f} s)"
        if args.shelf:
            sys.stdout.write(shelf_text(rows, now, args.output, footer))
            return int(errors.ExitCode.OK)
        if args.output == "json":
            text = to_json(summary, rows, now)
        elif args.output == "csv":
            text = to_csv(rows, now)
        else:
            text = to_table(summary, now, footer)
    sys.stdout.write(_with_wave(text, wave, args.output))
    return int(errors.ExitCode.OK)

"""`snoreloc fleet report --html FILE`: the fleet on one self-contained page (see `ops.report` for what it shows).

The Sites are read as `fleet status` reads them (in pages, reduced to rows); the page is written beside FILE and
renamed over it, so a browser reloading it never sees half a page.
"""

from __future__ import annotations

import argparse
import datetime as dt
import pathlib
import sys

from snoreloc import errors
from snoreloc_fleet.ops import cli_status, report

HELP = "the fleet on one HTML page: phases, durations, slowest steps, failure reasons, each site's timeline"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cli_status.add_common(parser)
    parser.add_argument("--html", required=True, type=pathlib.Path, metavar="FILE", help="the page to write")
    parser.add_argument("--title", default="snoreloc fleet", help="the page's title")
    parser.add_argument(
        "--timelines", type=int, default=300, metavar="N", help="embed at most N sites' timelines (default 300)"
    )


def run(args: argparse.Namespace) -> int:
    rows, _pages = cli_status.read_rows(args)
    page = report.render(rows, dt.datetime.now(dt.UTC), title=args.title, timelines=max(0, args.timelines))
    temporary = args.html.with_name(f".{args.html.name}.tmp")
    temporary.write_text(page, encoding="utf-8")
    temporary.replace(args.html)
    sys.stdout.write(f"wrote {args.html} ({len(rows)} sites, {len(page) // 1024} KiB)\n")
    return int(errors.ExitCode.OK)

"""`snoreloc fleet report --html FILE`: the fleet on one self-contained page (see `ops.report` for what it shows).

The Sites are read as `fleet status` reads them (in pages, reduced to rows); the page is written by the agent's
writer (`snoreloc.safefile`: beside FILE and renamed over it, never through a link), so a browser reloading it
never sees half a page.
"""

from __future__ import annotations

import argparse
import datetime as dt
import pathlib
import sys

from snoreloc.siblings import errors, safefile
from snoreloc_fleet.state import page as report
from snoreloc_fleet.verbs import common

HELP = "the fleet on one HTML page: phases, durations, slowest steps, failure reasons, each site's timeline"
OUTPUTS = ("html",)  # argument names of the files this verb writes (tests/reliability)
INPUTS = ("kubeconfig",)  # argument names of the files it reads, which no output may be


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_hub_reading(parser)
    parser.add_argument("--html", required=True, type=pathlib.Path, metavar="FILE", help="the page to write")
    parser.add_argument("--title", default="snoreloc fleet", help="the page's title")
    parser.add_argument(
        "--timelines", type=int, default=300, metavar="N", help="embed at most N sites' timelines (default 300)"
    )


def run(args: argparse.Namespace) -> int:
    inputs = [path for name in INPUTS if (path := getattr(args, name, None))]
    safefile.check(args.html, inputs=inputs, shared_dir=safefile.NAMED_OUTPUT)  # before reading the hub
    waves = common.read_waves(args)
    rows, _pages = common.read_rows(args, wave=waves[0] if args.wave else None)
    now = dt.datetime.now(dt.UTC)
    page = report.render(rows, now, title=args.title, timelines=max(0, args.timelines), waves=waves)
    safefile.write(args.html, page, mode=0o644, inputs=inputs, shared_dir=safefile.NAMED_OUTPUT)
    sys.stdout.write(f"wrote {args.html} ({len(rows)} sites, {len(page) // 1024} KiB)\n")
    return int(errors.ExitCode.OK)

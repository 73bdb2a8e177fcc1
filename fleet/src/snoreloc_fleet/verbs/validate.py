"""`snoreloc fleet validate DIR|INVENTORY`: every site-config of a fleet checked in CI, before any stick is made.

DIR is what `snoreloc fleet render` wrote (or any directory of `<site>/site-config.yaml` or `*.yaml`); an
INVENTORY (with `--template`) is rendered into a scratch directory first. Every file gets the agent's own verdict
(on every core), then the fleet-wide checks compare sites. Exit 0 when every site is valid (warnings allowed), 65
when any is not. stdout carries the report (text or JSON); `--junit FILE` also writes JUnit XML for CI, through
the agent's writer (never through a link, never over one of the files it reads, checked before validating).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import os
import pathlib
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from snoreloc.siblings import errors, safefile
from snoreloc_fleet import agent
from snoreloc_fleet.checks import bulk, ci, fleetwide
from snoreloc_fleet.render import inventory, template, tree
from snoreloc_fleet.render import sites as hub_objects

HELP = "check many site-configs at once (the agent's rules + fleet-wide checks); text, JSON, JUnit XML"
OUTPUTS = ("junit",)  # argument names of the files this verb writes (tests/reliability)
INPUTS = ("target", "template")  # argument names of the files it reads, which no output may be (with DIR's files)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="DIR|INVENTORY", type=pathlib.Path, help="rendered sites, or an inventory")
    parser.add_argument("--template", type=pathlib.Path, help="the template, when TARGET is an inventory")
    parser.add_argument(
        "--unique-addresses", action="store_true", help="no two sites' networks may overlap (each site its own)"
    )
    parser.add_argument("--ship-by", type=_date, metavar="DATE", help="certificates must be valid through DATE")
    parser.add_argument("--output", choices=["text", "json"], default="text", help="the report on stdout")
    parser.add_argument("--junit", type=pathlib.Path, metavar="FILE", help="also write JUnit XML to FILE")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: every core)")
    parser.add_argument("--verbose", action="store_true", help="text: list valid sites and warnings too")


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (YYYY-MM-DD)") from None


def _ancestors(path: str) -> list[str]:
    """`a.b[0].c`, `a.b[0]`, `a.b`, `a`: a field and the fields containing it."""
    out = [path]
    while path:
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ""
        if path:
            out.append(path)
    return out


def _cell(fields: Mapping[str, str], path: str) -> str | None:
    return next((fields[p] for p in _ancestors(path) if p in fields), None)


def _traced(verdict: bulk.Verdict, trace: Mapping[str, Any]) -> bulk.Verdict:
    entry = trace.get(verdict.site) or {}
    fields = entry.get("fields") or {}
    found = tuple(dataclasses.replace(f, inventory=f.inventory or _cell(fields, f.path)) for f in verdict.findings)
    return dataclasses.replace(verdict, findings=found, row=entry.get("row"))


def _fleet_findings(verdicts: list[bulk.Verdict], jobs: Sequence[bulk.Job], args: argparse.Namespace) -> None:
    """Add the fleet-wide checks' findings to the sites they name, each with its line in that site's file."""
    placed = fleetwide.check(verdicts, unique_addresses=args.unique_addresses, ship_by=args.ship_by)
    by_site: dict[int, list[fleetwide.Placed]] = defaultdict(list)
    for item in placed:
        by_site[item.index].append(item)
    for index, items in by_site.items():
        try:
            raw = bulk.read_site_config(jobs[index].path)
        except (OSError, safefile.Unfit):
            raw = b""  # replaced since its worker read it: the finding stands, without a line
        added = tuple(
            bulk.Finding(p.message, agent.dotted(p.path), agent.line_of(raw, p.path), check=p.check) for p in items
        )
        verdicts[index] = dataclasses.replace(verdicts[index], findings=verdicts[index].findings + added)


def _validate(jobs: list[bulk.Job], args: argparse.Namespace, trace: Mapping[str, Any]) -> list[bulk.Verdict]:
    verdicts = bulk.run(jobs, max(1, args.jobs))
    _fleet_findings(verdicts, jobs, args)
    return [_traced(v, trace) for v in verdicts]


def _unrendered(site: template.Rendered) -> bulk.Verdict:
    found = tuple(bulk.Finding(p.message, check="render", inventory=p.path) for p in site.problems)
    return bulk.Verdict(
        site.row.name, f"{site.row.name}/{agent.SITE_CONFIG_NAME} (not rendered)", found, row=site.row.where()
    )


def _from_inventory(args: argparse.Namespace, now: dt.datetime) -> list[bulk.Verdict]:
    tpl = template.load(args.template)
    sites = template.render_all(tpl, inventory.load(args.target), args.target.parent)
    trace = {s.row.name: {"row": s.row.where(), "fields": s.trace} for s in sites}
    with tempfile.TemporaryDirectory(prefix="snoreloc-fleet-validate-") as scratch:  # private (0700), ours alone
        out = pathlib.Path(scratch)
        rendered = [s for s in sites if not s.problems]
        jobs = []
        for site in rendered:
            path = tree.write_site(out, site, tpl) / agent.SITE_CONFIG_NAME
            jobs.append(bulk.Job(site.row.name, str(path), f"{site.row.name}/{agent.SITE_CONFIG_NAME} (rendered)", now))
        checked = iter(_validate(jobs, args, trace))
    return [_hub_cells(s, _unrendered(s) if s.problems else next(checked)) for s in sites]


def _hub_cells(site: template.Rendered, verdict: bulk.Verdict) -> bulk.Verdict:
    """The verdict with what render refuses in the site's hub-only cells (must-boot-by, BMC): errors here too."""
    found = tuple(
        bulk.Finding(p.message, check="render", inventory=p.path) for p in hub_objects.hub_cell_problems(site)
    )
    return dataclasses.replace(verdict, findings=verdict.findings + found) if found else verdict


def _from_directory(args: argparse.Namespace, now: dt.datetime) -> list[bulk.Verdict]:
    found = bulk.discover(args.target)
    if not found:
        raise errors.UsageError(f"{args.target} holds no <site>/{agent.SITE_CONFIG_NAME} and no *.yaml")
    return _validate(bulk.jobs_for(found, now), args, tree.read_trace(args.target))


def _inputs(args: argparse.Namespace) -> list[pathlib.Path]:
    """Every file this run reads that a --junit path could name: the command line's, and DIR's site-configs and
    trace (a path inside a rendered site's directory is refused as a whole: those are the site's own files)."""
    named = [path for name in INPUTS if (path := getattr(args, name, None)) is not None]
    if args.junit is None or not args.target.is_dir():
        return named
    found = [path for _site, path in bulk.discover(args.target)]
    parent = os.path.realpath(args.junit.parent)
    if any(os.path.realpath(path.parent) == parent for path in found if path.name == agent.SITE_CONFIG_NAME):
        raise errors.UsageError(
            f"refusing to write {args.junit}: it is inside a site's directory, among the files that site reads",
            hint="Write the JUnit file outside the sites' directories (e.g. next to DIR).",
        )
    return [*named, *found, args.target / tree.TRACE]


def run(args: argparse.Namespace) -> int:
    now = dt.datetime.now(dt.UTC)
    started = time.monotonic()
    inputs = _inputs(args)
    if args.junit:  # refused now rather than after validating every site
        safefile.check(args.junit, inputs=inputs, shared_dir=safefile.NAMED_OUTPUT)
    if args.target.is_dir():
        verdicts = _from_directory(args, now)
    elif args.template is None:
        raise errors.UsageError(f"{args.target} is a file: validating an inventory needs --template")
    else:
        verdicts = _from_inventory(args, now)
    outcome = ci.Outcome(verdicts, time.monotonic() - started, max(1, args.jobs))
    if args.junit:
        junit = ci.to_junit(outcome)  # no secret in it (ops.ci): readable by the CI system's uploader
        safefile.write(args.junit, junit, mode=0o644, inputs=inputs, shared_dir=safefile.NAMED_OUTPUT)
    sys.stdout.write(ci.to_json(outcome) if args.output == "json" else ci.to_text(outcome, verbose=args.verbose))
    return int(errors.ExitCode.BAD_CONFIG if outcome.invalid else errors.ExitCode.OK)

"""`snoreloc validate FILE`: check a site-config before it travels to a site, and say exactly what to fix.

Everything is reported at once, each problem with its line. Exit 0 when the file is valid (warnings allowed), 65
when it is not. stdout carries the data (the JSON report, the annotated file, or the one-line verdict); problems
as prose go to stderr. No kubernetes import here: the command must run fast on a laptop.
"""

from __future__ import annotations

import argparse
import enum
import json
import sys
from typing import TYPE_CHECKING, Any

from snoreloc import errors

if TYPE_CHECKING:
    from snoreloc.siteconfig import loader

HELP = "check a site-config file and report every problem with its line"
OUTPUTS: tuple[str, ...] = ()  # writes nothing (stdout only)
INPUTS: tuple[str, ...] = ()


class Output(enum.Enum):
    TEXT = "text"
    JSON = "json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="the site-config YAML")
    parser.add_argument("--annotate", action="store_true", help="reprint the file with each problem's tag on its line")
    parser.add_argument(
        "--output",
        choices=[o.value for o in Output],
        default=Output.TEXT.value,
        help="text (default) or json: {valid, errors, warnings} on stdout",
    )


def _as_data(problem: errors.Problem) -> dict[str, Any]:
    return {"path": problem.path, "message": problem.message, "line": problem.line, "column": problem.column}


def _json(report: loader.Report) -> str:
    document = {
        "valid": report.valid,
        "errors": [_as_data(p) for p in report.problems],
        "warnings": [_as_data(p) for p in report.warnings],
    }
    return json.dumps(document, indent=2) + "\n"


def _text(report: loader.Report) -> None:
    for problem in report.problems:
        sys.stderr.write(f"error: {problem.render()}\n")
    for warning in report.warnings:
        sys.stderr.write(f"warning: {warning.render()}\n")
    if report.valid:
        note = f" ({len(report.warnings)} warnings)" if report.warnings else ""
        sys.stdout.write(f"{report.source}: valid{note}\n")
        return
    count = len(report.problems)
    sys.stderr.write(f"{report.source}: {count} problem{'s' if count != 1 else ''}; nothing was changed\n")


def run(args: argparse.Namespace) -> int:
    from snoreloc.siteconfig import loader  # noqa: PLC0415 (lazy: `snoreloc --version` builds this parser too)

    report = loader.validate(args.file)
    if args.output == Output.JSON.value:
        sys.stdout.write(_json(report))
    elif args.annotate:
        from snoreloc.siteconfig import annotate  # noqa: PLC0415 (lazy, as above)

        sys.stdout.write(annotate.render(report.text, report.problems, report.warnings, report.secret_spans))
        _summary(report)
    else:
        _text(report)
    return int(errors.ExitCode.OK if report.valid else errors.ExitCode.BAD_CONFIG)


def _summary(report: loader.Report) -> None:
    verdict = "valid" if report.valid else f"{len(report.problems)} problem(s)"
    sys.stderr.write(f"{report.source}: {verdict}, {len(report.warnings)} warning(s)\n")

"""How a fleet validation is told: prose for a person, JSON for scripts, JUnit XML for CI systems.

JUnit XML is what GitLab, Jenkins, GitHub's test reporters and Tekton's dashboards all read: one `testcase` per
site, a `failure` listing its findings (file, line, field, inventory cell), warnings in `system-out`. No secret
reaches any of these: the agent redacts its messages and the fleet checks quote fingerprints, never contents.
Every string that goes into the XML (a site's or a file's name, a finding) passes through `sanitize.visible` first
(control characters, lone surrogates from a non-UTF-8 file name and the code points XML forbids become readable
escapes), then the standard library's XML escaping: the file always parses.
"""

from __future__ import annotations

import collections
import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from snoreloc.siblings import sanitize
from snoreloc_fleet.checks import bulk

SUITE = "snoreloc fleet validate"


@dataclass(frozen=True)
class Outcome:
    verdicts: Sequence[bulk.Verdict]
    seconds: float
    jobs: int

    @property
    def invalid(self) -> int:
        return sum(1 for v in self.verdicts if not v.valid)


def _counts(outcome: Outcome) -> dict[str, Any]:
    by_check = collections.Counter(f.check for v in outcome.verdicts for f in v.findings if f.severity == "error")
    return {
        "sites": len(outcome.verdicts),
        "valid": len(outcome.verdicts) - outcome.invalid,
        "invalid": outcome.invalid,
        "warnings": sum(1 for v in outcome.verdicts for f in v.findings if f.severity != "error"),
        "errorsByCheck": dict(sorted(by_check.items())),
        "seconds": round(outcome.seconds, 3),
        "workers": outcome.jobs,
    }


def _finding(finding: bulk.Finding) -> dict[str, Any]:
    return {k: v for k, v in asdict(finding).items() if v is not None and k != "severity"}


def to_json(outcome: Outcome) -> str:
    sites = [
        {
            "site": v.site,
            "file": v.file,
            "valid": v.valid,
            **({"row": v.row} if v.row else {}),
            "errors": [_finding(f) for f in v.findings if f.severity == "error"],
            "warnings": [_finding(f) for f in v.findings if f.severity != "error"],
        }
        for v in outcome.verdicts
    ]
    return json.dumps({"summary": _counts(outcome), "sites": sites}, indent=1) + "\n"


def line(finding: bulk.Finding) -> str:
    """`line 23 spec.domain: message [sites.csv line 13, column domain]` (the check's name when not the agent's)."""
    where = f"line {finding.line} " if finding.line is not None else ""
    field = f"{finding.path}: " if finding.path else ""
    rule = f" ({finding.check})" if finding.check != "site-config" else ""
    cell = f" [{finding.inventory}]" if finding.inventory else ""
    return f"{finding.severity}: {where}{field}{finding.message}{rule}{cell}"


def to_junit(outcome: Outcome) -> str:
    counts = _counts(outcome)
    suites = ET.Element("testsuites", name=SUITE, tests=str(counts["sites"]), failures=str(counts["invalid"]))
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=SUITE,
        tests=str(counts["sites"]),
        failures=str(counts["invalid"]),
        errors="0",
        time=f"{outcome.seconds:.3f}",
    )
    for verdict in outcome.verdicts:
        file = sanitize.visible(verdict.file)
        case = ET.SubElement(suite, "testcase", classname="site-config", name=sanitize.visible(verdict.site), file=file)
        errors = [f for f in verdict.findings if f.severity == "error"]
        if errors:
            failure = ET.SubElement(case, "failure", message=f"{len(errors)} problem(s) in {file}")
            failure.text = "\n".join(sanitize.visible(line(f)) for f in errors)
        warnings = [f for f in verdict.findings if f.severity != "error"]
        if warnings:
            ET.SubElement(case, "system-out").text = "\n".join(sanitize.visible(line(f)) for f in warnings)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def to_text(outcome: Outcome, *, verbose: bool) -> str:
    out = []
    for verdict in outcome.verdicts:
        shown = verdict.findings if verbose else [f for f in verdict.findings if f.severity == "error"]
        if not shown and not verbose:
            continue
        row = f" ({verdict.row})" if verdict.row else ""
        out.append(f"{verdict.site}: {verdict.file}{row}: {'valid' if verdict.valid else 'INVALID'}")
        out += [f"  {line(f)}" for f in shown]
    counts = _counts(outcome)
    checks = ", ".join(f"{k} {n}" for k, n in counts["errorsByCheck"].items())
    rate = counts["sites"] / outcome.seconds if outcome.seconds > 0 else 0.0
    out.append(
        f"{counts['sites']} site-configs: {counts['valid']} valid, {counts['invalid']} invalid"
        + (f" (errors: {checks})" if checks else "")
        + f", {counts['warnings']} warnings; {outcome.seconds:.1f} s on {outcome.jobs} workers ({rate:.0f}/s)"
    )
    return "\n".join(out) + "\n"

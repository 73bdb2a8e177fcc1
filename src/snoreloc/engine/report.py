"""The end-of-run report (`report.json` and its text form): where the cluster now answers, and what changed.

It is built from the journal alone, so `snoreloc status` can show the same report after the fact and a resumed
run reports the steps an earlier run did.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from snoreloc import redact
from snoreloc.engine import journal
from snoreloc.siteconfig import model


def build(site: model.SiteConfig, doc: journal.Document, extra_warnings: list[str] | None = None) -> dict[str, Any]:
    records = [doc.record(name) for name in doc.step_names()]
    changed = [item for rec in records for item in rec.changed]
    warnings = [w for rec in records for w in rec.warnings] + list(extra_warnings or [])
    return {
        "site": site.name,
        "domain": site.domain,
        "state": doc.state.value,
        "urls": {
            "console": f"https://{site.console_host}",
            "oauth_login": f"https://{site.oauth_host}",
            "api": f"https://{site.api_host}:6443",
        },
        "changed": changed,
        "routes": doc.record("routes").details.get("routes", []),
        "kept": [
            item for rec in records for item in rec.details.get("kept") or []
        ],  # users' settings left as they were
        "steps": [row.as_json() for row in journal.timings(doc)],
        "warnings": sorted(set(warnings), key=warnings.index),
        "error": None if doc.error is None else doc.error.to_storage(),
    }


def write(path: Path, rep: dict[str, Any]) -> None:
    journal.write_atomic(path, redact.redact(json.dumps(rep, indent=2)) + "\n")


def render(rep: dict[str, Any]) -> str:
    """The report for people."""
    lines = [f"site {rep['site']}: {rep['state']}"]
    lines += [f"  {what:8} {url}" for what, url in rep["urls"].items()]
    lines.append("steps:")
    for item in rep["steps"]:
        took = f"{item['seconds']:.1f}s" if isinstance(item.get("seconds"), int | float) else "-"
        lines.append(f"  {item['step']:14} {item['state']:8} {took}")
    if rep["changed"]:
        lines.append(f"changed ({len(rep['changed'])}):")
        lines += [f"  {item}" for item in rep["changed"]]
    if rep["routes"]:
        lines.append(f"routes ({len(rep['routes'])}):")
        lines += [f"  {r['namespace']}/{r['name']}: {r['result']} {r['new_host']}" for r in rep["routes"]]
    lines += [f"kept: {k}" for k in rep.get("kept") or []]
    lines += [f"warning: {w}" for w in rep["warnings"]]
    return redact.redact("\n".join(lines) + "\n")

"""The end-of-run report (`report.json` and its text form): where the cluster now answers, and what changed.

It is built from the journal alone, so `snoreloc status` can show the same report after the fact and a resumed
run reports the steps an earlier run did. Where the cluster answers: the API at `api.<domain>:6443`, the console
and the login page where the domain step left them (a componentRoute the user kept on a host of their own stays
there), the DNS names the site must resolve to the node, and the command that writes an administrator's
kubeconfig for the new API name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from snoreloc import errors, redact, safefile
from snoreloc.engine import journal
from snoreloc.siteconfig import model

KUBECONFIG_COMMAND = "snoreloc kubeconfig --output FILE"
API_PORT = 6443


def api_url(site: model.SiteConfig) -> str:
    return f"https://{site.api_host}:{API_PORT}"


def hosts(site: model.SiteConfig, doc: journal.Document) -> dict[str, str]:
    """The console's and the login page's hosts: where the domain step recorded them, else on the apps domain."""
    found = {"console": site.console_host, "oauth-openshift": site.oauth_host}
    found.update(doc.record("domain").details.get("hosts") or {})
    return found


def console_url(site: model.SiteConfig, doc: journal.Document) -> str:
    return f"https://{hosts(site, doc)['console']}"


def dns_names(site: model.SiteConfig, doc: journal.Document) -> list[str]:
    """What the site's DNS must resolve to the node: the API, the apps wildcard, and any host outside it."""
    outside = [host for host in hosts(site, doc).values() if not host.endswith(f".{site.apps_domain}")]
    return [site.api_host, f"*.{site.apps_domain}", *sorted(set(outside))]


def clock_of(speed: float) -> dict[str, Any]:
    """What the report's seconds are: wall-clock seconds on a node, or a simulated cluster's seconds when the run's
    clock ran `speed` times faster (`--time-scale`, the demo, the tests), so no reader mixes the two unlabelled."""
    return {"seconds": "wall" if speed == 1.0 else "simulated", "speed": speed}


def seconds_label(rep: dict[str, Any]) -> str:
    """`wall-clock seconds`, or `simulated seconds (the cluster ran 20x: a twentieth of that in wall time)`."""
    clock = rep.get("clock") or {}
    speed = clock.get("speed", 1.0)
    if clock.get("seconds") != "simulated" or not isinstance(speed, int | float):
        return clock_label(1.0)
    return clock_label(speed)


def clock_label(speed: float) -> str:
    """What a run's seconds are, for every reader that shows them (the report, `status --long`, the page)."""
    if speed == 1.0:
        return "wall-clock seconds"
    return f"simulated seconds (the cluster ran {speed:g}x: 1/{speed:g} of that in wall time)"


def build(
    site: model.SiteConfig, doc: journal.Document, extra_warnings: list[str] | None = None, *, speed: float = 1.0
) -> dict[str, Any]:
    records = [doc.record(name) for name in doc.step_names()]
    changed = [item for rec in records for item in rec.changed]
    warnings = [w for rec in records for w in rec.warnings] + list(extra_warnings or [])
    return {
        "site": site.name,
        "domain": site.domain,
        "state": doc.state.value,
        "urls": {
            "console": console_url(site, doc),
            "oauth_login": f"https://{hosts(site, doc)['oauth-openshift']}",
            "api": api_url(site),
        },
        "dns": dns_names(site, doc),
        "kubeconfig": KUBECONFIG_COMMAND,
        "changed": changed,
        "routes": doc.record("routes").details.get("routes", []),
        **route_counts(doc.record("routes").details),
        "kept": [
            item for rec in records for item in rec.details.get("kept") or []
        ],  # users' settings left as they were
        "revoked": [
            item for rec in records for item in rec.details.get("revoked") or []
        ],  # the factory's ways in this site-config closed (spec.adminAccess)
        "steps": [row.as_json() for row in journal.timings(doc)],
        "clock": clock_of(speed),  # what the steps' seconds are
        "warnings": sorted(set(warnings), key=warnings.index),
        "error": None if doc.error is None else doc.error.to_storage(),
    }


def route_counts(details: dict[str, Any]) -> dict[str, Any]:
    """The routes by result (`route_counts`, a partition: they add up to `route_total`), and how many of them were
    on an earlier site's apps domain (`routes_from_earlier`, a relocation after a relocation: the same routes seen
    another way). A journal written before issue 35 kept that count among the results: it is taken out."""
    from snoreloc.steps.cluster import routes  # noqa: PLC0415 (lazy: the page and kubeconfig load no kube client)

    by_result = {str(key): value for key, value in (details.get("counts") or {}).items()}
    earlier = by_result.pop(routes.EARLIER_COUNT, None)
    earlier = details.get(routes.EARLIER_KEY, earlier or 0)
    total = sum(value for value in by_result.values() if isinstance(value, int))
    return {"route_counts": by_result, "route_total": total, "routes_from_earlier": earlier}


def _route_line(rep: dict[str, Any]) -> str:
    """`routes (21: 12 migrated, 9 untouched; 11 of them from an earlier site's apps domain):`"""
    counts = ", ".join(f"{n} {what}" for what, n in (rep.get("route_counts") or {}).items())
    earlier = rep.get("routes_from_earlier") or 0
    also = f"; {earlier} of them from an earlier site's apps domain" if earlier else ""
    return f"routes ({len(rep['routes'])}{': ' + counts if counts else ''}{also}):"


def write(path: Path, rep: dict[str, Any]) -> None:
    safefile.write(path, redact.redact(json.dumps(rep, indent=2)) + "\n")


def read(path: Path) -> dict[str, Any] | None:
    """The report a run wrote, or None when there is none; UnavailableError (69) naming the file when it is not
    fit to read (a symlink, a FIFO, too large, not a JSON object)."""
    try:
        rep = json.loads(safefile.read(path, safefile.STATE))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as exc:
        raise errors.UnavailableError(f"cannot read {path}: {exc}", hint="Remove the file and re-run.") from None
    if not isinstance(rep, dict):
        raise errors.UnavailableError(f"cannot read {path}: not a JSON object", hint="Remove the file and re-run.")
    return rep


def render(rep: dict[str, Any]) -> str:
    """The report for people."""
    lines = [f"site {rep['site']}: {rep['state']}"]
    lines += [f"  {what:8} {url}" for what, url in rep["urls"].items()]
    if rep.get("dns"):
        lines.append(f"  dns      the site's DNS must resolve to the node: {', '.join(rep['dns'])}")
    if rep.get("kubeconfig"):
        lines.append(f"  kubeconfig for the new API name: `{rep['kubeconfig']}`")
    lines.append(f"steps ({seconds_label(rep)}):")
    for item in rep["steps"]:
        took = f"{item['seconds']:.1f}s" if isinstance(item.get("seconds"), int | float) else "-"
        lines.append(f"  {item['step']:14} {item['state']:8} {took}")
    if rep["changed"]:
        lines.append(f"changed ({len(rep['changed'])}):")
        lines += [f"  {item}" for item in rep["changed"]]
    if rep["routes"]:
        lines.append(_route_line(rep))
        lines += [f"  {r['namespace']}/{r['name']}: {r['result']} {r['new_host']}" for r in rep["routes"]]
    lines += [f"kept: {k}" for k in rep.get("kept") or []]
    lines += [f"revoked: {r}" for r in rep.get("revoked") or []]
    lines += [f"warning: {w}" for w in rep["warnings"]]
    return redact.redact("\n".join(lines) + "\n")

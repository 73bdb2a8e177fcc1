"""`snoreloc fleet why SITE`: one site's story: its phase and why, its findings or the node's last report, what to do.

For an Invalid site: the validation findings (field, line, message) the controller found with the agent's rules.
For a site that reported: the run's state, the step, the wait in progress, the failure with its hint, each step's
seconds, and how long ago the node last spoke. Last, one line: what to do now (the node's own line for the
technician when there is one). `-o json` prints the Site's status as the hub holds it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Mapping
from typing import Any

from snoreloc import errors
from snoreloc_fleet.ops import fleetstate

HELP = "why a site is where it is: its findings or the node's last report, and what to do now"
# What to do, by phase, when the node gave no line of its own.
ACTIONS = {
    "Pending": "wait for the controller to check the Site (is `snoreloc fleet controller` running?)",
    "Invalid": "fix the site-config or its inputs (the findings above), then apply the Site again",
    "Ready": "make the stick (snoreloc fleet make-media SITE) and send it to the site",
    "InProgress": "wait: the relocation is running",
    "Stale": "the node stopped reporting mid-run: call the site; the technician's progress page or "
    "`snoreloc status` on the node says where it stands (or carry the report back: snoreloc fleet import-report)",
    "Failed": "read the failure above; the technician re-runs `snoreloc run` after fixing it, or rolls back",
    "Relocated": "nothing: the site is relocated",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from snoreloc_fleet import hubaccess  # noqa: PLC0415 (lazy: `snoreloc --help` builds this parser)

    parser.add_argument("site", metavar="SITE", help="the Site's name")
    hubaccess.add_arguments(parser)
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")


def _get(args: argparse.Namespace) -> dict[str, Any]:
    from snoreloc.adapters import kube  # noqa: PLC0415
    from snoreloc_fleet import hubaccess, site  # noqa: PLC0415

    resource = kube.Resource(site.GROUP, site.VERSION, site.PLURAL, site.KIND, namespaced=True)
    client = hubaccess.client(args)
    try:
        found = client.find(kube.Ref(resource, args.site, args.namespace))
    finally:
        client.close()
    if found is None:
        raise errors.UnavailableError(
            f"no Site {args.site} in namespace {args.namespace}",
            hint="List them: snoreloc fleet status -o csv (or -A for every namespace).",
        )
    return dict(found)


def _findings(status: Mapping[str, Any]) -> list[str]:
    from snoreloc_fleet import site  # noqa: PLC0415

    validation = status.get(site.STATUS_VALIDATION) or {}
    lines = []
    for kind in ("errors", "warnings"):
        for found in validation.get(kind) or ():
            line = f" (line {found['line']})" if found.get("line") is not None else ""
            lines.append(f"  {kind[:-1]}: {found.get('path') or '<document>'}: {found.get('message', '')}{line}")
    if validation.get("more"):
        lines.append(f"  ... and {validation['more']} more")
    return lines


def _report(agent: Mapping[str, Any], now: dt.datetime) -> list[str]:
    if not agent:
        return ["node report: none yet"]
    reported = fleetstate.when(agent.get("reportedAt"))
    age = fleetstate.ago((now - reported).total_seconds()) if reported else "?"
    done, total = agent.get("stepsDone", 0), agent.get("stepsTotal", 0)
    lines = [
        f"node report: {agent.get('runState', '?')}, step {agent.get('step') or '-'} ({done}/{total} done), "
        f"{age} ago ({agent.get('source', 'node')}, agent {agent.get('agentVersion', '?')})"
    ]
    waiting = agent.get("waiting")
    if isinstance(waiting, Mapping):
        lines.append(
            f"  waiting in {waiting.get('step')}: {waiting.get('what')} "
            f"({waiting.get('elapsedSeconds', 0):.0f} s of {waiting.get('budgetSeconds', 0):.0f} s)"
        )
    failure = agent.get("failure")
    if isinstance(failure, Mapping):
        lines.append(f"  failed in {failure.get('step') or '-'}: {failure.get('message', '')}")
        if failure.get("hint"):
            lines.append(f"  hint: {failure['hint']}")
    steps = [
        f"{s.get('name')} {s.get('state')}" + (f" {s['seconds']:.0f}s" if s.get("seconds") is not None else "")
        for s in agent.get("steps") or ()
    ]
    if steps:
        lines.append("  steps: " + ", ".join(steps))
    lines += [f"  warning: {w}" for w in agent.get("warnings") or ()]
    return lines


def explain(obj: Mapping[str, Any], now: dt.datetime) -> str:
    """The text `fleet why` prints for one Site."""
    from snoreloc_fleet import site  # noqa: PLC0415

    status = obj.get("status") or {}
    item = fleetstate.row(obj)
    agent = status.get(site.STATUS_AGENT) or {}
    lines = [f"{item.namespace}/{item.name}: {item.phase}" + (f" ({item.reason})" if item.reason else "")]
    for condition in status.get(site.STATUS_CONDITIONS) or ():
        lines.append(
            f"  {condition.get('type')}={condition.get('status')} {condition.get('reason', '')}: "
            f"{condition.get('message', '')}"
        )
    lines += _findings(status)
    lines += _report(agent, now)
    action = item.todo if item.todo and item.phase != site.Phase.INVALID else ACTIONS.get(item.phase, "")
    lines.append(f"do now: {action}")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    obj = _get(args)
    if args.output == "json":
        sys.stdout.write(json.dumps(obj.get("status") or {}, indent=1) + "\n")
    else:
        sys.stdout.write(explain(obj, dt.datetime.now(dt.UTC)))
    return int(errors.ExitCode.OK)

"""`snoreloc fleet why SITE`: one site's story: its phase and why, its findings or the node's last report, what to do.

For an Invalid site: the validation findings (field, line, message) the controller found with the agent's rules.
For a site that reported: the run's state, the step, the wait in progress, the failure with its hint, each step's
seconds, and how long ago the node last spoke. For a site not yet relocated whose must-boot-by date is known (issue
37), that date, the days left and whence the hub knows it. Last, one line: what to do now (the node's own line for the
technician when there is one). `-o json` prints the Site's status as the hub holds it.

The node's report is read by `fleetstate.report` (plausible values; the fields it could not believe are named on a
line of their own), everything else of the status by shape (a list where a mapping belongs is skipped), and the text
goes to the terminal through `snoreloc.sanitize.visible`, so no Site's content can crash or steer the output.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Mapping
from typing import Any

from snoreloc.siblings import errors
from snoreloc_fleet.state import fleetstate

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
# What to do, by the controller's reason, where the phase alone would send someone the wrong way.
REASON_ACTIONS = {
    "ClockAhead": "the node's reports are dated ahead of the hub's clock, so their times are not trusted: set the "
    "node's time (spec.ntp in the site-config, or the BIOS clock) and the next report is judged again",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from snoreloc_fleet.hub import hubaccess  # noqa: PLC0415 (lazy: `snoreloc --help` builds this parser)

    parser.add_argument("site", metavar="SITE", help="the Site's name")
    hubaccess.add_arguments(parser)
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")


def _get(args: argparse.Namespace) -> dict[str, Any]:
    from snoreloc.siblings import kube  # noqa: PLC0415
    from snoreloc_fleet.hub import hubaccess  # noqa: PLC0415

    resource = hubaccess.sites()
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


def _items(value: Any) -> list[Mapping[str, Any]]:
    """The mappings of a list the controller wrote (conditions, findings); anything else in it is skipped."""
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _findings(status: Mapping[str, Any]) -> list[str]:
    from snoreloc_fleet.resource import site  # noqa: PLC0415

    validation = fleetstate.mapping_of(status.get(site.STATUS_VALIDATION))
    lines = []
    for kind in ("errors", "warnings"):
        for found in _items(validation.get(kind)):
            number = found.get("line")
            line = f" (line {number})" if type(number) is int else ""
            path = fleetstate.text_of(found.get("path")) or "<document>"
            lines.append(f"  {kind[:-1]}: {path}: {fleetstate.text_of(found.get('message'))}{line}")
    more = validation.get("more")
    if type(more) is int and more > 0:
        lines.append(f"  ... and {more} more")
    return lines


def _seconds(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f}"


def _report(agent: fleetstate.Report | None, now: dt.datetime) -> list[str]:
    if agent is None:
        return ["node report: none yet"]
    age = fleetstate.ago(max(0.0, (now - agent.reported_at).total_seconds())) if agent.reported_at else "?"
    done, total = (str(n) if n is not None else "?" for n in (agent.steps_done, agent.steps_total))
    lines = [
        f"node report: {agent.run_state or '?'}, step {agent.step or '-'} ({done}/{total} done), "
        f"{age} ago ({agent.source or 'node'}, agent {agent.agent_version or '?'})"
    ]
    if agent.waiting is not None:
        waiting = agent.waiting
        lines.append(
            f"  waiting in {waiting.step}: {waiting.what} "
            f"({_seconds(waiting.elapsed)} s of {_seconds(waiting.budget)} s)"
        )
    if agent.failure is not None:
        lines.append(f"  failed in {agent.failure.step or '-'}: {agent.failure.message}")
        if agent.failure.hint:
            lines.append(f"  hint: {agent.failure.hint}")
    steps = [f"{s.name} {s.state}" + (f" {s.seconds:.0f}s" if s.seconds is not None else "") for s in agent.steps]
    if steps:
        lines.append("  steps: " + ", ".join(steps))
    lines += [f"  warning: {w}" for w in agent.warnings]
    if agent.implausible:
        lines.append(f"  implausible, shown as unknown: {', '.join(agent.implausible)}")
    return lines


def explain(obj: Mapping[str, Any], now: dt.datetime) -> str:
    """The text `fleet why` prints for one Site."""
    from snoreloc_fleet.resource import site  # noqa: PLC0415

    status = fleetstate.mapping_of(obj.get("status"))
    item = fleetstate.row(obj, now=now)
    lines = [f"{item.namespace}/{item.name}: {item.phase}" + (f" ({item.reason})" if item.reason else "")]
    for condition in _items(status.get(site.STATUS_CONDITIONS)):
        kind, state, reason = (fleetstate.text_of(condition.get(key), 316) for key in ("type", "status", "reason"))
        lines.append(f"  {kind}={state} {reason}: {fleetstate.text_of(condition.get('message'))}")
    lines += _findings(status)
    lines += [f"  {words}"] if (words := fleetstate.shelf_words(item, now)) else []
    lines += _report(fleetstate.report(status.get(site.STATUS_AGENT), now), now)
    by_node = item.todo if item.todo and item.phase != site.Phase.INVALID else ""
    action = REASON_ACTIONS.get(item.reason) or by_node or ACTIONS.get(item.phase, "")
    lines.append(f"do now: {action}")
    return "\n".join(lines) + "\n"


def as_json(obj: Mapping[str, Any]) -> str:
    """The Site's status as the hub holds it (`-o json`); a status nested too deep to print is bad input (65)."""
    status = obj.get("status") or {}
    try:
        return json.dumps(status, indent=1) + "\n"
    except (RecursionError, ValueError):
        raise errors.ConfigError(
            f"the status of Site {fleetstate.text_of(fleetstate.mapping_of(obj.get('metadata')).get('name'), 253)} "
            "is nested too deep to print",
            hint="Read it as text (snoreloc fleet why SITE) or with kubectl get site SITE -o yaml.",
        ) from None


def run(args: argparse.Namespace) -> int:
    obj = _get(args)
    if args.output == "json":
        sys.stdout.write(as_json(obj))
    else:
        sys.stdout.write(explain(obj, dt.datetime.now(dt.UTC)))
    return int(errors.ExitCode.OK)

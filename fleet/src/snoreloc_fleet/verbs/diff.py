"""`snoreloc fleet diff BASE HEAD`: what a change to the fleet tree in Git does to the sites, for a pull request.

BASE and HEAD are two revisions of the repository holding the tree (`--tree`, default the current directory), or two
directories. It lists the sites added and removed, and those whose medium changes: their stick must be made again (or
their BMC delivery redone). With `--kubeconfig` it asks the hub which of the touched Sites are already being
relocated (`hub.inflight`); offline it says which it could not check.

Exit codes: 0 nothing touches a Site in progress (or offline: nothing could be checked, and it says so); 64 usage (a
side that is neither a directory nor a revision); 65 a tree file that is no Site or cannot be opened with
`--identity`; 69 `git` or `age` missing, or the hub unreachable; 75 a change touches a Site the hub is relocating:
hold the merge until its run ends (or until the site is relocated), then run again.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from typing import Any

from snoreloc.siblings import errors, sanitize

HELP = "what a change to the fleet tree in Git does: sticks to remake, sites added and removed, runs it would touch"
OUTPUTS: tuple[str, ...] = ()  # it writes no file (tests/reliability)
INPUTS = ("base", "head", "identity")
EXIT_IN_FLIGHT = errors.ExitCode.TEMPORARY  # 75: a change touches a Site in progress; merge it after the run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("base", metavar="BASE", help="a revision (e.g. origin/main) or a directory holding the tree")
    parser.add_argument("head", metavar="HEAD", help="a revision (e.g. HEAD) or a directory holding the tree")
    parser.add_argument(
        "--tree",
        type=pathlib.Path,
        default=pathlib.Path("."),
        help="with revisions: the tree's directory in the working copy (default: the current directory)",
    )
    parser.add_argument(
        "--identity",
        metavar="FILE",
        help="the hub's age identity: compute each medium from its sealed files (else the digest render recorded)",
    )
    parser.add_argument(
        "--kubeconfig",
        help="the hub's kubeconfig: ask which touched Sites are in progress (exit 75 when any is)",
    )
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")


def _name(medium: Any) -> str:
    return f"{medium.namespace}/{medium.name}" if medium.namespace else medium.name


def _hub(args: argparse.Namespace, keys: list[tuple[str, str]]) -> dict[tuple[str, str], Any]:
    from snoreloc.siblings import kube  # noqa: PLC0415
    from snoreloc_fleet.hub import hubaccess, inflight  # noqa: PLC0415

    client = hubaccess.client(args)
    try:
        return dict(inflight.read(client, keys))
    except kube.NotFound:
        raise errors.UnavailableError(
            "the hub serves no Sites", hint="Install the fleet side first: snoreloc fleet install"
        ) from None
    finally:
        client.close()


def _document(changes: Any, on_hub: dict[tuple[str, str], Any] | None) -> dict[str, Any]:
    def state(medium: Any) -> dict[str, Any]:
        entry: dict[str, Any] = {"site": _name(medium)}
        if on_hub is not None:
            found = on_hub.get((medium.namespace or "default", medium.name))
            entry["hub"] = None if found is None else {"phase": found.phase, "stickMade": found.stick_made}
            entry["inProgress"] = bool(found and found.in_flight)
        return entry

    return {
        "added": [state(m) for m in changes.added],
        "removed": [state(m) for m in changes.removed],
        "newMedium": [{**state(h), "from": b.digest, "to": h.digest} for b, h in changes.medium],
        "changedSameMedium": [_name(m) for m in changes.other],
        "unchanged": changes.unchanged,
        "staleDigest": [_name(m) for m in changes.stale],
        "unknownMedium": [_name(m) for m in changes.unknown],
        "checkedOnHub": on_hub is not None,
    }


def _lines(doc: dict[str, Any], base: str, head: str) -> list[str]:
    lines = [
        f"fleet diff {base} -> {head}: {len(doc['added'])} added, {len(doc['removed'])} removed, "
        f"{len(doc['newMedium'])} with a new medium, {len(doc['changedSameMedium'])} changed with the same medium, "
        f"{doc['unchanged']} unchanged"
    ]

    def hub_note(entry: dict[str, Any]) -> str:
        if "hub" not in entry:
            return ""
        found = entry["hub"]
        if found is None:
            return " [not on the hub]"
        note = f" [hub: {found['phase']}{', stick made' if found['stickMade'] else ''}]"
        return note + (" IN PROGRESS: wait until its run ends" if entry["inProgress"] else "")

    lines += [f"  added    {e['site']}{hub_note(e)}" for e in doc["added"]]
    lines += [
        f"  removed  {e['site']}{hub_note(e)}: Argo CD prunes its Site (a Relocated Site is kept: Prune=false)"
        for e in doc["removed"]
    ]
    lines += [
        f"  medium   {e['site']}{hub_note(e)}: {e['from'] or '?'} -> {e['to'] or '?'}: remake its stick "
        "(or redo its BMC delivery)"
        for e in doc["newMedium"]
    ]
    lines += [
        f"  warning  {s}: its recorded medium digest is not its files': render it again" for s in doc["staleDigest"]
    ]
    lines += [
        f"  warning  {s}: no medium digest recorded and no --identity: its files were not compared"
        for s in doc["unknownMedium"]
    ]
    if not doc["checkedOnHub"]:
        touched = [e["site"] for key in ("added", "removed", "newMedium") for e in doc[key]]
        if touched:
            shown = ", ".join(touched[:20]) + (f" and {len(touched) - 20} more" if len(touched) > 20 else "")
            lines.append(f"not checked against the hub (no --kubeconfig): whether a run is in progress at {shown}")
    return lines


def run(args: argparse.Namespace) -> int:
    from snoreloc_fleet.render import gitdiff  # noqa: PLC0415

    if args.identity is not None and not pathlib.Path(args.identity).is_file():
        raise errors.UsageError(f"--identity {args.identity} is no file")
    base = gitdiff.read_side(args.base, args.tree)
    head = gitdiff.read_side(args.head, args.tree)
    changes = gitdiff.compare(base, head, args.identity)
    on_hub = None
    if args.kubeconfig:
        on_hub = _hub(args, [(m.namespace or "default", m.name) for m in changes.touched()])
    doc = _document(changes, on_hub)
    if args.output == "json":
        sys.stdout.write(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    else:
        sys.stdout.write("".join(sanitize.visible(line) + "\n" for line in _lines(doc, base.label, head.label)))
    busy = [e for key in ("added", "removed", "newMedium") for e in doc[key] if e.get("inProgress")]
    if busy:
        names = sanitize.visible(", ".join(e["site"] for e in busy))
        sys.stderr.write(f"{len(busy)} site(s) in progress would be changed: {names}; merge after their runs end\n")
        return int(EXIT_IN_FLIGHT)
    return int(errors.ExitCode.OK)

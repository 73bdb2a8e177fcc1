"""`snoreloc rollback`: put back every object snoreloc changed, exactly as it was before its first change, and the
node's files the host steps changed (the DNS overrides, restarting dnsmasq) when this is the node that ran them.

Before the first write it says what the rollback will cause (which rollouts, whether the node reboots, that the host
network stays at the site); then it waits, bounded and visibly, until the cluster has settled again
(`engine.restore`), and reports what it restored and what it did not. Exit codes are those of `run`: 0 done, 75 the
wait ran out (run it again: it waits again), 69 a backup could not be read or the API is away, 70 a bug.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from snoreloc import errors
from snoreloc.cli import common

if TYPE_CHECKING:
    from snoreloc.engine import restore
    from snoreloc.siteconfig import model

HELP = "restore every object snoreloc changed to its original, delete what it created, and wait until it settles"
OUTPUTS: tuple[str, ...] = ()  # writes only the state directory under --root, through safefile
INPUTS = ("site_config",)  # the site-config it reads, which no output may be


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_cluster(parser)
    parser.add_argument(
        "--site-config",
        metavar="FILE",
        help="the site-config the relocation used, for the node's name, the operators to require and the settle "
        "budget (default: the one status.json names, when it can still be read)",
    )
    parser.add_argument(
        "--poll-interval", type=float, default=2.0, help="seconds between checks while waiting (default 2)"
    )


def _site(args: argparse.Namespace) -> model.SiteConfig | None:
    """The site-config given, else the one the last run used if it still loads, else None (the defaults)."""
    from snoreloc.engine import journal  # noqa: PLC0415 (lazy, as above)

    if args.site_config:
        return common.load_site(args.site_config)
    used = journal.read(common.make_paths(args).status).site
    if used is None or not used.path:
        return None
    try:
        return common.load_site(used.path)
    except errors.SnorelocError:
        return None  # a stick that is gone or a file since changed: the defaults serve


def announce(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def as_doc(outcome: restore.Outcome) -> dict[str, list[str]]:
    return {
        "restored": list(outcome.restored),
        "deleted": list(outcome.deleted),
        "recreated": list(outcome.recreated),
        "gone": [str(ref) for ref in outcome.namespaces],  # waited for: deleted namespaces that are gone now
        "rollouts_waited_for": list(outcome.settled),
        "not_restored": list(outcome.not_restored),
    }


def console_banner(root: str, lines: list[str]) -> None:
    """Say the rollback's outcome on the node's console banner, where the relocation's last word still stands (a
    machine that shows no snoreloc banner, not the node, gets none)."""
    from snoreloc.adapters import command, console, fs  # noqa: PLC0415 (lazy, as above)

    host = fs.HostFS(root)
    if host.exists(console.ISSUE_FILE):
        console.Banner(host, command.SubprocessRunner(enter_host=command.in_container())).show(lines)


def _banner_after(args: argparse.Namespace, exc: errors.SnorelocError | None) -> None:
    from snoreloc.engine import view  # noqa: PLC0415 (lazy, as above)

    if exc is None:
        lines = ["snoreloc: rolled back.", f"Now: {view.todo('rolled-back')}"]
    else:
        now = view.todo("rollback-failed", exit_code=int(exc.exit_code), hint=exc.hint or "")
        lines = ["snoreloc: rollback FAILED.", exc.message, f"Now: {now}"]
    console_banner(args.root, lines)


def run(args: argparse.Namespace) -> int:
    from snoreloc.engine import node, pipeline  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)
    from snoreloc.steps import context  # noqa: PLC0415 (lazy, as above)

    site = _site(args)
    clock = common.make_clock(args)
    client = common.make_client(args, clock)
    settings = context.Settings(poll_interval=args.poll_interval)
    try:
        outcome = pipeline.rollback(
            common.make_paths(args), client, clock, site=site, settings=settings, announce=announce
        )
    except errors.SnorelocError as exc:
        _banner_after(args, exc)
        raise
    finally:
        client.close()
    doc = as_doc(outcome)
    paths_ = common.make_paths(args)
    if (paths_.state_dir / "host-backups").is_dir():  # only the node that ran the host steps has any
        host = node.host_services(args.root, lambda: client, clock, lambda _line: None).host
        doc["host"] = list(node.rollback_host(paths_, host))
    _banner_after(args, None)
    if args.output == "json":
        sys.stdout.write(json.dumps({**doc, "reboot": outcome.forecast.reboot}, indent=2) + "\n")
        return 0
    for what in ("restored", "deleted", "recreated", "host"):
        sys.stdout.writelines(f"{what}: {item}\n" for item in doc.get(what, []))
    sys.stdout.writelines(f"gone: {ref} (its content removed by the cluster)\n" for ref in outcome.namespaces)
    count = len(outcome.restored) + len(outcome.deleted) + len(outcome.recreated)
    sys.stdout.write(f"rolled back {count} object(s)")
    sys.stdout.write(f"; the cluster settled ({', '.join(outcome.settled)})\n" if outcome.settled else "\n")
    if outcome.forecast.reboot:
        sys.stdout.write("the node rebooted for it (the proxy or chrony MachineConfig went back)\n")
    sys.stdout.writelines(f"not restored: {item}\n" for item in outcome.not_restored)
    return 0

"""`snoreloc fleet ...`: the fleet owner's verbs, plugged into the agent's CLI through the `snoreloc.commands` entry
point of the `snoreloc-fleet` distribution.

Each sub-verb is a module with `HELP` (one line), `add_arguments(parser)` and `run(args) -> int`, like the agent's
own verbs; `SUBCOMMANDS` lists them in the order `snoreloc fleet --help` shows them. Modules load only when their
verb is chosen, so `snoreloc --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Protocol, cast

HELP = "the fleet: render and validate site-configs in bulk, run the hub controller, read the fleet's state"

# (verb, module): one line per fleet verb.
SUBCOMMANDS: tuple[tuple[str, str], ...] = (
    ("install", "snoreloc_fleet.verbs.install"),
    ("controller", "snoreloc_fleet.verbs.controller"),
    ("make-media", "snoreloc_fleet.verbs.make_media"),
    ("import-report", "snoreloc_fleet.verbs.import_report"),
    ("admin-kubeconfig", "snoreloc_fleet.verbs.admin_kubeconfig"),
    ("render", "snoreloc_fleet.verbs.render"),
    ("validate", "snoreloc_fleet.verbs.validate"),
    ("diff", "snoreloc_fleet.verbs.diff"),
    ("status", "snoreloc_fleet.verbs.status"),
    ("why", "snoreloc_fleet.verbs.why"),
    ("report", "snoreloc_fleet.verbs.report"),
)


class _Verb(Protocol):
    HELP: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def _load(module_name: str) -> _Verb:
    return cast(_Verb, importlib.import_module(module_name))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="fleet_command", metavar="FLEET_COMMAND")
    for name, module_name in SUBCOMMANDS:
        module = _load(module_name)
        child = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(child)
        child.set_defaults(fleet_handler=module.run)


def run(args: argparse.Namespace) -> int:
    handler = getattr(args, "fleet_handler", None)
    if handler is None:
        from snoreloc.siblings import errors  # noqa: PLC0415

        raise errors.UsageError("name a fleet command: snoreloc fleet --help lists them")
    return int(handler(args))

"""Entry point of the `snoreloc` command: builds the parser from the command modules and maps errors to exits.

Each command lives in its own module under `snoreloc.cli` with `HELP` (one line), `add_arguments(parser)` and
`run(args) -> int`. Command modules import heavy libraries (the kubernetes client) inside `run`, so that
`snoreloc --version`, `status`, `analyze` and `validate` start fast. The parser is built lazily: only the chosen
verb's sub-parser gets its arguments (`--help` still lists every verb), and the entry points are scanned only when
the verb is not a built-in one; a plugged-in verb loads alone. Commands that ship outside the product layers (the
simulator's `sim` and `demo`, the fleet's `fleet`) plug in through the `snoreloc.commands` entry-point group, so
no product module imports them.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn, Protocol, TextIO, cast

import snoreloc
from snoreloc import errors, logs, redact, safefile, sanitize

LOG = logging.getLogger(__name__)

# Order is the order `--help` lists them in: the technician's verbs first, then the factory's.
BUILTIN_COMMANDS: tuple[tuple[str, str], ...] = (
    ("run", "snoreloc.cli.run"),
    ("status", "snoreloc.cli.status"),
    ("plan", "snoreloc.cli.plan"),
    ("analyze", "snoreloc.cli.analyze"),
    ("rollback", "snoreloc.cli.rollback"),
    ("kubeconfig", "snoreloc.cli.kubeconfig"),
    ("admin-access", "snoreloc.cli.admin_access"),
    ("validate", "snoreloc.cli.validate"),
    ("schema", "snoreloc.cli.schema"),
    ("render-machineconfig", "snoreloc.cli.render_machineconfig"),
    ("seal", "snoreloc.cli.seal"),
    ("make-media", "snoreloc.cli.make_media"),
    ("collect-logs", "snoreloc.cli.collect_logs"),
)

# Verbs of the separate `snoreloc-sim` and `snoreloc-fleet` distributions: absent from `--help` on a plain install,
# and explained (exit 69, not "invalid choice") if asked for anyway: (what it is, which package to install).
OPTIONAL_COMMANDS: dict[str, tuple[str, str]] = {
    "sim": ("the OpenShift simulator", "snoreloc-sim package (`pip install ./sim`"),
    "demo": ("the demo (it runs the OpenShift simulator)", "snoreloc-sim package (`pip install ./sim`"),
    "fleet": ("the fleet side (hub controller, fleet tooling)", "snoreloc-fleet package (`pip install ./fleet`"),
}


class CommandModule(Protocol):
    HELP: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def _exit_code_epilog() -> str:
    lines = ["exit codes:"]
    lines += [f"  {int(code):>3}  {text}" for code, text in errors.EXIT_CODE_HELP]
    return "\n".join(lines)


def _load(module_name: str) -> CommandModule:
    module: ModuleType = importlib.import_module(module_name)
    return cast(CommandModule, module)


def _plugin_commands(only: str | None = None) -> list[tuple[str, CommandModule]]:
    """The commands other distributions plug in; with `only`, that one alone (if installed), the others unloaded."""
    from importlib import metadata  # noqa: PLC0415 (lazy: scanning entry points costs more than most verbs)

    found = []
    for entry in metadata.entry_points(group="snoreloc.commands"):
        if only is not None and entry.name != only:
            continue
        try:
            found.append((entry.name, cast(CommandModule, entry.load())))
        except ImportError as exc:  # the simulator's extras are not installed: its commands are absent
            LOG.debug("command %s unavailable: %s", entry.name, exc)
    return found


def _verb(argv: Sequence[str]) -> str | None:
    """The verb the command line names (the first word that is not an option), if any."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def _commands(verb: str | None, argv: Sequence[str]) -> list[tuple[str, CommandModule]]:
    """The commands the parser must offer: the chosen verb alone, built-in or plugged in (`snoreloc fleet status`
    loads none of the agent's other verbs); else every verb (for `--help` or a usage error), except that
    `--version` alone needs none."""
    builtin = dict(BUILTIN_COMMANDS)
    if verb in builtin:
        return [(verb, _load(builtin[verb]))]
    if verb is None and "--version" in argv:
        return []
    plugged = _plugin_commands(only=verb) if verb is not None else []
    if plugged:
        return plugged
    everything = [(name, _load(module)) for name, module in BUILTIN_COMMANDS]
    return everything + sorted(_plugin_commands(), key=lambda item: item[0])


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on a usage error; ours is 64 (EX_USAGE), since 2 means "done with warnings" to the
    scripts that read `snoreloc status`. Subcommand parsers inherit the class."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(int(errors.ExitCode.USAGE), f"{self.prog}: error: {message}\n")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv`: the chosen verb's sub-parser fully built, the others listed (all of them if None)."""
    argv = list(argv or [])
    verb = _verb(argv)
    parser = _Parser(
        prog="snoreloc",
        description="Relocate a pre-installed Single Node OpenShift cluster to its edge site.",
        epilog=_exit_code_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"snoreloc {snoreloc.__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in _commands(verb, argv):
        child = sub.add_parser(
            name,
            help=module.HELP,
            description=module.HELP,
            epilog=_exit_code_epilog(),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        if name == verb or not argv:
            module.add_arguments(child)
        child.set_defaults(handler=module.run, files=module)
    return parser


def _report(exc: errors.SnorelocError) -> None:
    sys.stderr.write(f"error: {redact.redact(exc.message)}\n")
    for problem in getattr(exc, "problems", ()):
        sys.stderr.write(f"  {redact.redact(problem.render())}\n")
    if exc.hint:
        sys.stderr.write(f"hint: {redact.redact(exc.hint)}\n")


def _missing_optional(argv: Sequence[str]) -> str | None:
    """The optional verb the command line asks for when its distribution is not installed, else None."""
    verb = _verb(argv)
    if verb not in OPTIONAL_COMMANDS:
        return None
    return None if _plugin_commands(only=verb) else verb


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse at once an output path the safe writer would refuse at the end: a verb declares its output options in
    `OUTPUTS` and the files it reads in `INPUTS` (argument names; docs/reliability.md, "Files")."""
    module = args.files
    inputs = [value for name in getattr(module, "INPUTS", ()) if (value := getattr(args, name, None))]
    if hasattr(args, "state_dir"):  # a verb that reads the state directory reads these
        from snoreloc.engine import paths  # noqa: PLC0415 (lazy: `--version` loads no engine module)

        state = paths.Paths.under(args.root, args.state_dir)
        inputs += [state.status, state.report, state.log]
    for name in getattr(module, "OUTPUTS", ()):
        if path := getattr(args, name, None):
            safefile.check(path, inputs=inputs, shared_dir=safefile.NAMED_OUTPUT)


def _screened(stream: TextIO) -> TextIO:
    return stream if isinstance(stream, sanitize.TerminalStream) else cast(TextIO, sanitize.TerminalStream(stream))


def main(argv: Sequence[str] | None = None) -> int:
    """Run one verb; everything it prints passes through `sanitize.TerminalStream` (docs/reliability.md)."""
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _screened(sys.stdout), _screened(sys.stderr)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = streams


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    missing = _missing_optional(argv)
    if missing is not None:
        what, package = OPTIONAL_COMMANDS[missing]
        sys.stderr.write(
            f"error: `snoreloc {missing}` needs {what}, which is not installed: "
            f"install the {package} from the source tree)\n"
        )
        return int(errors.ExitCode.UNAVAILABLE)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    logs.setup(args.verbose)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return int(errors.ExitCode.USAGE)
    try:
        _check_outputs(args)
        return int(args.handler(args))
    except errors.SnorelocError as exc:
        _report(exc)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return int(errors.ExitCode.TEMPORARY)
    except Exception as exc:  # a bug: say so plainly, keep the trace in the log, never a secret
        LOG.debug("internal error", exc_info=True)
        _report(errors.InternalError(f"internal error: {type(exc).__name__}: {exc}"))
        return int(errors.ExitCode.INTERNAL)


if __name__ == "__main__":
    raise SystemExit(main())

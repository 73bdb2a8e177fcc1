"""What the verbs share: their common arguments, and how arguments become paths, a clock, a client and settings.

Every verb that touches the state directory or the cluster builds these here, once, the same way. Only the standard
library, `errors` and `engine.paths` are imported at module level: the kubernetes client, the site-config loader
and the step contract load inside the functions that need them, so `status`, `analyze` and `--version` never pay
for them.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from snoreloc import errors
from snoreloc.engine import paths

if TYPE_CHECKING:
    from snoreloc.adapters import clock, kube
    from snoreloc.engine import journal, pipeline, runner
    from snoreloc.siteconfig import model
    from snoreloc.steps import context

__all__ = [
    "DEFAULT_KUBECONFIG",
    "MAX_ROUTE_WORKERS",
    "add_cluster",
    "add_output",
    "add_run",
    "add_state",
    "exit_code",
    "load_site",
    "make_client",
    "make_clock",
    "make_options",
    "make_paths",
    "make_request",
    "make_settings",
]

DEFAULT_KUBECONFIG = (
    "/etc/kubernetes/static-pod-resources/kube-apiserver-certs/secrets/node-kubeconfigs/localhost.kubeconfig"
)
MAX_ROUTE_WORKERS = 32  # the kube client's connection pool: more workers would only churn connections


def add_state(parser: argparse.ArgumentParser) -> None:
    """Where the state lives: every verb that reads or writes status.json."""
    parser.add_argument("--root", default="/", help="host root prefix for state and lock (default /)")
    parser.add_argument("--state-dir", help="state directory (default ROOT/var/lib/snoreloc)")


def add_output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", choices=("text", "json"), default="text", help="stdout format")


def add_cluster(parser: argparse.ArgumentParser) -> None:
    """Where the cluster and the state are: run, plan and rollback."""
    parser.add_argument("--kubeconfig", default=DEFAULT_KUBECONFIG, help="kubeconfig (default: the node-local one)")
    add_state(parser)
    add_output(parser)
    parser.add_argument("--time-scale", type=float, default=1.0, help=argparse.SUPPRESS)  # demo/tests: sim speed


def _endpoint(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def _route_workers(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_ROUTE_WORKERS:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to {MAX_ROUTE_WORKERS}, got {text!r}")
    return int(text)


def add_run(parser: argparse.ArgumentParser) -> None:
    """The arguments of `run` and `plan`: the site-config, the cluster, and which steps and how."""
    parser.add_argument(
        "--site-config",
        metavar="FILE",
        help="the site-config YAML (default: /etc/snoreloc/site-config.yaml, else a device labelled relocation-config)",
    )
    parser.add_argument("--cluster-only", action="store_true", help="run only the cluster steps (no host changes)")
    add_cluster(parser)
    parser.add_argument("--ingress-endpoint", type=_endpoint, metavar="HOST:PORT", help="router address to dial")
    parser.add_argument("--step", help="run only this step")
    parser.add_argument("--from", dest="start_from", metavar="STEP", help="start at this step")
    parser.add_argument("--force", action="store_true", help="run steps even if their inputs did not change")
    parser.add_argument("--dry-run", action="store_true", help="print the plan; change nothing")
    parser.add_argument("--ignore-preflight", action="store_true", help="start even if operators are not healthy")
    parser.add_argument(
        "--route-workers", type=_route_workers, default=16, help="concurrent route updates, 1-32 (default 16)"
    )
    parser.add_argument(
        "--poll-interval", type=float, default=2.0, help="seconds between checks while waiting (default 2)"
    )


def make_paths(args: argparse.Namespace) -> paths.Paths:
    return paths.Paths.under(args.root, args.state_dir)


def make_clock(args: argparse.Namespace) -> clock.Clock:
    from snoreloc.adapters import clock  # noqa: PLC0415 (lazy, see the module docstring)

    scale = getattr(args, "time_scale", 1.0)
    return clock.SystemClock() if scale == 1.0 else clock.ScaledClock(scale)


def make_client(args: argparse.Namespace, clock_: clock.Clock) -> kube.Client:
    from snoreloc.adapters import kube  # noqa: PLC0415 (lazy, see the module docstring)

    return kube.Client.from_kubeconfig(args.kubeconfig, clock=clock_)


def load_site(path: str) -> model.SiteConfig:
    from snoreloc.siteconfig import loader  # noqa: PLC0415 (lazy, see the module docstring)

    return loader.load(path)


def make_settings(args: argparse.Namespace) -> context.Settings:
    from snoreloc.steps import context  # noqa: PLC0415 (lazy, see the module docstring)

    return context.Settings(
        ingress_endpoint=args.ingress_endpoint,
        route_workers=args.route_workers,
        poll_interval=args.poll_interval,
        ignore_preflight=args.ignore_preflight,
    )


def make_options(args: argparse.Namespace, *, dry_run: bool) -> runner.Options:
    from snoreloc.engine import runner  # noqa: PLC0415 (lazy, see the module docstring)

    return runner.Options(force=args.force, step=args.step, start_from=args.start_from, dry_run=dry_run)


def make_request(args: argparse.Namespace, *, dry_run: bool) -> pipeline.Request:
    """The cluster run `args` ask for; needs `--site-config` (only the node flow discovers one)."""
    from snoreloc.engine import pipeline  # noqa: PLC0415 (lazy, see the module docstring)

    if args.site_config is None:
        raise errors.UsageError("--site-config FILE is needed here (only `snoreloc run` on the node discovers it)")
    options = make_options(args, dry_run=dry_run)
    return pipeline.Request(load_site(args.site_config), make_paths(args), options, make_settings(args))


def exit_code(state: journal.RunState) -> int:
    """What `run` exits with once the run ended without an error: 2 when it left warnings, else 0."""
    from snoreloc.engine import journal  # noqa: PLC0415 (lazy, see the module docstring)

    warned = state is journal.RunState.DONE_WITH_WARNINGS
    return int(errors.ExitCode.DONE_WITH_WARNINGS if warned else errors.ExitCode.OK)

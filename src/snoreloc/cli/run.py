"""`snoreloc run`: relocate the cluster (with `--cluster-only`, the cluster steps against any reachable cluster).

Arguments become an engine request; the engine does the work. stdout gets the report (text or JSON), stderr the
progress lines. The kubernetes client is imported only once the command runs, so `--help` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from snoreloc import errors

HELP = "relocate the cluster to the site described by the site-config (resumes where a previous run stopped)"

DEFAULT_KUBECONFIG = (
    "/etc/kubernetes/static-pod-resources/kube-apiserver-certs/secrets/node-kubeconfigs/localhost.kubeconfig"
)


def _endpoint(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


MAX_ROUTE_WORKERS = 32  # the kube client's connection pool: more workers would only churn connections


def _route_workers(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_ROUTE_WORKERS:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to {MAX_ROUTE_WORKERS}, got {text!r}")
    return int(text)


def add_common(parser: argparse.ArgumentParser) -> None:
    """Arguments shared by run, plan, rollback and status: where the cluster and the state are."""
    parser.add_argument("--kubeconfig", default=DEFAULT_KUBECONFIG, help="kubeconfig (default: the node-local one)")
    parser.add_argument("--root", default="/", help="host root prefix for state and lock (default /)")
    parser.add_argument("--state-dir", help="state directory (default ROOT/var/lib/snoreloc)")
    parser.add_argument("--output", choices=("text", "json"), default="text", help="stdout format")
    parser.add_argument("--time-scale", type=float, default=1.0, help=argparse.SUPPRESS)  # demo/tests: sim speed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--site-config",
        metavar="FILE",
        help="the site-config YAML (default: /etc/snoreloc/site-config.yaml, else a device labelled relocation-config)",
    )
    parser.add_argument("--cluster-only", action="store_true", help="run only the cluster steps (no host changes)")
    add_common(parser)
    parser.add_argument("--ingress-endpoint", type=_endpoint, metavar="HOST:PORT", help="router address to dial")
    parser.add_argument("--step", help="run only this step")
    parser.add_argument("--from", dest="start_from", metavar="STEP", help="start at this step")
    parser.add_argument("--force", action="store_true", help="run steps even if their inputs did not change")
    parser.add_argument("--dry-run", action="store_true", help="print the plan; change nothing")
    parser.add_argument("--ignore-preflight", action="store_true", help="start even if operators are not healthy")
    parser.add_argument(
        "--route-workers", type=_route_workers, default=16, help="concurrent route updates, 1-32 (default 16)"
    )
    parser.add_argument("--poll-interval", type=float, default=5.0, help="seconds between checks while waiting")


def make_clock(args: argparse.Namespace) -> Any:
    from snoreloc.adapters import clock  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

    scale = getattr(args, "time_scale", 1.0)
    return clock.SystemClock() if scale == 1.0 else clock.ScaledClock(scale)


def make_client(args: argparse.Namespace, clock: Any) -> Any:
    from snoreloc.adapters import kube  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

    return kube.Client.from_kubeconfig(args.kubeconfig, clock=clock)


def make_paths(args: argparse.Namespace) -> Any:
    from snoreloc.engine import paths  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

    return paths.Paths.under(args.root, args.state_dir)


def load_site(path: str) -> Any:
    from snoreloc.siteconfig import loader  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

    return loader.load(path)


def request(args: argparse.Namespace, *, dry_run: bool) -> Any:
    from snoreloc.engine import pipeline, runner  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)
    from snoreloc.steps import context  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

    options = runner.Options(force=args.force, step=args.step, start_from=args.start_from, dry_run=dry_run)
    settings = context.Settings(
        ingress_endpoint=args.ingress_endpoint,
        route_workers=args.route_workers,
        poll_interval=args.poll_interval,
        ignore_preflight=args.ignore_preflight,
    )
    return pipeline.Request(load_site(args.site_config), make_paths(args), options, settings)


def _progress(step: str, what: str) -> None:
    sys.stderr.write(f"{step}: {what}\n")
    sys.stderr.flush()


def print_plans(args: argparse.Namespace, plans: Any) -> None:
    from snoreloc.engine import plan  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

    if args.output == "json":
        sys.stdout.write(json.dumps(plan.as_json(plans), indent=2) + "\n")
    else:
        sys.stdout.write(plan.render(plans))


def _print_report(args: argparse.Namespace, req: Any) -> None:
    from snoreloc.engine import report  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

    rep = json.loads(req.paths.report.read_text(encoding="utf-8"))
    sys.stdout.write(json.dumps(rep, indent=2) + "\n" if args.output == "json" else report.render(rep))


def execute(args: argparse.Namespace, *, dry_run: bool) -> int:
    from snoreloc import logs  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)
    from snoreloc.engine import journal, pipeline  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

    if not dry_run and not getattr(args, "cluster_only", True):  # `run` on the node: the whole flow
        from snoreloc.cli import run_node  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

        result = run_node.execute(args)
        return int(errors.ExitCode.DONE_WITH_WARNINGS) if result.state is journal.RunState.DONE_WITH_WARNINGS else 0
    if args.site_config is None:
        raise errors.UsageError("--site-config FILE is needed here (only `snoreloc run` on the node discovers it)")
    req = request(args, dry_run=dry_run)
    clock = make_clock(args)
    client = make_client(args, clock)
    if not dry_run:
        req.paths.ensure()
        req.paths.log.touch(mode=0o600)
        req.paths.log.chmod(0o600)  # debug detail stays root's, even redacted
        logs.add_file(str(req.paths.log))
    try:
        result = pipeline.execute(req, client, clock, progress=_progress)
    finally:
        client.close()
    if dry_run:
        print_plans(args, result.plans)
        return 0
    _print_report(args, req)
    return int(errors.ExitCode.DONE_WITH_WARNINGS) if result.state is journal.RunState.DONE_WITH_WARNINGS else 0


def run(args: argparse.Namespace) -> int:
    return execute(args, dry_run=args.dry_run)

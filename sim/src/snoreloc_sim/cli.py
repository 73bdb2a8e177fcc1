"""`snoreloc sim ...`: run the simulated SNO for manual work and the demo, and report on its CEL coverage.

A plugin command module (entry point `snoreloc.commands`, name `sim`), so the product's CLI never imports the
simulator. Sub-commands:

- `serve`: start a simulator, print where it is (kubeconfig, API URL, router port) and run until SIGINT/SIGTERM;
  with `--hub`, a plain Kubernetes hub instead (no OpenShift seed; see `snoreloc_sim.hub`).
- `cel-report`: how many CRD validation rules the simulator evaluates and which it skips, and why.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from snoreloc_sim.openshift import simulator

HELP = "run the OpenShift SNO simulator (serve) or report its CEL rule coverage (cel-report)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="sim_command", metavar="SUBCOMMAND", required=True)
    serve = sub.add_parser("serve", help="serve a simulated SNO over HTTPS until interrupted")
    serve.add_argument("--port", type=int, default=0, help="API port on 127.0.0.1 (default: a free port)")
    serve.add_argument("--router-port", type=int, default=0, help="router port on 127.0.0.1 (default: a free port)")
    serve.add_argument("--kubeconfig-out", type=Path, help="also write the kubeconfig here (mode 0600)")
    serve.add_argument("--seed", choices=("4.12", "4.14", "4.16"), default="4.16", help="OpenShift version to seed")
    serve.add_argument("--speed", type=float, default=1.0, help="simulated durations are divided by this")
    serve.add_argument("--faults", default="", help='fault spec, e.g. "seed=7,503=0.05,outage=30s@10s"')
    serve.add_argument("--routes", type=int, default=0, help="extra user routes to seed")
    serve.add_argument("--expired-kubelet-cert", action="store_true", help="seed an expired kubelet client cert")
    serve.add_argument(
        "--shelved-days",
        type=int,
        default=0,
        metavar="N",
        help="the node was sealed N days ago: every certificate is N days older (0)",
    )
    serve.add_argument("--hub", action="store_true", help="serve an empty plain Kubernetes hub (the fleet's) instead")
    serve.set_defaults(sim_handler=_serve)
    report = sub.add_parser("cel-report", help="count evaluated and skipped CRD validation rules")
    report.add_argument("--crd-dir", type=Path, help="generated CRD directory (default: the packaged one)")
    report.set_defaults(sim_handler=_cel_report)


def run(args: argparse.Namespace) -> int:
    handler = args.sim_handler
    return int(handler(args))


def _check(args: argparse.Namespace) -> str | None:
    from snoreloc_sim.kube import faults  # noqa: PLC0415

    if args.speed <= 0:
        return "--speed must be positive"
    if args.shelved_days < 0:
        return "--shelved-days must be 0 or more"
    try:
        faults.parse(args.faults)
    except ValueError as exc:
        return f"--faults: {exc}"
    return None


def _serve(args: argparse.Namespace) -> int:
    from snoreloc_sim.openshift import simulator  # noqa: PLC0415 (lazy: `snoreloc --help` stays fast)

    problem = _check(args)
    if problem:
        sys.stderr.write(f"error: {problem}\n")
        return 64
    stop = threading.Event()
    if args.hub:
        return _serve_hub(args, stop)
    sim = simulator.Simulator(
        seed=args.seed,
        speed=args.speed,
        faults=args.faults,
        routes=args.routes,
        port=args.port,
        router_port=args.router_port,
        expired_kubelet_cert=args.expired_kubelet_cert,
        shelved_days=args.shelved_days,
    )
    with sim:
        kubeconfig = _publish(sim.kubeconfig_path, args.kubeconfig_out)
        _announce(sim, kubeconfig)
        _until_signalled(stop)
    sys.stderr.write("simulator stopped\n")
    return 0


def _serve_hub(args: argparse.Namespace, stop: threading.Event) -> int:
    from snoreloc_sim.hub import simulator as hub  # noqa: PLC0415

    with hub.HubSimulator(port=args.port) as running:
        kubeconfig = _publish(running.kubeconfig_path, args.kubeconfig_out)
        lines = (f"kubeconfig: {kubeconfig}", f"api: {running.api_url}", f"try: KUBECONFIG={kubeconfig} kubectl get ns")
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()
        _until_signalled(stop)
    sys.stderr.write("hub simulator stopped\n")
    return 0


def _publish(path: Path, out: Path | None) -> Path:
    if out is None:
        return path
    from snoreloc_sim.kube import served  # noqa: PLC0415

    served.write_private(out, path.read_text(encoding="utf-8"))
    return out


def _announce(sim: simulator.Simulator, kubeconfig: Path) -> None:
    lines = (
        f"kubeconfig: {kubeconfig}",
        f"api: {sim.api_url}",
        f"router: {sim.router_address[0]}:{sim.router_address[1]}",
        f"seed: {sim.seed}  speed: {sim.speed:g}  shelved: {sim.shelved_days} days  "
        f"started in {sim.startup_seconds:.2f}s",
        f"try: KUBECONFIG={kubeconfig} kubectl get clusteroperators",
    )
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()


def _until_signalled(stop: threading.Event) -> None:
    def handle(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stop.wait(0.5):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _cel_report(args: argparse.Namespace) -> int:
    try:
        from snoreloc_sim.kube import validation  # noqa: PLC0415 (lazy: cel-python is heavy)
        from snoreloc_sim.openshift import crds  # noqa: PLC0415
    except ImportError as exc:
        sys.stderr.write(f"error: the simulator's validation module is unavailable: {exc}\n")
        return 69
    report = validation.cel_report(args.crd_dir or crds.DIR)
    sys.stdout.write(str(report.render()).rstrip("\n") + "\n")
    return 0

"""`snoreloc seal`: the factory's last step (checks, arm snoreloc.service, disable kubelet, clear pods, power off)."""

from __future__ import annotations

import argparse
import sys

from snoreloc import errors

HELP = "check the node is ready to ship, arm snoreloc for the site, disable kubelet, remove pods, optionally power off"
OUTPUTS: tuple[str, ...] = ()  # writes only host files under --root, through HostFS (safefile)
INPUTS: tuple[str, ...] = ()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", default="/", help="host root (default /; /host in the container)")
    parser.add_argument("--kubeconfig", help="kubeconfig (default: the node-local one under --root)")
    parser.add_argument("--shelf-days", type=int, default=30, help="days the node may sit before the site (30)")
    parser.add_argument(
        "--strict", action="store_true", help="refuse, not warn, when a certificate expires on the shelf"
    )
    parser.add_argument("--pool", default="master", help="MachineConfigPool to check (default: master)")
    parser.add_argument("--machineconfig", default="99-master-snoreloc", help="factory MachineConfig name")
    parser.add_argument(
        "--allow-factory-node-ip",
        action="store_true",
        help="ship a node whose kubelet/CRI-O node IP is the factory one (it is lost at a site on another network)",
    )
    parser.add_argument("--poweroff", action="store_true", help="power the node off once sealed")
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation (required off a terminal)")


def _confirm(args: argparse.Namespace) -> None:
    if args.yes:
        return
    if not sys.stdin.isatty():
        raise errors.UsageError("seal stops the cluster on this node; pass --yes to confirm off a terminal")
    sys.stderr.write("seal disables kubelet and removes every pod on this node. Continue? [y/N] ")
    if input().strip().lower() not in {"y", "yes"}:
        raise errors.UsageError("seal cancelled")


def run(args: argparse.Namespace) -> int:
    from snoreloc.adapters import clock, command, fs, kube  # noqa: PLC0415 (heavy: the kubernetes client)
    from snoreloc.factory import seal  # noqa: PLC0415
    from snoreloc.host import kubelet  # noqa: PLC0415

    _confirm(args)
    node = seal.Node(
        fs.HostFS(args.root), command.SubprocessRunner(enter_host=command.in_container()), clock.SystemClock()
    )
    facts = None
    if not node.host.exists(kubelet.SEAL_MARKER):
        kubeconfig = args.kubeconfig or str(node.host.path(kube.NODE_KUBECONFIG))
        facts = seal.KubeClusterFacts(kube.Client.from_kubeconfig(kubeconfig, clock=node.clk))
    options = seal.Options(
        args.shelf_days, args.strict, args.pool, args.machineconfig, args.poweroff, args.allow_factory_node_ip
    )
    sealed = seal.seal(node, facts, options)
    for warning in sealed.warnings:
        sys.stderr.write(f"warning: {warning.render()}\n")
    marker = sealed.marker
    sys.stderr.write(f"sealed: node {marker.get('node')} of {marker.get('domain')} is ready to ship\n")
    return 0

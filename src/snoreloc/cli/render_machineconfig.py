"""`snoreloc render-machineconfig`: print the factory MachineConfig (apply it with `oc apply -f -`).

A node without a fixed internal address keeps kubelet's node IP on the factory network, which is gone at the site:
the node would come up with a node IP that no longer exists. So an internal address is required, and leaving it
out takes a flag that says so.
"""

from __future__ import annotations

import argparse
import sys

from snoreloc import errors
from snoreloc.factory import machineconfig

HELP = "print the factory MachineConfig (internal IP dispatcher, kubelet/CRI-O drop-ins, the snoreloc unit)"
OUTPUTS: tuple[str, ...] = ()  # writes nothing (stdout only)
INPUTS: tuple[str, ...] = ()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--internal-ip", metavar="CIDR", help="fixed internal IPv4 address on the interface")
    parser.add_argument("--internal-ipv6", metavar="CIDR", help="fixed internal IPv6 address on the interface")
    parser.add_argument(
        "--ipv6-primary", action="store_true", help="dual stack: make the IPv6 address kubelet's first node IP"
    )
    parser.add_argument(
        "--no-internal-ip",
        action="store_true",
        help="render no internal address: kubelet and CRI-O keep the factory node IP, which the node LOSES at a "
        "site on another network (only for sites that keep the factory addressing)",
    )
    parser.add_argument("--interface", default="br-ex", help="interface that carries it (default: br-ex)")
    runtime = parser.add_mutually_exclusive_group(required=True)
    runtime.add_argument("--image", metavar="REF", help="run the agent from this container image (pull it first)")
    runtime.add_argument("--host-install", action="store_true", help="run an installed /usr/local/bin/snoreloc")
    parser.add_argument("--role", default="master", help="MachineConfigPool role label (default: master)")
    parser.add_argument("--name", help="MachineConfig name (default: 99-<role>-snoreloc)")
    parser.add_argument("--agent-args", default="", help="extra arguments for `snoreloc run` at the site")
    parser.add_argument(
        "--node-dns",
        metavar="CLUSTER_DOMAIN",
        help="also give the node its own DNS for this install-time cluster domain (only for a cluster without the "
        "SNO dnsmasq configuration, as `seal` reports; one reboot at the factory, none at the site)",
    )


def options_from(args: argparse.Namespace) -> machineconfig.FactoryOptions:
    given = bool(args.internal_ip or args.internal_ipv6)
    if given == bool(args.no_internal_ip):
        raise errors.UsageError(
            "give --internal-ip and/or --internal-ipv6 (the node's fixed node IP), or --no-internal-ip to ship a "
            "node whose kubelet node IP is lost when the site network replaces the factory one"
            if not given
            else "--no-internal-ip cannot be combined with --internal-ip/--internal-ipv6"
        )
    addresses = []
    if args.internal_ip:
        addresses.append(machineconfig.parse_address(args.internal_ip, 4))
    if args.internal_ipv6:
        addresses.append(machineconfig.parse_address(args.internal_ipv6, 6))
    return machineconfig.FactoryOptions(
        internal_ips=tuple(addresses),
        ipv6_primary=args.ipv6_primary,
        interface=args.interface,
        runtime=machineconfig.Runtime.HOST if args.host_install else machineconfig.Runtime.CONTAINER,
        image=args.image,
        role=args.role,
        name=args.name,
        args=args.agent_args,
        node_dns=args.node_dns,
    )


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(machineconfig.render_yaml(options_from(args)))
    return 0

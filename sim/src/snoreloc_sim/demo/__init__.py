"""`snoreloc demo`: a whole relocation end to end on this machine, in under a minute, changing nothing here.

This package sits outside the product layers: it is the only code that imports both the agent and the simulator.
The command module stays light (the kubernetes client and the simulator load only when the demo runs), so that
`snoreloc --version` and `snoreloc validate` start fast; the work is in `snoreloc_sim.demo.flow`.
"""

from __future__ import annotations

import argparse
import os
import tempfile

DEFAULT_SVG = os.path.join(tempfile.gettempdir(), "snoreloc-demo-timeline.svg")
FLEET_SITES = 50  # `snoreloc demo --fleet` (and `make demo-fleet`) without a number
FLEET_NODES = 3  # how many of the fleet's nodes relocate, without --nodes
FLEET_BMC_SITES = 2  # how many of those are delivered through their (emulated) BMC, without --bmc-sites
HELP = "relocate a simulated factory SNO end to end on this machine (host steps on fakes), then print the report"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--speed", type=float, default=20.0, help="how much faster than a real SNO (default 20)")
    parser.add_argument("--seed", choices=("4.12", "4.14", "4.16"), default="4.16", help="factory cluster version")
    parser.add_argument("--routes", type=int, default=8, help="extra user routes on the cluster (default 8)")
    parser.add_argument("--keep", metavar="DIR", help="keep the demo's host root and state in DIR")
    parser.add_argument(
        "--page-port", type=int, default=0, help="loopback port of the progress page (default: any free port)"
    )
    parser.add_argument(
        "--svg", default=DEFAULT_SVG, help=f"where to write the run's timeline picture (default {DEFAULT_SVG})"
    )
    parser.add_argument("--output", choices=("text", "json"), default="text", help="report format on stdout")
    parser.add_argument(
        "--fleet",
        type=int,
        nargs="?",
        const=FLEET_SITES,
        metavar="N",
        help=f"the fleet instead: a simulated hub, N generated sites (default {FLEET_SITES}) rendered and validated "
        "(one invalid), their sticks, --nodes of them relocating and reporting, then the fleet's state",
    )
    parser.add_argument(
        "--nodes",
        type=int,
        default=FLEET_NODES,
        help=f"with --fleet: how many sites' nodes relocate and report (default {FLEET_NODES})",
    )
    parser.add_argument(
        "--bmc-sites",
        type=int,
        default=FLEET_BMC_SITES,
        help=f"with --fleet: how many of those nodes get their medium through their server's BMC (sushy-tools' "
        f"Redfish emulator) instead of a stick (default {FLEET_BMC_SITES})",
    )


def run(args: argparse.Namespace) -> int:
    if args.fleet is not None:
        from snoreloc_sim.demo import fleet  # noqa: PLC0415 (lazy, as flow)

        return fleet.run(args)
    from snoreloc_sim.demo import flow  # noqa: PLC0415 (lazy: the simulator and the kubernetes client are heavy)

    return flow.run(args)

"""How the fleet's own verbs (make-media, import-report, install) reach the hub: the `--kubeconfig` and
`--namespace` arguments and the client they make, and the Sites' resource every reader and the controller address.
The controller has its own client (`controller.operator`)."""

from __future__ import annotations

import argparse
import functools
import os
import pathlib

from snoreloc.siblings import clock, kube

DEFAULT_KUBECONFIG = "~/.kube/config"


def add_arguments(parser: argparse.ArgumentParser, *, namespace: bool = True) -> None:
    parser.add_argument(
        "--kubeconfig",
        default=os.environ.get("KUBECONFIG", DEFAULT_KUBECONFIG),
        help="the hub's kubeconfig (default: $KUBECONFIG, else ~/.kube/config)",
    )
    if namespace:
        parser.add_argument("-n", "--namespace", default="default", help="the Sites' namespace (default: default)")


def client(args: argparse.Namespace) -> kube.Client:
    path = str(pathlib.Path(args.kubeconfig).expanduser())
    return kube.Client.from_kubeconfig(path, clock=clock.SystemClock())


@functools.cache
def sites() -> kube.Resource:
    """The Sites' resource, one definition for the controller and every verb. A function, not a constant: verbs
    import this module while `snoreloc --help` builds their parsers, and the Site's names (`resource.site`) load the
    node's report module, which help does not need."""
    from snoreloc_fleet.resource import site  # noqa: PLC0415

    return kube.Resource(site.GROUP, site.VERSION, site.PLURAL, site.KIND, namespaced=True)

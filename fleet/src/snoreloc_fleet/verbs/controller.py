"""`snoreloc fleet controller`: run the hub controller (the container's entry point, `deploy/deployment.yaml`).

In the hub it uses its ServiceAccount (in-cluster); elsewhere `--kubeconfig`. Nodes reach the hub at another
address than the controller does, so that address (and, when the cluster's own CA does not verify it, its CA) is
given by `--hub-url`/`--hub-ca` or by a directory holding `url` and optionally `ca.crt` (`--hub-config`, the
ConfigMap the Deployment mounts). Without either, the controller's own API address and CA are used (fine for a
lab hub that sites reach directly).

Its log (every logger: its own, kopf's, the kube client's) goes through the agent's redacting handler
(`snoreloc.logs.make_handler`): an API refusal quotes a Site's fields, which may carry a credential or a control
character.
"""

from __future__ import annotations

import argparse
import logging
import pathlib
import sys
from typing import TYPE_CHECKING, TextIO

from snoreloc.siblings import errors, kube, logs, safefile

if TYPE_CHECKING:
    from snoreloc_fleet.controller import bmccycle
    from snoreloc_fleet.controller.metrics import FleetMetrics

IMAGE_KEY_SECRET = "snoreloc-fleet/snoreloc-fleet-image-key"  # noqa: S105 (a Secret's name)
HELP = "run the hub controller: validate Sites, issue their reporting credentials, keep their status"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", help="the controller's kubeconfig (default: in-cluster ServiceAccount)")
    parser.add_argument("--hub-url", help="the address the sites' nodes reach this hub's API at")
    parser.add_argument("--hub-ca", metavar="FILE", help="the CA (PEM) that verifies --hub-url")
    parser.add_argument("--hub-config", metavar="DIR", help="a directory with `url` and optionally `ca.crt`")
    parser.add_argument("--namespace", action="append", default=[], help="watch only this namespace (repeatable)")
    parser.add_argument("--sweep", type=float, default=300.0, help="seconds between sweeps over every Site")
    parser.add_argument("--stale-after", type=float, default=900.0, help="seconds of silence that make a run Stale")
    parser.add_argument("--qps", type=float, default=20.0, help="API writes per second, on average")
    parser.add_argument("--burst", type=int, default=40, help="API writes at once")
    parser.add_argument("--workers", type=int, default=8, help="Sites reconciled at once (threads; default 8)")
    parser.add_argument(
        "--metrics-port", type=int, default=None, help="serve Prometheus metrics on this port (/metrics; default: off)"
    )
    images = parser.add_argument_group("BMC delivery (spec.delivery.method: bmc; off unless --image-server-address)")
    images.add_argument("--image-server-address", metavar="HOST:PORT", help="serve site images here (HTTPS)")
    images.add_argument("--image-url-base", metavar="URL", help="https://... where BMCs reach the image server")
    images.add_argument("--image-server-cert", metavar="FILE", help="the image server's certificate chain (PEM)")
    images.add_argument("--image-server-key", metavar="FILE", help="the image server's private key (PEM)")
    images.add_argument(
        "--image-key-secret",
        metavar="NAMESPACE/NAME",
        default=IMAGE_KEY_SECRET,
        help=f"the Secret holding the key that signs image URLs, made when missing (default {IMAGE_KEY_SECRET})",
    )
    images.add_argument(
        "--bmc-workers",
        type=int,
        default=4,
        metavar="N",
        help="BMC passes at once (threads: each waits on a BMC for seconds; default 4)",
    )
    images.add_argument(
        "--bmc-read-timeout",
        type=float,
        default=7200.0,
        metavar="SECONDS",
        help="how long an inserted image waits for its node's first report before it is ejected (default 7200)",
    )


def _read(path: pathlib.Path | str, kind: safefile.Kind) -> bytes:
    """A file the controller is given (a mounted ConfigMap's keys are links: judged by their target), bounded."""
    try:
        return safefile.read(path, kind, follow=True)
    except safefile.Unfit as exc:
        raise errors.ConfigError(f"{path} cannot be used: {exc}") from None
    except OSError as exc:
        raise errors.UnavailableError(f"cannot read {path}: {exc.strerror}") from None


def hub_address(args: argparse.Namespace, own_url: str, own_ca: bytes) -> tuple[str, bytes]:
    """Where nodes reach the hub, and the CA that verifies it."""
    url, ca = args.hub_url, _read(args.hub_ca, safefile.CA_BUNDLE) if args.hub_ca else None
    if args.hub_config:
        directory = pathlib.Path(args.hub_config)
        url = url or _read(directory / "url", safefile.NOTE).decode("utf-8", "replace").strip()
        if ca is None and (directory / "ca.crt").is_file():
            ca = _read(directory / "ca.crt", safefile.CA_BUNDLE)
    if not url:
        url = own_url
    if not url.startswith("https://"):
        raise errors.UsageError(f"the hub URL must be https://..., got {url!r}")
    return url, ca or own_ca


def log_to(stream: TextIO) -> None:
    """Every log record of the process at INFO and above to `stream`, secrets masked and control characters shown
    as escapes; kopf's line per event left out (the reconcile says what changed)."""
    logging.basicConfig(level=logging.INFO, handlers=[logs.make_handler(stream)], force=True)
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)


def run(args: argparse.Namespace) -> int:
    from snoreloc_fleet.controller import operator, reconcile  # noqa: PLC0415
    from snoreloc_fleet.hub import credentials  # noqa: PLC0415

    for flag in ("workers", "bmc_workers"):
        if getattr(args, flag) < 1:
            raise errors.UsageError(f"--{flag.replace('_', '-')} must be at least 1, got {getattr(args, flag)}")
    log_to(sys.stderr)
    configuration = operator.configuration_for(args.kubeconfig)
    own_ca = _read(configuration.ssl_ca_cert, safefile.CA_BUNDLE) if configuration.ssl_ca_cert else b""
    url, ca = hub_address(args, configuration.host, own_ca)
    options = operator.Options(
        config=reconcile.Config(credentials.Hub(url, ca), stale_after=args.stale_after),
        kubeconfig=args.kubeconfig,
        namespaces=tuple(args.namespace),
        sweep=args.sweep,
        qps=args.qps,
        burst=args.burst,
        workers=args.workers,
        bmc_workers=args.bmc_workers,
        metrics=_metrics(args.metrics_port),
        image_server=image_server(args),
    )
    operator.run(options)
    return 0


def image_server(args: argparse.Namespace) -> bmccycle.ServerOptions | None:
    """The image server BMC delivery needs (None: not asked for; BMC Sites then say so in their conditions)."""
    from snoreloc_fleet.controller import bmccycle  # noqa: PLC0415
    from snoreloc_fleet.resource import siteinput  # noqa: PLC0415

    if not args.image_server_address:
        return None
    host, _, port = str(args.image_server_address).rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise errors.UsageError(f"--image-server-address must be HOST:PORT, got {args.image_server_address!r}")
    base = str(args.image_url_base or "")
    if not base.startswith("https://"):
        raise errors.UsageError("--image-url-base must be the https://... address BMCs reach the image server at")
    if not (args.image_server_cert and args.image_server_key):
        raise errors.UsageError("the image server needs --image-server-cert and --image-server-key (TLS)")
    namespace, _, name = str(args.image_key_secret).partition("/")
    if siteinput.object_name_problem(namespace) or siteinput.object_name_problem(name):
        raise errors.UsageError(f"--image-key-secret must be NAMESPACE/NAME, got {args.image_key_secret!r}")
    if args.bmc_read_timeout <= 0:
        raise errors.UsageError(f"--bmc-read-timeout must be positive, got {args.bmc_read_timeout:g}")
    return bmccycle.ServerOptions(
        host.strip("[]"),
        int(port),
        base,
        pathlib.Path(args.image_server_cert),
        pathlib.Path(args.image_server_key),
        kube.Ref(kube.SECRETS, name, namespace),
        args.bmc_read_timeout,
    )


def _metrics(port: int | None) -> FleetMetrics | None:
    """The controller's metrics, served on `port` for as long as the process runs (None: not asked for)."""
    if port is None:
        return None
    from snoreloc_fleet.controller import metrics  # noqa: PLC0415

    fleet_metrics = metrics.FleetMetrics()
    metrics.serve(fleet_metrics, port)
    return fleet_metrics

"""`snoreloc kubeconfig`: a kubeconfig for the API under its new name, for the administrator after a relocation.

The server is `https://api.<domain>:6443` (the domain from `--site-config`, else from the site-config the last run
recorded), the CA bundle the one that verifies the certificate the API now serves (`engine.admin_kubeconfig`), the
credentials those of `--from`. The output is itself a credential: it goes to `--output FILE` (mode 0600), or to
stdout when that is a pipe or a file; to a terminal only with `--stdout`. stderr says what was written, never a
credential.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from snoreloc import errors, safefile
from snoreloc.cli import common

if TYPE_CHECKING:
    from snoreloc.engine import admin_kubeconfig
    from snoreloc.siteconfig import model

HELP = "write a kubeconfig for the API under its new name (api.<domain>:6443) with the CA that verifies it"
OUTPUTS = ("output",)  # argument names of the files this verb writes (checked before it runs: cli.main)
INPUTS = ("from_kubeconfig", "kubeconfig", "site_config", "ca_file")  # the files it reads, which no output may be


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host.strip("[]") or not port.isdigit() or not 0 < int(port) < 65536 or "/" in text:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT (e.g. 192.0.2.10:6443), got {text!r}")
    return host.strip("[]"), int(port)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from",
        dest="from_kubeconfig",
        metavar="KUBECONFIG",
        default=common.DEFAULT_KUBECONFIG,
        help="the kubeconfig whose credentials to use (default: the node-local one)",
    )
    parser.add_argument("--context", help="the context of --from to take the user from (default: its current one)")
    parser.add_argument(
        "--kubeconfig",
        default=common.DEFAULT_KUBECONFIG,
        help="how snoreloc reaches the cluster to read the signer and check the API (default: the node-local one)",
    )
    parser.add_argument("--site-config", metavar="FILE", help="the site-config (default: the one the last run used)")
    common.add_state(parser)
    parser.add_argument("--ca-file", metavar="FILE", help="trust this CA bundle (PEM) instead of finding it")
    parser.add_argument(
        "--system-trust", action="store_true", help="carry no CA: clients use their system's store (a public CA)"
    )
    parser.add_argument(
        "--address",
        type=_address,
        metavar="HOST:PORT",
        help="dial here instead of api.<domain>:6443, still verifying the name (while the site's DNS lacks it)",
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write here (mode 0600) instead of stdout")
    parser.add_argument("--stdout", action="store_true", help="print to stdout even when it is a terminal")


def _site(args: argparse.Namespace) -> model.SiteConfig:
    from snoreloc.engine import journal  # noqa: PLC0415 (lazy: `--help` builds this parser too)

    if args.site_config:
        return common.load_site(args.site_config)
    the_paths = common.make_paths(args)
    recorded = journal.read(the_paths.status).site
    if recorded is None or not recorded.path or not Path(recorded.path).is_file():
        raise errors.UsageError(
            f"no site-config given, and {the_paths.status} names none that is still there",
            hint="Pass --site-config FILE (the site-config of the relocation).",
        )
    return common.load_site(recorded.path)


def _refuse_terminal(args: argparse.Namespace) -> None:
    if args.output is None and not args.stdout and sys.stdout.isatty():
        raise errors.UsageError(
            "not printing a kubeconfig, which holds credentials, to a terminal",
            hint="Write it to a file with --output FILE (mode 0600), or pass --stdout to print it anyway.",
        )


def _read_ca(path: str | None) -> bytes | None:
    if path is None:
        return None
    try:
        return safefile.read(path, safefile.CA_BUNDLE, follow=True)
    except OSError as exc:
        raise errors.UsageError(f"--ca-file {path}: {exc.strerror}", hint="Give a readable PEM file.") from None
    except safefile.Unfit as exc:
        raise errors.UsageError(f"--ca-file {path}: {exc}", hint="Give a readable PEM file.") from None


def _inputs(args: argparse.Namespace) -> list[str]:
    """The files this verb reads, which `--output` may not overwrite."""
    named = (args.from_kubeconfig, args.kubeconfig, args.site_config, args.ca_file)
    return [path for path in named if path]


def _trust_and_address(
    args: argparse.Namespace, site: model.SiteConfig
) -> tuple[admin_kubeconfig.Trust, tuple[str, int]]:
    """The CA bundle, and where to check it against: `--address`, else the API `--kubeconfig` names. The cluster is
    read only when needed (our signer, or no `--address`), so an administrator elsewhere needs no kubeconfig of it."""
    from snoreloc.engine import admin_kubeconfig  # noqa: PLC0415 (lazy, as in `run`)

    ca_file = _read_ca(args.ca_file)
    if args.address and (ca_file is not None or args.system_trust or site.certificates.api is not None):
        return admin_kubeconfig.trust(site, None, ca_file, args.system_trust), args.address
    client = common.make_client(args, common.make_clock(args))
    try:
        return admin_kubeconfig.trust(site, client, ca_file, args.system_trust), args.address or client.endpoint
    finally:
        client.close()


def run(args: argparse.Namespace) -> int:
    from snoreloc.engine import admin_kubeconfig  # noqa: PLC0415 (lazy: keeps the kubernetes client off `--help`)

    if args.ca_file and args.system_trust:
        raise errors.UsageError("--ca-file and --system-trust exclude each other")
    _refuse_terminal(args)
    site = _site(args)
    creds = admin_kubeconfig.credentials(Path(args.from_kubeconfig), args.context)
    found, address = _trust_and_address(args, site)
    admin_kubeconfig.check_served(address, site, found)
    text = admin_kubeconfig.render(admin_kubeconfig.kubeconfig(site, found, creds, args.address))
    if args.output:
        safefile.write(args.output, text, inputs=_inputs(args), shared_dir=safefile.NAMED_OUTPUT)
    else:
        sys.stdout.write(text)
    _say(args, site, found, creds)
    return int(errors.ExitCode.OK)


def _say(
    args: argparse.Namespace, site: model.SiteConfig, found: admin_kubeconfig.Trust, creds: admin_kubeconfig.Credentials
) -> None:
    from snoreloc.engine import admin_kubeconfig  # noqa: PLC0415 (lazy, as above)

    where = f"written to {args.output} (mode 0600)" if args.output else "printed"
    server = admin_kubeconfig.server_url(site, args.address)
    server += f" as {site.api_host}" if args.address else ""
    sys.stderr.write(
        f"kubeconfig for {server} {where}: CA from {found.source}; "
        f"user {creds.name} ({creds.kind}) from {creds.origin}\n"
    )
    old = admin_kubeconfig.old_name(creds, site)
    if old is not None:
        sys.stderr.write(f"{creds.origin} names the API as {old}, the factory's name: use the new kubeconfig\n")

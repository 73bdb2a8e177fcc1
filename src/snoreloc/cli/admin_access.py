"""`snoreloc admin-access`: the site owner's admin credentials, on the owner's machine, with no hub (issue 32).

`init --dir DIR` makes the owner's admin CA and client certificate (keys 0600 in DIR, never in the site-config) and
prints the CA certificate's path for `spec.adminAccess.clientCA`. `kubeconfig --dir DIR --server URL --api-ca FILE
--output FILE` writes the owner's admin kubeconfig (0600) once the site runs under its new name. The logic is
`engine.owner_access`; docs/access.md walks the handover.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from snoreloc import errors, safefile

HELP = "make the site owner's admin CA and client certificate (keys stay here), or write the owner's admin kubeconfig"
OUTPUTS = ("output",)  # argument names of the files this verb writes (checked before it runs: cli.main)
INPUTS = ("api_ca",)  # the files it reads, which no output may be (the --dir files are added in `run`)
ACTIONS = ("init", "kubeconfig")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=ACTIONS, help="init: make the credentials; kubeconfig: write the kubeconfig")
    parser.add_argument("--dir", required=True, metavar="DIR", help="the owner's directory of admin credentials")
    parser.add_argument("--name", default="site", help="the site's name: in the CA's name and the kubeconfig's")
    parser.add_argument("--server", metavar="URL", help="kubeconfig: the API, https://api.<domain>[:6443]")
    parser.add_argument("--api-ca", metavar="FILE", help="kubeconfig: the CA bundle that verifies the API (PEM)")
    parser.add_argument("-o", "--output", metavar="FILE", help="kubeconfig: write here (mode 0600)")


def _init(args: argparse.Namespace) -> int:
    from snoreloc.adapters import clock  # noqa: PLC0415 (lazy: `--help` builds this parser too)
    from snoreloc.engine import owner_access  # noqa: PLC0415

    made = owner_access.init(Path(args.dir), name=args.name, now=clock.SystemClock().now())
    sys.stderr.write(
        f"made the owner's admin CA and client certificate in {made.directory} (keys 0600: keep them there)\n"
        f"reference the CA certificate from the site-config: spec.adminAccess.clientCA: {{file: {made.ca_cert.name}}}"
        f" (copy it beside the site-config; it is public; sha256 {made.fingerprint})\n"
    )
    sys.stdout.write(f"{made.ca_cert}\n")
    return int(errors.ExitCode.OK)


def _kubeconfig(args: argparse.Namespace) -> int:
    from snoreloc.engine import owner_access  # noqa: PLC0415 (lazy, as above)

    missing = [
        flag
        for flag, value in (("--server", args.server), ("--api-ca", args.api_ca), ("--output", args.output))
        if not value
    ]
    if missing:
        raise errors.UsageError(f"kubeconfig needs {', '.join(missing)}", hint="See `snoreloc admin-access --help`.")
    try:
        api_ca = safefile.read(args.api_ca, safefile.CA_BUNDLE, follow=True)
    except (OSError, safefile.Unfit) as exc:
        raise errors.UsageError(f"--api-ca {args.api_ca}: {exc}", hint="Give a readable PEM file.") from None
    directory = Path(args.dir)
    text = owner_access.kubeconfig(directory, args.server, api_ca, name=args.name)
    inputs = [args.api_ca, directory / owner_access.CLIENT_CERT, directory / owner_access.CLIENT_KEY]
    safefile.write(args.output, text, inputs=inputs, shared_dir=safefile.NAMED_OUTPUT)
    sys.stderr.write(
        f"owner's admin kubeconfig for {args.server} written to {args.output} (mode 0600): "
        f"user {owner_access.USER} (client certificate from {directory}), CA from --api-ca\n"
    )
    return int(errors.ExitCode.OK)


def run(args: argparse.Namespace) -> int:
    return _init(args) if args.action == "init" else _kubeconfig(args)

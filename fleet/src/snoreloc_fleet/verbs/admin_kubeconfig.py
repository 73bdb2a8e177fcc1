"""`snoreloc fleet admin-kubeconfig SITE --output FILE`: the site's own admin kubeconfig, handed to its owner.

The hub made the site's admin CA and client certificate (`hub.adminaccess`, Secret `SITE-admin`) and put only the
CA's certificate on the stick; once the node has relocated, that certificate is the only admin signer the site's
API trusts, and this verb assembles the kubeconfig the owner uses: `https://api.<domain>:6443`, the CA that
verifies that API's serving certificate, and the client certificate and key from the Secret.

Where the API's CA comes from: `hub.handover` (the CA the Site's site-config declares for the API, as the node's
report carries none); a Site that lets the node issue its own API certificate has no CA the hub knows: exit 75.

The file is written through the agent's one writer (`snoreloc.safefile`: 0600 from its first byte, replaced
atomically, never through a link); `--print` writes the kubeconfig to standard output instead, only when asked.
`--kubeadmin-password FILE` also writes the site's new kubeadmin password (0600), when the Site asked for one.
Exit 75 (with a hint) while the keys are not made yet or the site has not reported a finished relocation; 69 when
the Site does not exist; 65 when it does not ask the hub for admin access.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from snoreloc.siblings import errors

HELP = "the site's own admin kubeconfig (hub-made keys), once the site has relocated: to a 0600 file or printed"
OUTPUTS = ("output", "kubeadmin_password")  # argument names of the files this verb writes (tests/reliability)
INPUTS = ("kubeconfig",)  # argument names of the files it reads, which no output may be


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from snoreloc_fleet.hub import hubaccess  # noqa: PLC0415 (lazy: `snoreloc --help` builds this parser)

    parser.add_argument("site", metavar="SITE", help="the Site's name")
    hubaccess.add_arguments(parser)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--output", "-o", type=pathlib.Path, metavar="FILE", help="write it to FILE (0600)")
    where.add_argument("--print", action="store_true", help="print it to standard output (it holds a private key)")
    parser.add_argument(
        "--kubeadmin-password",
        type=pathlib.Path,
        metavar="FILE",
        help="also write the site's new kubeadmin password to FILE (0600; the Site must ask for one)",
    )


def run(args: argparse.Namespace) -> int:
    from snoreloc.siblings import safefile  # noqa: PLC0415
    from snoreloc_fleet.hub import handover, hubaccess  # noqa: PLC0415

    inputs = [path for name in INPUTS if (path := getattr(args, name, None))]
    outputs = [path for path in (args.output, args.kubeadmin_password) if path is not None]
    if len(outputs) == 2 and outputs[0].absolute() == outputs[1].absolute():
        raise errors.UsageError("--output and --kubeadmin-password name the same file: give two")
    for path in outputs:
        safefile.check(path, inputs=inputs, shared_dir=safefile.NAMED_OUTPUT)  # before reading the hub
    client = hubaccess.client(args)
    try:
        text, password = handover.assemble(
            client, args.namespace, args.site, password=args.kubeadmin_password is not None
        )
    finally:
        client.close()
    if password is not None:
        safefile.write(args.kubeadmin_password, password, mode=0o600, inputs=inputs, shared_dir=safefile.NAMED_OUTPUT)
        sys.stderr.write(f"wrote {args.kubeadmin_password} (0600): site {args.site}'s kubeadmin password\n")
    if args.print:
        sys.stdout.write(text.decode())
        return int(errors.ExitCode.OK)
    safefile.write(args.output, text, mode=0o600, inputs=inputs, shared_dir=safefile.NAMED_OUTPUT)
    sys.stdout.write(f"wrote {args.output} (0600): site {args.site}'s admin kubeconfig, for api of its domain\n")
    return int(errors.ExitCode.OK)

"""`snoreloc fleet admin-kubeconfig SITE --output FILE`: the site's own admin kubeconfig, handed to its owner.

The hub made the site's admin CA and client certificate (`hub.adminaccess`, Secret `SITE-admin`) and put only the
CA's certificate on the stick; once the node has relocated, that certificate is the only admin signer the site's
API trusts, and this verb assembles the kubeconfig the owner uses: `https://api.<domain>:6443`, the CA that
verifies that API's serving certificate, and the client certificate and key from the Secret.

Where the API's CA comes from: the node's report (`status.agent`) carries no certificate today, so it is the CA
the Site's site-config declares for the API (`spec.siteConfig.certificates.api.certificate`: the last certificate
of its chain). A Site that lets the node issue its own API certificate has no CA the hub knows: exit 75 saying so.

The file is written through the agent's one writer (`snoreloc.safefile`: 0600 from its first byte, replaced
atomically, never through a link); `--print` writes the kubeconfig to standard output instead, only when asked.
`--kubeadmin-password FILE` also writes the site's new kubeadmin password (0600), when the Site asked for one.
Exit 75 (with a hint) while the keys are not made yet or the site has not reported a finished relocation; 69 when
the Site does not exist; 65 when it does not ask the hub for admin access.
"""

from __future__ import annotations

import argparse
import base64
import pathlib
import sys
from collections.abc import Mapping
from typing import Any

import yaml

from snoreloc.siblings import errors, kube

HELP = "the site's own admin kubeconfig (hub-made keys), once the site has relocated: to a 0600 file or printed"
OUTPUTS = ("output", "kubeadmin_password")  # argument names of the files this verb writes (tests/reliability)
INPUTS = ("kubeconfig",)  # argument names of the files it reads, which no output may be
API_PORT = 6443


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


def api_ca(client: kube.Client, obj: Mapping[str, Any]) -> bytes | None:
    """The CA that verifies the site's API serving certificate, as the Site's site-config declares it (the last
    certificate of `certificates.api.certificate`'s chain); None when the site-config declares none."""
    from snoreloc.siblings import certs  # noqa: PLC0415
    from snoreloc_fleet.hub import sitemedium  # noqa: PLC0415
    from snoreloc_fleet.resource import site  # noqa: PLC0415

    declared = ((site.view(obj).site_config.get("certificates") or {}).get("api") or {}).get("certificate")
    if not isinstance(declared, Mapping):
        return None
    pem: bytes | None = None
    if isinstance(declared.get("pem"), str):
        pem = declared["pem"].encode()
    elif isinstance(declared.get("file"), str):
        files, _missing = sitemedium.resolve_files(client, obj)
        pem = files.get(declared["file"])
    if not pem:
        return None
    try:
        chain = certs.parse_chain(pem)
    except (certs.CertError, ValueError):
        return None
    return certs.pem_bundle(chain[-1:])


def kubeconfig_text(name: str, domain: str, ca_pem: bytes, cert_pem: bytes, key_pem: bytes) -> bytes:
    """The admin kubeconfig of a site (as `oc config new-admin-kubeconfig` shapes it: user `admin`)."""

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    server = f"https://api.{domain}:{API_PORT}"
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": b64(ca_pem)}}],
        "users": [
            {"name": "admin", "user": {"client-certificate-data": b64(cert_pem), "client-key-data": b64(key_pem)}}
        ],
        "contexts": [{"name": "admin", "context": {"cluster": name, "user": "admin"}}],
        "current-context": "admin",
    }
    return yaml.safe_dump(document, sort_keys=False).encode()


def assemble(client: kube.Client, namespace: str, name: str, *, password: bool = False) -> tuple[bytes, bytes | None]:
    """The site's admin kubeconfig and, when `password`, its new kubeadmin password; or the error saying what is
    missing (see the module's docstring)."""
    from snoreloc_fleet.controller import reconcile  # noqa: PLC0415
    from snoreloc_fleet.hub import adminaccess  # noqa: PLC0415
    from snoreloc_fleet.resource import site  # noqa: PLC0415

    obj = client.find(reconcile.site_ref(namespace, name))
    if obj is None:
        raise errors.UnavailableError(
            f"site {name} in namespace {namespace} does not exist; nothing was written",
            hint="List the Sites: snoreloc fleet status -o csv (or -A for every namespace).",
        )
    if not adminaccess.request_of(obj).generate:
        problem = errors.Problem("spec.adminAccess.generate", "is not true: the hub holds no admin keys for it")
        raise errors.ConfigError(
            f"site {name} does not ask the hub for its own admin access; nothing was written",
            problems=[problem],
            hint=f"Set spec.adminAccess.generate: true on Site {name}, then make its medium (snoreloc fleet "
            "make-media) before it is relocated.",
        )
    keys = adminaccess.read(client, obj)
    if keys is None:
        raise errors.TemporaryError(
            f"site {name}: the hub has not made its admin keys yet (Secret {adminaccess.secret_name(name)})",
            hint="Is the hub's controller running (`snoreloc fleet controller`)? Run this again in a moment.",
        )
    if password and keys.kubeadmin_password is None:
        raise errors.ConfigError(
            f"site {name}: the hub made no kubeadmin password for it; nothing was written",
            problems=[errors.Problem("spec.adminAccess.kubeadmin", "is not true: its kubeadmin is removed")],
            hint="Drop --kubeadmin-password, or set spec.adminAccess.kubeadmin: true and make its medium again.",
        )
    agent = site.view(obj).status.get(site.STATUS_AGENT)
    state = agent.get("runState") if isinstance(agent, Mapping) else None
    if state not in site.RUN_DONE:
        said = f"its last report says {state!r}" if state else "it has not reported"
        raise errors.TemporaryError(
            f"site {name} has not finished its relocation ({said}): its new admin access is not in force yet",
            hint=f"Run this again once `snoreloc fleet why {name}` says it relocated (a stick-only site's report "
            "comes back with `snoreloc fleet import-report`).",
        )
    ca = api_ca(client, obj)
    if ca is None:
        raise errors.TemporaryError(
            f"site {name}: the hub does not know the CA of api.<domain>: the node's report carries none, and the "
            "Site's site-config declares no API certificate",
            hint="Declare the API's certificate in spec.siteConfig.certificates.api (its chain ends with its CA), "
            "or take the CA from the site (`oc get cm -n openshift-config-managed kube-root-ca.crt`).",
        )
    domain = str(site.view(obj).site_config.get("domain") or "")
    text = kubeconfig_text(name, domain, ca, keys.client_cert_pem, keys.client_key_pem)
    return text, keys.kubeadmin_password if password else None


def run(args: argparse.Namespace) -> int:
    from snoreloc.siblings import safefile  # noqa: PLC0415
    from snoreloc_fleet.hub import hubaccess  # noqa: PLC0415

    inputs = [path for name in INPUTS if (path := getattr(args, name, None))]
    outputs = [path for path in (args.output, args.kubeadmin_password) if path is not None]
    if len(outputs) == 2 and outputs[0].absolute() == outputs[1].absolute():
        raise errors.UsageError("--output and --kubeadmin-password name the same file: give two")
    for path in outputs:
        safefile.check(path, inputs=inputs, shared_dir=safefile.NAMED_OUTPUT)  # before reading the hub
    client = hubaccess.client(args)
    try:
        text, password = assemble(client, args.namespace, args.site, password=args.kubeadmin_password is not None)
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

"""The site owner's admin credentials, made on the owner's machine (issue 32, a site without a hub).

`init` makes a CA and an admin client certificate signed by it (user `system:admin`, group `system:masters`, as
`oc config new-admin-kubeconfig` makes: openshift/oc `pkg/cli/config/adminkubeconfig`) in a directory of the
owner's. The keys are written 0600 and never leave it; only the CA's certificate (public) goes into the
site-config (`spec.adminAccess.clientCA`), so no key is ever on the medium, the node, a hub or a report. After the
relocation, `kubeconfig` writes the owner's admin kubeconfig for `api.<new domain>` from that directory, with the CA
that verifies the API's new serving certificate (`--api-ca`: the site's own CA, or the one `snoreloc kubeconfig`
finds on the cluster). The document is built by `engine.admin_kubeconfig`, the same as `snoreloc kubeconfig`'s.
"""

from __future__ import annotations

import base64
import datetime as dt
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from snoreloc import errors, redact, safefile
from snoreloc.engine import admin_kubeconfig
from snoreloc.pki import certs
from snoreloc.siteconfig import model

CA_CERT = "admin-ca.crt"  # public: referenced from spec.adminAccess.clientCA
CA_KEY = "admin-ca.key"  # 0600: signs further admin certificates; stays here
CLIENT_CERT = "admin.crt"
CLIENT_KEY = "admin.key"  # 0600
USER = "system:admin"
GROUP = "system:masters"  # the group kube-apiserver gives every permission (RBAC's bootstrap superuser group)
PUBLIC_MODE = 0o644  # the CA's and the client's certificates: public
API_PORT = 6443


@dataclass(frozen=True)
class Made:
    """What `init` wrote: the directory and the files, and the CA's SHA-256 fingerprint (to compare on the site)."""

    directory: Path
    ca_cert: Path
    files: tuple[Path, ...]
    fingerprint: str


def init(directory: Path, *, name: str, now: dt.datetime) -> Made:
    """Make the owner's admin CA and client certificate in `directory` (created 0700). Refuses a directory that
    already holds any of them: those are the owner's keys, never overwritten."""
    paths = [directory / file for file in (CA_CERT, CA_KEY, CLIENT_CERT, CLIENT_KEY)]
    present = [path.name for path in paths if path.exists() or path.is_symlink()]
    if present:
        raise errors.UsageError(
            f"{directory} already holds {', '.join(present)}: not overwriting the owner's admin credentials",
            hint="Give another --dir, or use the files that are there (their CA is already the site's).",
        )
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    safefile.check_directory(directory)
    ca_cert, ca_key = certs.issue_ca(f"{name} admin CA", now=now)
    client_cert, client_key = certs.issue_client(ca_cert, ca_key, USER, (GROUP,), now=now)
    safefile.write(directory / CA_KEY, ca_key)
    safefile.write(directory / CLIENT_KEY, client_key)
    safefile.write(directory / CLIENT_CERT, client_cert, mode=PUBLIC_MODE)
    safefile.write(directory / CA_CERT, ca_cert, mode=PUBLIC_MODE)
    return Made(directory, directory / CA_CERT, tuple(paths), certs.fingerprint(certs.parse_chain(ca_cert)[0]))


def _read(path: Path, kind: safefile.Kind, what: str) -> bytes:
    try:
        return safefile.read(path, kind)
    except FileNotFoundError:
        raise errors.UsageError(
            f"{path}: no {what} there", hint="Give the --dir that `snoreloc admin-access init` wrote."
        ) from None
    except (OSError, safefile.Unfit) as exc:
        raise errors.UsageError(
            f"{path}: {exc}", hint="Give the --dir that `snoreloc admin-access init` wrote."
        ) from None


def _api_host(server: str) -> tuple[str, int]:
    parts = urllib.parse.urlsplit(server)
    try:
        port = parts.port or API_PORT
    except ValueError:
        port = 0
    host = parts.hostname or ""
    if parts.scheme != "https" or not host.startswith("api.") or not port or parts.path not in ("", "/"):
        raise errors.UsageError(
            f"--server {server}: expected https://api.<domain>[:port]",
            hint="Give the API's new name, e.g. --server https://api.store-042.example.com:6443.",
        )
    return host, port


def client(directory: Path) -> admin_kubeconfig.Credentials:
    """The owner's admin client certificate and key from `directory`, as a kubeconfig user (registered as secrets)."""
    cert = _read(directory / CLIENT_CERT, safefile.CREDENTIAL, "admin client certificate")
    key = _read(directory / CLIENT_KEY, safefile.CREDENTIAL, "admin client key")
    redact.register_secret(key)
    key_data = base64.b64encode(key).decode()
    redact.register_secret(key_data)
    problems = certs.check_key(cert, key)
    if problems:
        raise errors.UsageError(f"{directory}: {'; '.join(problems)}", hint="Run `snoreloc admin-access init` again.")
    user = {"client-certificate-data": base64.b64encode(cert).decode(), "client-key-data": key_data}
    return admin_kubeconfig.Credentials(USER, user, None, str(directory), "")


def kubeconfig(directory: Path, server: str, api_ca: bytes, *, name: str) -> str:
    """The owner's admin kubeconfig for `server` (https://api.<domain>[:port]), trusting `api_ca`."""
    host, port = _api_host(server)
    try:
        bundle = certs.pem_bundle(certs.parse_chain(api_ca))
    except certs.CertError as exc:
        raise errors.UsageError(f"--api-ca: {exc}", hint="Give the CA bundle that verifies the API (PEM).") from None
    site = model.SiteConfig(name=name, domain=host.removeprefix("api."))
    address = None if port == API_PORT else (host, port)
    trust = admin_kubeconfig.Trust(bundle, "--api-ca")
    return admin_kubeconfig.render(admin_kubeconfig.kubeconfig(site, trust, client(directory), address))

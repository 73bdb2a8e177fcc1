"""The administrator's kubeconfig for the API's new name: which CA verifies the API now, and a kubeconfig that
says so.

After a relocation the API answers as `api.<domain>` with the certificate the certificates step stored: ours,
signed by the cluster's `loadbalancer-serving-signer` (which the installer's admin kubeconfig already trusts), or
the site's own from the site-config, whose CA nobody's kubeconfig trusts yet. An administrator needs a kubeconfig
naming the new server with the CA bundle that verifies that certificate, and their own credentials. Before one is
handed out, the bundle is tried against what the API really serves for the new name, so a kubeconfig that would
not work (the run not finished, a wrong CA file) is refused, never written.

The credentials come from a kubeconfig the administrator already has, copied as they are; client certificate,
key and token files it points to are read into the new file, so that it works on another machine. They are
registered as secrets first, so no log line or error can show them.
"""

from __future__ import annotations

import base64
import copy
import ipaddress
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from snoreloc import errors, redact, safefile
from snoreloc.adapters import kube
from snoreloc.engine import report
from snoreloc.pki import certs
from snoreloc.siteconfig import model
from snoreloc.steps.openshift import serving

# Files a kubeconfig user may point to, and the field the file's content goes to in a file that travels.
_FILE_FIELDS = (
    ("client-certificate", "client-certificate-data", True),
    ("client-key", "client-key-data", True),
    ("tokenFile", "token", False),
)
_FROM_HINT = "Pass --from with a readable kubeconfig whose context has a user (client certificate or token)."


@dataclass(frozen=True)
class Trust:
    """The CA bundle a client must trust for the API's new name (None: the system's store), and where it came from."""

    bundle: bytes | None
    source: str


@dataclass(frozen=True)
class Credentials:
    """A kubeconfig user entry, self-contained, with where it came from and what the server it named was."""

    name: str
    user: dict[str, Any]
    namespace: str | None
    origin: str
    server: str

    @property
    def kind(self) -> str:
        """What sort of credential this is, for people (never its value)."""
        if "client-certificate-data" in self.user:
            return "client certificate"
        if "token" in self.user:
            return "token"
        if "exec" in self.user:
            return "exec plugin"
        return ", ".join(sorted(self.user)) or "none"


def server_url(site: model.SiteConfig, address: tuple[str, int] | None = None) -> str:
    """`https://api.<domain>:6443`, or the URL of `address` (an IPv6 address in brackets)."""
    if address is None:
        return report.api_url(site)
    host = f"[{address[0]}]" if ":" in address[0] else address[0]
    return f"https://{host}:{address[1]}"


def _user_chain(pair: model.CertKeyPair) -> bytes:
    """The issuers that follow the leaf in the site's own certificate file."""
    return certs.pem_bundle(certs.parse_chain(pair.cert_pem)[1:])


def trust(site: model.SiteConfig, client: kube.Client | None, ca_file: bytes | None, system: bool) -> Trust:
    """The CA bundle for `api.<domain>`: a given file, the system store, the chain of the site's own certificate,
    or the signer of ours (read through `client`, the same signer the certificates step issues with)."""
    if ca_file is not None:
        return Trust(_ca_bundle(ca_file, "--ca-file"), "--ca-file")
    if system:
        return Trust(None, "the system's trust store")
    if site.certificates.api is not None:
        return Trust(_site_chain(site.certificates.api), "the issuers of the site-config's API certificate")
    signer = serving.targets(site)[0].signer
    if client is None:
        raise ValueError("the cluster's signer is needed: pass a client")
    pair = serving.tls_pair(client.find(signer))
    if pair is None:
        raise errors.UnavailableError(
            f"cannot read the API signer {signer}: missing or not a TLS secret",
            hint="Pass --ca-file with the CA that signed the API certificate.",
        )
    return Trust(_ca_bundle(pair[0], str(signer)), f"the cluster's signer {signer.name}")


def _site_chain(pair: model.CertKeyPair) -> bytes:
    chain = _user_chain(pair)
    if chain:
        return chain
    raise errors.UsageError(
        "the site-config's API certificate comes without its issuer, so snoreloc cannot tell which CA verifies it",
        hint="Pass --ca-file with the CA that signed it, or --system-trust if a CA in the clients' system store "
        "signed it (the kubeconfig then carries no CA data).",
    )


def _ca_bundle(pem: bytes, what: str) -> bytes:
    try:
        chain = certs.parse_chain(pem)
    except certs.CertError as exc:
        raise errors.UsageError(f"{what}: {exc}", hint="Give a PEM file of CA certificates.") from None
    return certs.pem_bundle(chain)


def check_served(address: tuple[str, int], site: model.SiteConfig, found: Trust) -> None:
    """Refuse (exit 75) unless a client trusting `found` accepts what `address` serves for `api.<domain>`."""
    reason = kube.verify_tls(address, site.api_host, found.bundle)
    if reason is None:
        return
    raise errors.TemporaryError(
        f"{address[0]}:{address[1]} does not serve {site.api_host} with a certificate that {found.source} "
        f"verifies ({reason}); no kubeconfig was written",
        hint="If the relocation is still running, wait for it (`snoreloc status --wait`) and run this again; "
        "if the API serves a certificate of your own, pass --ca-file with its CA.",
    )


def _read_kubeconfig(path: Path) -> dict[str, Any]:
    """The parsed kubeconfig; errors name the file and the reason, never its content."""
    try:
        document = yaml.safe_load(safefile.read(path, safefile.KUBECONFIG).decode("utf-8"))
    except FileNotFoundError:
        raise errors.UnavailableError(f"cannot read kubeconfig {path}: no such file", hint=_FROM_HINT) from None
    except OSError as exc:
        raise errors.UnavailableError(f"cannot read kubeconfig {path}: {exc.strerror}", hint=_FROM_HINT) from None
    except yaml.YAMLError:
        raise errors.UnavailableError(f"cannot read kubeconfig {path}: it is not YAML", hint=_FROM_HINT) from None
    except ValueError as exc:  # safefile's reasons (not a regular file, too big) and undecodable bytes
        raise errors.UnavailableError(f"cannot read kubeconfig {path}: {exc}", hint=_FROM_HINT) from None
    if not isinstance(document, dict):
        raise errors.UnavailableError(f"cannot read kubeconfig {path}: it is not a kubeconfig", hint=_FROM_HINT)
    return document


def _named(document: dict[str, Any], section: str, name: str, path: Path) -> dict[str, Any]:
    entries = document.get(section)
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("name") == name:
            body = entry.get(section[:-1])
            if isinstance(body, dict):
                return body
    raise errors.UnavailableError(f"kubeconfig {path} has no {section[:-1]} named {name!r}", hint=_FROM_HINT)


def _inline_files(user: dict[str, Any], base: Path, origin: Path) -> dict[str, Any]:
    """`user` with the files it points to read in, so the new kubeconfig works anywhere."""
    user = copy.deepcopy(user)
    for file_key, data_key, encode in _FILE_FIELDS:
        if file_key not in user:
            continue
        target = base / str(user.pop(file_key))
        try:
            raw = safefile.read(target, safefile.CREDENTIAL, follow=True)
        except (OSError, safefile.Unfit) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise errors.UnavailableError(
                f"kubeconfig {origin}: cannot read its {file_key} file {target}: {reason}", hint=_FROM_HINT
            ) from None
        redact.register_secret(raw)
        user[data_key] = base64.b64encode(raw).decode() if encode else raw.decode("utf-8", "replace").strip()
    return user


def _checked_user(user: dict[str, Any], path: Path) -> dict[str, Any]:
    """Refuse a user entry whose credential fields are not text (the file is broken, not the cluster)."""
    fields = [
        *redact.KUBECONFIG_SECRET_FIELDS,
        "client-certificate-data",
        "username",
        *(key for key, _data, _enc in _FILE_FIELDS),
    ]
    wrong = sorted(key for key in fields if key in user and not isinstance(user[key], str))
    if wrong:
        raise errors.UnavailableError(f"kubeconfig {path}: its user's {', '.join(wrong)} is not text", hint=_FROM_HINT)
    return user


def credentials(path: Path, context: str | None = None) -> Credentials:
    """The user of `context` (default: the current one) in the kubeconfig at `path`, made self-contained."""
    document = _read_kubeconfig(path)
    redact.register_fields(document, redact.KUBECONFIG_SECRET_FIELDS)
    name = context or document.get("current-context")
    if not isinstance(name, str) or not name:
        raise errors.UnavailableError(f"kubeconfig {path} names no current context", hint=_FROM_HINT)
    chosen = _named(document, "contexts", name, path)
    user_name = str(chosen.get("user") or "")
    user = _inline_files(_checked_user(_named(document, "users", user_name, path), path), path.parent, path)
    redact.register_fields(user, redact.KUBECONFIG_SECRET_FIELDS)
    cluster = _named(document, "clusters", str(chosen.get("cluster") or ""), path)
    namespace = chosen.get("namespace")
    server = str(cluster.get("server") or "")
    return Credentials(user_name, user, str(namespace) if namespace else None, str(path), server)


def kubeconfig(
    site: model.SiteConfig, found: Trust, creds: Credentials, address: tuple[str, int] | None = None
) -> dict[str, Any]:
    """The kubeconfig for `api.<domain>`. With `address` (for a site whose DNS does not know the name yet) it
    dials there and still verifies the certificate for `api.<domain>` (`tls-server-name`)."""
    cluster: dict[str, Any] = {"server": server_url(site, address)}
    if address:
        cluster["tls-server-name"] = site.api_host
    if found.bundle is not None:
        cluster["certificate-authority-data"] = base64.b64encode(found.bundle).decode()
    user_name = f"{creds.name}/{site.name}"
    context: dict[str, Any] = {"cluster": site.name, "user": user_name}
    if creds.namespace:
        context["namespace"] = creds.namespace
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": site.name, "cluster": cluster}],
        "users": [{"name": user_name, "user": creds.user}],
        "contexts": [{"name": site.name, "context": context}],
        "current-context": site.name,
    }


def render(document: dict[str, Any]) -> str:
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False)


def old_name(creds: Credentials, site: model.SiteConfig) -> str | None:
    """The API host the credentials' kubeconfig named when it is neither the new name nor this node's own."""
    host = urllib.parse.urlsplit(creds.server).hostname or ""
    if host in ("", site.api_host, "localhost") or _is_address(host):
        return None
    return host


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True

"""A site's admin kubeconfig assembled for its owner from what the hub holds (`hub.adminaccess`), once it can work.

`fleet admin-kubeconfig` is its one caller. Where the API's CA comes from: the CA the Site's site-config declares
for the API (`spec.siteConfig.certificates.api.certificate`: the last certificate of its chain), else the public CA
bundle the node reported (`status.agent.apiCA`, recorded by its admin-access step: the signer that issued the API's
certificate at the site). The node never sends a key; until it has reported a CA, a site that lets the node issue
its own API certificate gets a temporary error saying so (exit 75).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import yaml

from snoreloc.siblings import certs, errors, kube
from snoreloc_fleet.hub import adminaccess, hubaccess, sitemedium
from snoreloc_fleet.resource import site

API_PORT = 6443


def api_ca(client: kube.Client, obj: Mapping[str, Any]) -> bytes | None:
    """The CA that verifies the site's API serving certificate: the site-config's declared one, else the node's
    reported one; None when the hub knows neither."""
    return declared_api_ca(client, obj) or reported_api_ca(obj)


def reported_api_ca(obj: Mapping[str, Any]) -> bytes | None:
    """The public CA bundle the node reported (`status.agent.apiCA`), if it parses as certificates."""
    agent = site.view(obj).status.get(site.STATUS_AGENT)
    text = agent.get("apiCA") if isinstance(agent, Mapping) else None
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        return certs.pem_bundle(certs.parse_chain(text.encode("ascii")))
    except (certs.CertError, ValueError):
        return None


def declared_api_ca(client: kube.Client, obj: Mapping[str, Any]) -> bytes | None:
    """The CA the Site's site-config declares for its API (the last certificate of `certificates.api.certificate`'s
    chain); None when it declares none."""
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
    obj = client.find(kube.Ref(hubaccess.sites(), name, namespace))
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
            f"site {name}: the hub does not know the CA of api.<domain>: the node has not reported one, and the "
            "Site's site-config declares no API certificate",
            hint="Declare the API's certificate in spec.siteConfig.certificates.api (its chain ends with its CA), "
            "or take the CA from the site (`oc get cm -n openshift-config-managed kube-root-ca.crt`).",
        )
    domain = str(site.view(obj).site_config.get("domain") or "")
    text = kubeconfig_text(name, domain, ca, keys.client_cert_pem, keys.client_key_pem)
    return text, keys.kubeadmin_password if password else None

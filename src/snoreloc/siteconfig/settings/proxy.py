"""`spec.proxy`: the cluster-wide proxy (Proxy `cluster` and the CA bundle it trusts), applied by the proxy step
(`snoreloc.steps.cluster.proxy`). A change of a proxy URL or noProxy is a machine-config update that reboots the
node; a change of the trusted CA alone restarts kubelet and CRI-O without a reboot. Proxy URLs may carry a password:
they are `x-secret`, and every password in one is registered for redaction the moment it is read.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from snoreloc import redact
from snoreloc.pki import certs
from snoreloc.siteconfig import checks, claims, findings, fragments, setting


def _proxy_url(which: str, schemes: str) -> dict[str, Any]:
    return fragments.prop(
        f"URL of the proxy for {which} connections leaving the cluster ({schemes}), `scheme://[user:password@]host"
        "[:port]`. Secret: it may carry a password, and is never printed.",
        ["http://proxy.site.example.com:3128"],
        type="string",
        minLength=1,
        maxLength=2048,
        **{"x-secret": True},
    )


def _schema() -> dict[str, Any]:
    return fragments.prop(
        "The cluster-wide proxy (Proxy `cluster`). Changing the URLs or noProxy reboots the node; a trusted CA "
        "alone restarts kubelet and CRI-O without a reboot.",
        [{"httpsProxy": "http://proxy.site.example.com:3128", "noProxy": [".site.example.com"]}],
        **fragments.obj(
            {
                "httpProxy": _proxy_url("HTTP", "http"),
                "httpsProxy": _proxy_url("HTTPS", "http or https"),
                "noProxy": fragments.prop(
                    "Destinations that bypass the proxy: domains (a leading `.` for its subdomains), IP addresses, "
                    "CIDRs, or `*`. The cluster adds its own networks and internal names.",
                    [[".site.example.com", "10.20.0.0/16"]],
                    type="array",
                    uniqueItems=True,
                    maxItems=256,
                    items={
                        "type": "string",
                        "maxLength": 253,
                        "pattern": r"^(\*|\.?[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?|[0-9A-Fa-f:.]+(/[0-9]{1,3})?)$",
                        "x-message": "must be a domain, .domain, IP address, CIDR or *",
                    },
                ),
                "trustedCA": fragments.pem_source(
                    "CA bundle the proxy's certificate chains to (PEM certificates)", "proxy-ca.crt"
                ),
            },
            minProperties=1,
        ),
    )


@dataclass(frozen=True)
class Proxy:
    """The cluster-wide proxy. The URLs may carry `user:password`, so they are kept out of `repr`."""

    http_proxy: str | None = field(default=None, repr=False)
    https_proxy: str | None = field(default=None, repr=False)
    no_proxy: tuple[str, ...] = ()
    trusted_ca: str | None = None  # PEM bundle, cleaned


def _load(values: Mapping[str, Any] | None, checked: checks.Checked) -> Proxy | None:
    if values is None:
        return None
    bundle = checked.sources.get((*SETTING.path, "trustedCA"))
    return Proxy(
        http_proxy=values.get("httpProxy"),
        https_proxy=values.get("httpsProxy"),
        no_proxy=tuple(values.get("noProxy") or ()),
        trusted_ca=bundle.decode("ascii") if bundle is not None else None,
    )


PROXY_SCHEMES = {"httpProxy": ("http",), "httpsProxy": ("http", "https")}


def proxy_url_problem(field_name: str, url: str) -> str | None:
    """Why a proxy URL is unusable, or None. The message never quotes the URL (it may hold a password)."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return "is not a URL (or its port is not a number 1-65535)"
    schemes = PROXY_SCHEMES[field_name]
    if parts.scheme not in schemes:
        return f"must start with {' or '.join(f'{scheme}://' for scheme in schemes)}"
    if not parts.hostname:
        return "has no host"
    if port == 0:
        return "has port 0; use 1-65535"
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return "must be scheme://host[:port] (user and password before the host if needed), with no path or query"
    return None


def register_proxy_password(url: str) -> None:
    """Register the password a proxy URL carries, if any (a URL that does not parse registers as a whole)."""
    try:
        password = urllib.parse.urlsplit(url).password
    except ValueError:
        redact.register_secret(url)
        return
    if password:
        redact.register_secret(password)


def cidr_problem(text: str) -> tuple[str, bool] | None:
    """What is wrong with a CIDR `text` (an address with `/prefix`), and whether it is an error (else a warning)."""
    address, _, prefix = text.partition("/")
    try:
        version = ipaddress.ip_address(address).version
    except ValueError:
        return None  # not an address: the schema's pattern judges it
    bits = 32 if version == 4 else 128
    if not prefix.isdigit() or int(prefix) > bits:
        return f"the prefix /{prefix} is out of range: IPv{version} prefixes are 0-{bits}", True
    network = ipaddress.ip_network(text, strict=False)
    if network.network_address != ipaddress.ip_address(address):
        return f"has host bits set; it is read as {network}", False
    return None


def _no_proxy(run: checks.Run, path: findings.Path, entries: Any) -> None:
    """CIDRs in `noProxy` with a prefix their family has (the schema's pattern allows any 1-3 digits)."""
    if not isinstance(entries, list) or not run.sound(path):
        return
    for index, entry in enumerate(entries):
        found = cidr_problem(entry) if isinstance(entry, str) and "/" in entry else None
        if found is not None:
            message, fatal = found
            (run.error if fatal else run.warn)((*path, index), message)


def _check(run: checks.Run, spec: Mapping[str, Any]) -> None:
    path = SETTING.path
    proxy = spec.get(SETTING.key)
    if not isinstance(proxy, Mapping):
        return
    for name in PROXY_SCHEMES:
        url = proxy.get(name)
        if not isinstance(url, str):
            continue
        register_proxy_password(url)
        problem = proxy_url_problem(name, url) if run.sound((*path, name)) else None
        if problem:
            run.error((*path, name), problem)
    _no_proxy(run, (*path, "noProxy"), proxy.get("noProxy"))
    if "trustedCA" in proxy and run.sound((*path, "trustedCA")):
        where = (*path, "trustedCA")
        bundle = run.source(where, proxy["trustedCA"], secret=False)
        chain = checks.bundle(run, checks.origin(where, proxy["trustedCA"]), bundle) if bundle else None
        if chain:
            run.sources[where] = certs.pem_bundle(chain)


TRUSTED_CA_CONFIGMAP = "snoreloc-proxy-ca"  # in openshift-config, written by the proxy step


def _claims(spec: Mapping[str, Any]) -> Iterator[claims.Claim]:
    if claims.given(spec, SETTING.key):
        yield claims.Claim(claims.CONFIG, "Proxy", "", "cluster", SETTING.path, "the cluster-wide proxy")
        yield claims.Claim("", "ConfigMap", "openshift-config", TRUSTED_CA_CONFIGMAP, SETTING.path, "the proxy's CA")


SETTING = setting.Setting(
    key="proxy",
    field="proxy",
    schema=_schema(),
    load=_load,
    check=_check,
    cost=setting.Cost(
        reboot="maybe",
        rollouts=("mcp/master",),
        note="proxy: the machine-config pool updates and the node REBOOTS (proxy URLs or noProxy changed)",
    ),
    claims=_claims,
    # the Proxy's URLs and noProxy reach every node's environment (a reboot); its trusted CA only the CA bundle
    rollback=setting.Rollback(
        ("mcp/master",),
        why="the proxy's trusted CA goes back: a machine-config update",
        reboot_if=("httpProxy", "httpsProxy", "noProxy"),
        why_reboot="the proxy URLs or noProxy go back: the node reboots",
    ),
)

"""The checks a schema cannot express: what the values mean, and what the referenced files hold.

Each section (domain, network, each certificate pair, pull secret, mirrors, registry CAs, SSH keys, proxy, NTP, extra
manifests, timeouts) is checked on its own and only when the schema found nothing wrong inside it, so one mistake
gives one message. Referenced files are read here, once, through `files`; their contents come back with the findings
so the loader builds the model from exactly the bytes that were checked. Every secret is registered for redaction as
soon as it is read. Every `host:port` (mirror sources and mirrors, registry-CA registries, pull-secret registries)
has its port checked here: the schema's patterns can say "digits" but not "1-65535".
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import ipaddress
import json
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

from snoreloc import redact
from snoreloc.pki import certs
from snoreloc.siteconfig import (
    claims,
    files,
    findings,
    manifests,
    model,
    nmstate_check,
    schema,
    structural,
    values,
    yamlpos,
)

SPEC: findings.Path = ("spec",)
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_MAX_NAME = 253
_MAX_LABEL = 63
_REGISTRY_KEY = re.compile(schema.MIRROR_PATTERN)
_PORTS = range(1, 65536)


@dataclass(frozen=True)
class Checked:
    """Findings plus what the checks read and parsed, for the model: source bytes by the path of their
    `{file|pem}` object, the network, the pull secret document."""

    found: tuple[findings.Finding, ...]
    sources: Mapping[findings.Path, bytes] = field(repr=False)
    network: dict[str, Any] | None = None
    pull_secret: dict[str, Any] | None = field(default=None, repr=False)
    manifests: tuple[model.Manifest, ...] = ()


class _Run:
    def __init__(self, base_dir: str, now: dt.datetime, broken: frozenset[findings.Path]) -> None:
        self.base_dir = base_dir
        self.now = now
        self.broken = broken
        self.out: list[findings.Finding] = []
        self.sources: dict[findings.Path, bytes] = {}
        self.network: dict[str, Any] | None = None
        self.pull_secret: dict[str, Any] | None = None
        self.manifests: tuple[model.Manifest, ...] = ()

    def sound(self, path: findings.Path) -> bool:
        """No schema error inside `path` or on any of its ancestors."""
        return not any(findings.is_under(b, path) or findings.is_under(path, b) for b in self.broken)

    def error(self, path: findings.Path, message: str) -> None:
        self.out.append(findings.error(path, message))

    def warn(self, path: findings.Path, message: str) -> None:
        self.out.append(findings.warning(path, message))

    def read(self, path: findings.Path, ref: str, *, secret: bool) -> bytes | None:
        try:
            data = files.read(self.base_dir, ref)
        except files.RefError as exc:
            self.error(path, str(exc))
            return None
        if secret:
            redact.register_secret(data.content)
            if files.too_open(data.mode):
                self.warn(path, f"holds a secret but has mode {data.mode:04o}; make it 0600 (chmod 600 {ref})")
        return data.content

    def source(self, path: findings.Path, obj: Mapping[str, Any], *, secret: bool) -> bytes | None:
        """The bytes of a `{file: ...}` or `{pem: ...}` object, remembered under `path`.

        Problems with the content are reported at `origin(path, obj)`: the `file` or `pem` line that supplied it.
        """
        if "file" in obj:
            content = self.read((*path, "file"), str(obj["file"]), secret=secret)
        else:
            content = str(obj["pem"]).encode()
            if secret:
                redact.register_secret(content)
        if content is not None:
            self.sources[path] = content
        return content


def origin(path: findings.Path, obj: Mapping[str, Any]) -> findings.Path:
    return (*path, "file" if "file" in obj else "pem")


def port_problem(reference: str) -> str | None:
    """Why the port of `reference` (`host[:port][/path]`) is not a TCP port, or None (no port, or a good one).

    The schema patterns only say "digits": 99999 or 0 would pass them and fail every pull at the site.
    """
    _, colon, port = reference.split("/", 1)[0].rpartition(":")
    if not colon or not (port.isascii() and port.isdigit()) or int(port) in _PORTS:
        return None
    return f"port {port} is out of range: ports are {_PORTS.start}-{_PORTS.stop - 1}"


def _port(run: _Run, path: findings.Path, reference: Any) -> None:
    """A port problem of the host[:port] reference at `path`, unless the schema already rejected it."""
    problem = port_problem(reference) if isinstance(reference, str) and run.sound(path) else None
    if problem:
        run.error(path, problem)


def domain_problems(domain: str) -> list[str]:
    """Why `domain` cannot be a cluster domain (empty when it can)."""
    if domain != domain.lower():
        return ["must be lowercase"]
    if domain.endswith("."):
        return ["must not end with a dot"]
    labels = domain.split(".")
    if len(labels) < 2:
        return ["needs at least two labels: <cluster name>.<base domain>"]
    problems = [_label_problem(label) for label in labels]
    longest = f"console-openshift-console.apps.{domain}"
    if len(longest) > _MAX_NAME:
        problems.append(f"is too long: the console host would be {len(longest)} characters (limit {_MAX_NAME})")
    return [p for p in problems if p]


def _label_problem(label: str) -> str:
    if not label:
        return "has an empty label (two dots in a row?)"
    if len(label) > _MAX_LABEL:
        return f"label '{label[:16]}...' has {len(label)} characters; the limit is {_MAX_LABEL}"
    if not _LABEL.match(label):
        return f"label '{label}' may hold only a-z, 0-9 and '-', and must not start or end with '-'"
    return ""


def _domain(run: _Run, spec: Mapping[str, Any]) -> str | None:
    path = (*SPEC, "domain")
    if not run.sound(path):
        return None
    problems = domain_problems(str(spec["domain"]))
    for problem in problems:
        run.error(path, problem)
    return None if problems else str(spec["domain"])


def _accepted(spec: Mapping[str, Any]) -> frozenset[str]:
    accept = spec.get("networkAccept")
    return frozenset(str(name) for name in accept) if isinstance(accept, list) else frozenset()


# The network file is read like the site-config: YAML 1.1 readings warned, whole numbers only (no nmstate field the
# schema allows takes a fraction), and the value of a secret-looking key (a Wi-Fi PSK, an 802.1X password) unquoted.
_NETWORK_READING = yamlpos.Reading(
    yaml11=True, integers_only=True, secret=lambda path: any(redact.is_secret_field(part) for part in path)
)


def _network_file(run: _Run, ref: str, accept: frozenset[str]) -> dict[str, Any] | None:
    path = (*SPEC, "network", "file")
    raw = run.read(path, ref, secret=False)
    if raw is None:
        return None
    try:
        doc = yamlpos.load(raw, _NETWORK_READING)
    except yamlpos.YamlError as exc:
        run.error(path, f"{ref}: {exc.message}" + (f" (line {exc.line} of {ref})" if exc.line else ""))
        return None
    placed = [(found, doc.locate(found.path)) for found in structural.check(doc.data, structural.NETWORK)]
    placed += doc.issues
    if isinstance(doc.data, Mapping) and "file" in doc.data:
        placed.append((findings.error(("file",), "a network file cannot refer to another file"), doc.locate(("file",))))
    if not placed:
        placed = [(found, doc.locate(found.path)) for found in nmstate_check.check(doc.data, accept=accept)]
    for found, mark in placed:
        where = f" (line {mark.line} of {ref})" if mark else ""
        text = f"{ref}: {findings.render_path(found.path) or '<document>'}: {found.message}{where}"
        run.out.append(findings.Finding(path, text, found.severity))
    failed = any(f.severity is findings.Severity.ERROR for f, _ in placed)
    return None if failed or not isinstance(doc.data, dict) else doc.data


def _network(run: _Run, spec: Mapping[str, Any]) -> None:
    path = (*SPEC, "network")
    network = spec.get("network")
    if not isinstance(network, Mapping):
        return
    if "file" in network:
        if run.sound(path):
            run.network = _network_file(run, str(network["file"]), _accepted(spec))
    else:
        # nmstate checks tolerate malformed parts, so a typo in one interface does not hide the others' problems
        run.out += [f for f in nmstate_check.check(network, path, _accepted(spec)) if run.sound(f.path)]
        run.network = dict(network)
    broken = any(f.severity is findings.Severity.ERROR and findings.is_under(f.path, path) for f in run.out)
    if run.network is not None and not broken:
        _probed(run, spec, run.network)


def _probed(run: _Run, spec: Mapping[str, Any], network: Mapping[str, Any]) -> None:
    """A network change must be checked by something, or say `networkProbes: none`."""
    probes = spec.get("networkProbes")
    path = (*SPEC, "networkProbes")
    for index, target in enumerate(probes.get("tcp") or () if isinstance(probes, Mapping) else ()):
        _port(run, (*path, "tcp", index), target)
    if probes == schema.PROBE_NONE or not run.sound(path):
        return
    if not nmstate_check.probe_sources(network, probes if isinstance(probes, Mapping) else {}):
        run.error(
            (*SPEC, "network"),
            "nothing would prove this network works before it is committed: it names no default gateway or DNS "
            "server and uses no DHCP; add them, add `networkProbes.tcp` targets, or set `networkProbes: none`",
        )


def _pair(run: _Run, which: str, pair: Mapping[str, Any], names: tuple[str, ...]) -> None:
    path = (*SPEC, "certificates", which)
    cert = run.source((*path, "certificate"), pair["certificate"], secret=False)
    key = run.source((*path, "key"), pair["key"], secret=True)
    if cert is not None:
        for problem in certs.check_chain(cert, names, run.now):
            run.error(origin((*path, "certificate"), pair["certificate"]), problem)
    if key is not None:
        for problem in certs.check_key(cert or b"", key):
            run.error(origin((*path, "key"), pair["key"]), problem)


def _certificates(run: _Run, spec: Mapping[str, Any], domain: str | None) -> None:
    if not run.sound((*SPEC, "certificates")):
        return
    for which, pair in (spec.get("certificates") or {}).items():
        if run.sound((*SPEC, "certificates", which)):
            names = model.served_names(which, domain).required if domain else ()
            _pair(run, which, pair, names)


def _auth_problem(entry: Any) -> str | None:
    if not isinstance(entry, Mapping):
        return "must be a mapping with `auth`, or `username` and `password`"
    if "auth" in entry:
        try:
            decoded = base64.b64decode(str(entry["auth"]), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return "`auth` is not valid base64"
        user, colon, password = decoded.partition(":")
        return None if user and colon and password else "`auth` must be base64 of `user:password`"
    if isinstance(entry.get("username"), str) and isinstance(entry.get("password"), str):
        return None if entry["username"] and entry["password"] else "`username` and `password` must not be empty"
    return "needs `auth` (base64 of user:password), or `username` and `password`"


def _registry_key_problem(registry: str) -> str | None:
    if not _REGISTRY_KEY.match(registry):
        return "the registry must be host[:port][/path] (no scheme)"
    return port_problem(registry)


def _auths(run: _Run, doc: Any, where: findings.Path, inline: bool) -> bool:
    auths = doc.get("auths") if isinstance(doc, Mapping) else None
    if not isinstance(auths, Mapping) or not auths:
        run.error(where, 'must be a JSON object with a non-empty "auths" mapping')
        return False
    good = True
    for registry, entry in auths.items():
        at = (*where, "auths", registry) if inline else where
        prefix = "" if inline else f"auths[{registry}]: "
        problem = _registry_key_problem(str(registry)) or _auth_problem(entry)
        if problem:
            run.error(at, prefix + problem)
            good = False
    return good


def _pull_secret_bytes(run: _Run, secret: Any) -> tuple[bytes | None, findings.Path]:
    path = (*SPEC, "pullSecret")
    if "file" in secret:
        return run.read((*path, "file"), str(secret["file"]), secret=True), (*path, "file")
    if "json" in secret:
        raw = str(secret["json"]).encode()
        redact.register_secret(raw)
        return raw, (*path, "json")
    raw = json.dumps(secret["inline"], indent=2).encode()
    redact.register_secret(raw)
    return raw, (*path, "inline")


def _pull_secret(run: _Run, spec: Mapping[str, Any]) -> None:
    path = (*SPEC, "pullSecret")
    secret = spec.get("pullSecret")
    sources = [k for k in ("file", "json", "inline") if isinstance(secret, Mapping) and k in secret]
    if len(sources) != 1 or not run.sound((*path, sources[0])) or path in run.broken:
        return
    raw, where = _pull_secret_bytes(run, secret)
    if raw is None:
        return
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        run.error(where, f"is not valid JSON ({files.json_problem(exc)})")
        return
    redact.register_fields(doc, schema.AUTH_SECRET_FIELDS)
    if _auths(run, doc, where, inline=where[-1] == "inline"):
        run.pull_secret = doc


def _entries(spec: Mapping[str, Any], key: str) -> list[tuple[findings.Path, Mapping[str, Any]]]:
    """The mappings of the list `spec[key]` with their paths (nothing when the list is malformed)."""
    entries = spec.get(key)
    items = enumerate(entries) if isinstance(entries, list) else ()
    return [((*SPEC, key, index), entry) for index, entry in items if isinstance(entry, Mapping)]


def _mirror_ports(run: _Run, spec: Mapping[str, Any], key: str) -> None:
    for path, entry in _entries(spec, key):
        _port(run, (*path, "source"), entry.get("source"))
        mirrors = entry.get("mirrors")
        for position, mirror in enumerate(mirrors if isinstance(mirrors, list) else ()):
            _port(run, (*path, "mirrors", position), mirror)


def _mirrors(run: _Run, spec: Mapping[str, Any], key: str) -> None:
    _mirror_ports(run, spec, key)
    first_seen: dict[str, int] = {}
    for index, entry in enumerate(spec.get(key) or []):
        path = (*SPEC, key, index)
        if not run.sound(path):
            continue
        if entry["source"] in entry["mirrors"]:
            run.warn((*path, "mirrors"), "lists its own source as a mirror")
        earlier = first_seen.setdefault(entry["source"], index)
        if earlier != index:
            run.warn((*path, "source"), f"same source as {key}[{earlier}]; the cluster merges their mirrors")


def _registry_ca(run: _Run, spec: Mapping[str, Any]) -> None:
    seen: dict[str, int] = {}
    for index, entry in enumerate(spec.get("registryCA") or []):
        path = (*SPEC, "registryCA", index)
        _port(run, (*path, "registry"), entry.get("registry") if isinstance(entry, Mapping) else None)
        if not run.sound(path):
            continue
        registry = str(entry["registry"]).lower()
        if seen.setdefault(registry, index) != index:
            run.error(
                (*path, "registry"), f"already listed at registryCA[{seen[registry]}]; put both CAs in one bundle"
            )
        bundle = run.source((*path, "certificate"), entry["certificate"], secret=False)
        chain = _bundle(run, origin((*path, "certificate"), entry["certificate"]), bundle) if bundle else None
        if chain:
            run.sources[(*path, "certificate")] = certs.pem_bundle(chain)  # without comments or stray text


def _bundle(run: _Run, path: findings.Path, bundle: bytes) -> list[x509.Certificate] | None:
    try:
        chain = certs.parse_chain(bundle)
    except certs.CertError as exc:
        run.error(path, str(exc))
        return None
    for position, cert in enumerate(chain, start=1):
        if cert.not_valid_after_utc <= run.now:
            run.warn(path, f"certificate {position} of the bundle expired on {cert.not_valid_after_utc:%Y-%m-%d}")
    return chain


def _has_credentials(registries: list[str], mirror: str) -> bool:
    """Whether a pull-secret `auths` key serves `mirror` (a key is a host[:port], optionally with a path prefix)."""
    return any(mirror == key or mirror.startswith(key.rstrip("/") + "/") for key in registries)


def _mirror_credentials(run: _Run, spec: Mapping[str, Any]) -> None:
    """A replace-mode pull secret becomes the cluster's only one: warn for each mirror it has no credentials for."""
    secret = spec.get("pullSecret")
    if run.pull_secret is None or not isinstance(secret, Mapping) or secret.get("mode", "replace") != "replace":
        return
    registries = [str(key) for key in run.pull_secret["auths"]]
    for key in ("imageDigestMirrors", "imageTagMirrors"):
        for path, entry in _entries(spec, key):
            mirrors = entry.get("mirrors") if run.sound(path) else None
            for position, mirror in enumerate(mirrors if isinstance(mirrors, list) else ()):
                if not _has_credentials(registries, str(mirror)):
                    host = str(mirror).split("/", 1)[0]
                    run.warn(
                        (*path, "mirrors", position),
                        f"the pull secret (mode replace) has no credentials for {host}: the cluster will pull "
                        f"from it anonymously; add an auths entry for {host}, or use mode: merge",
                    )


def ssh_key_problem(line: str) -> str | None:
    """Why an `authorized_keys` line is not a usable public key, or None. Security-key (`sk-`) types, which
    `cryptography` does not load, are checked for a well-formed key blob of the declared type."""
    kind, blob = line.split()[:2]
    if not kind.startswith("sk-"):
        try:
            key = serialization.load_ssh_public_key(f"{kind} {blob}".encode())
        except (ValueError, UnsupportedAlgorithm):
            return f"is not a valid {kind} public key (the base64 part does not decode to one)"
        return values.ssh_key_size_problem(key)
    try:
        raw = base64.b64decode(blob, validate=True)
    except binascii.Error:
        return "is not a valid public key: its key part is not base64"
    size = int.from_bytes(raw[:4], "big")
    if raw[4 : 4 + size] != kind.encode():
        return f"is not a valid {kind} public key (the key part holds another type)"
    return None


def _ssh_keys(run: _Run, spec: Mapping[str, Any]) -> None:
    path = (*SPEC, "sshAuthorizedKeys", "keys")
    if "sshAuthorizedKeys" not in spec or not run.sound(path):
        return
    seen: dict[str, int] = {}
    for index, line in enumerate(spec["sshAuthorizedKeys"]["keys"]):
        problem = ssh_key_problem(line)
        if problem:
            run.error((*path, index), problem)
        blob = line.split()[1]
        if blob in seen:
            run.error((*path, index), f"the same key as keys[{seen[blob]}] (with another comment); list it once")
        seen.setdefault(blob, index)


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


def _proxy(run: _Run, spec: Mapping[str, Any]) -> None:
    path = (*SPEC, "proxy")
    proxy = spec.get("proxy")
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
        chain = _bundle(run, origin(where, proxy["trustedCA"]), bundle) if bundle else None
        if chain:
            run.sources[where] = certs.pem_bundle(chain)


def _no_proxy(run: _Run, path: findings.Path, entries: Any) -> None:
    """CIDRs in `noProxy` with a prefix their family has (the schema's pattern allows any 1-3 digits)."""
    if not isinstance(entries, list) or not run.sound(path):
        return
    for index, entry in enumerate(entries):
        found = values.cidr_problem(entry) if isinstance(entry, str) and "/" in entry else None
        if found is not None:
            message, fatal = found
            (run.error if fatal else run.warn)((*path, index), message)


def _catalog_sources(run: _Run, spec: Mapping[str, Any]) -> None:
    catalogs = spec.get("catalogSources")
    sources = catalogs.get("sources") if isinstance(catalogs, Mapping) else None
    seen: dict[str, int] = {}
    for index, entry in enumerate(sources if isinstance(sources, list) else ()):
        path = (*SPEC, "catalogSources", "sources", index)
        if not isinstance(entry, Mapping) or not run.sound(path):
            continue
        _port(run, (*path, "image"), str(entry["image"]).split("/", 1)[0])
        if problem := values.catalog_name_problem(entry["name"]):
            run.error((*path, "name"), problem)
        if seen.setdefault(entry["name"], index) != index:
            run.error(
                (*path, "name"), f"already used by sources[{seen[entry['name']]}]; each catalog needs its own name"
            )


def _extra_manifests(run: _Run, spec: Mapping[str, Any]) -> None:
    path = (*SPEC, "extraManifests")
    value = spec.get("extraManifests")
    if not isinstance(value, Mapping) or not run.sound(path):
        return
    found, problems = manifests.check(value, run.base_dir, path)
    for problem in problems:
        run.error(problem.path, problem.message)
    for manifest, message in claims.collisions(spec, found):
        run.error(_manifest_at(path, value, manifest), message)
    for manifest, message in claims.broad_grants(found):
        run.warn(_manifest_at(path, value, manifest), message)
    run.manifests = tuple(found)


def _manifest_at(path: findings.Path, value: Mapping[str, Any], manifest: model.Manifest) -> findings.Path:
    """The site-config field that names the manifest's file: its `files` entry, else `directory`."""
    listed = value.get("files")
    if isinstance(listed, list) and manifest.source in listed:
        return (*path, "files", listed.index(manifest.source))
    return (*path, "directory")


_NTP_SOURCE = re.compile(schema.NTP_SOURCE_PATTERN)
NTP_KINDS = ("servers", "pools")


def ntp_source_problem(value: str) -> str | None:
    """Why `value` cannot be one chrony `server`/`pool` name, or None. It becomes a line of chrony.conf, so the whole
    string must be one host name or IP address: the schema's `$` would let a final line break through."""
    if not _NTP_SOURCE.fullmatch(value):
        return "must be one host name or IP address on one line, without spaces, options or line breaks"
    if ":" in value or value.replace(".", "").isdigit():
        try:
            address = ipaddress.ip_address(value)
        except ValueError:
            return "is not a valid IP address"
        if address.is_unspecified or address.is_multicast:
            return "is not an address a time server can have (unspecified or multicast)"
        return None
    if len(value) > _MAX_NAME:
        return f"is longer than {_MAX_NAME} characters"
    return None


def _ntp(run: _Run, spec: Mapping[str, Any]) -> None:
    path = (*SPEC, "ntp")
    ntp = spec.get("ntp")
    if not isinstance(ntp, Mapping):
        return
    seen: dict[str, str] = {}
    for kind in NTP_KINDS:
        values = ntp.get(kind)
        for index, value in enumerate(values if isinstance(values, list) else ()):
            if not isinstance(value, str) or not run.sound((*path, kind, index)):
                continue
            problem = ntp_source_problem(value)
            if problem:
                run.error((*path, kind, index), problem)
            earlier = seen.setdefault(value.lower(), f"{kind}[{index}]")
            if earlier != f"{kind}[{index}]":
                run.error((*path, kind, index), f"already listed as ntp.{earlier}; list each source once")
    count = sum(len(ntp[kind]) for kind in NTP_KINDS if isinstance(ntp.get(kind), list))
    if count > schema.NTP_MAX_SOURCES and run.sound(path):
        run.error(path, f"lists {count} sources; at most {schema.NTP_MAX_SOURCES} servers and pools together")


def _timeouts(run: _Run, spec: Mapping[str, Any]) -> None:
    path = (*SPEC, "timeouts")
    values = spec.get("timeouts") or {}
    if not run.sound(path) or "total" not in values:
        return
    for key, value in values.items():
        if key != "total" and (*path, key) not in schema.DEPRECATED_PATHS and value > values["total"]:
            run.error((*path, "total"), f"is shorter than timeouts.{key} ({value}s); raise total or lower {key}")


def _deprecated(run: _Run, data: Mapping[str, Any]) -> None:
    for path in schema.DEPRECATED_PATHS:
        parent = _at(data, path[:-1])
        if isinstance(parent, Mapping) and path[-1] in parent:
            run.warn(path, str(schema.at(path)["description"]))


def _at(data: Any, path: findings.Path) -> Any:
    for part in path:
        data = data.get(part) if isinstance(data, Mapping) else None
    return data


def _operators(run: _Run, spec: Mapping[str, Any]) -> None:
    path = (*SPEC, "operators")
    values = spec.get("operators") or {}
    if not run.sound(path) or not isinstance(values, Mapping):
        return
    required = set(values.get("require") or ())
    for i, name in enumerate(values.get("ignore") or ()):
        if name in model.CORE_OPERATORS:
            run.error((*path, "ignore", i), f"{name} is a core operator the relocation always requires; remove it")
        elif name in required:
            run.error((*path, "ignore", i), f"{name} is also in operators.require; keep it in one list")


# Ports OpenShift's own services listen on in a control-plane node's host network (openshift/openshift-docs
# snippets/network-flow-matrix.csv), and the NodePort range: the progress page must not take one of them.
RESERVED_PORTS = frozenset(
    {22, 53, 80, 111, 443, 1936, 2379, 2380, 5050, 5051, 6080, 6180, 6183, 6385, 6388, 6443, 8080, 8798}
    | set(range(9000, 10000))
    | set(range(10250, 10261))
    | {10300, 10309, 10357, 17697, 18080, 22623, 22624}
    | set(range(30000, 32768))
)


def _progress_page(run: _Run, spec: Mapping[str, Any]) -> None:
    path = (*SPEC, "progressPage", "port")
    port = (spec.get("progressPage") or {}).get("port")
    if run.sound(path) and port in RESERVED_PORTS:
        run.error(path, f"port {port} is used by OpenShift on the node; pick a free one such as 8090")


def check(data: Mapping[str, Any], base_dir: str, now: dt.datetime, broken: frozenset[findings.Path]) -> Checked:
    """Semantic findings for a site-config whose structural problems are at the paths in `broken`."""
    run = _Run(base_dir, now, broken)
    spec = data.get("spec")
    if isinstance(spec, Mapping):
        domain = _domain(run, spec) if "domain" in spec else None
        _network(run, spec)
        _certificates(run, spec, domain)
        _pull_secret(run, spec)
        _mirrors(run, spec, "imageDigestMirrors")
        _mirrors(run, spec, "imageTagMirrors")
        _registry_ca(run, spec)
        _mirror_credentials(run, spec)
        _ssh_keys(run, spec)
        _proxy(run, spec)
        _catalog_sources(run, spec)
        _extra_manifests(run, spec)
        _ntp(run, spec)
        _timeouts(run, spec)
        _operators(run, spec)
        _progress_page(run, spec)
    _deprecated(run, data)
    return Checked(tuple(run.out), run.sources, run.network, run.pull_secret, run.manifests)

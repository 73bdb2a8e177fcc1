"""The checks a schema cannot express: what the values mean, and what the referenced files hold.

Each section (domain, network, each certificate pair, pull secret, mirrors, registry CAs here; each setting's
own in its module, run through `registry.check`) is checked on its own and only when the schema found nothing wrong
inside it, so one mistake gives one message. Referenced files are read here, once, through `files`; their contents
come back with the findings so the loader builds the model from exactly the bytes that were checked. Every secret is
registered for redaction as soon as it is read. Every `host:port` (mirror sources and mirrors, registry-CA
registries, pull-secret registries) has its port checked here: the schema's patterns can say "digits" but not
"1-65535".
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
from collections.abc import Mapping
from typing import Any

from snoreloc import redact
from snoreloc.pki import certs
from snoreloc.siteconfig import (
    checks,
    files,
    findings,
    fragments,
    model,
    nmstate_check,
    schema,
    structural,
    yamlpos,
)
from snoreloc.siteconfig import registry as settings_registry
from snoreloc.siteconfig.settings import network_accept, network_probes

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_MAX_LABEL = 63
_REGISTRY_KEY = re.compile(fragments.MIRROR_PATTERN)


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
    if len(longest) > checks.MAX_NAME:
        problems.append(f"is too long: the console host would be {len(longest)} characters (limit {checks.MAX_NAME})")
    return [p for p in problems if p]


def _label_problem(label: str) -> str:
    if not label:
        return "has an empty label (two dots in a row?)"
    if len(label) > _MAX_LABEL:
        return f"label '{label[:16]}...' has {len(label)} characters; the limit is {_MAX_LABEL}"
    if not _LABEL.match(label):
        return f"label '{label}' may hold only a-z, 0-9 and '-', and must not start or end with '-'"
    return ""


def _domain(run: checks.Run, spec: Mapping[str, Any]) -> str | None:
    path = (*checks.SPEC, "domain")
    if not run.sound(path):
        return None
    problems = domain_problems(str(spec["domain"]))
    for problem in problems:
        run.error(path, problem)
    return None if problems else str(spec["domain"])


# The network file is read like the site-config: YAML 1.1 readings warned, whole numbers only (no nmstate field the
# schema allows takes a fraction), and the value of a secret-looking key (a Wi-Fi PSK, an 802.1X password) unquoted.
_NETWORK_READING = yamlpos.Reading(
    yaml11=True, integers_only=True, secret=lambda path: any(redact.is_secret_field(part) for part in path)
)


def _network_file(run: checks.Run, ref: str, accept: frozenset[str]) -> dict[str, Any] | None:
    path = (*checks.SPEC, "network", "file")
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


def _network(run: checks.Run, spec: Mapping[str, Any]) -> None:
    path = (*checks.SPEC, "network")
    network = spec.get("network")
    if not isinstance(network, Mapping):
        return
    if "file" in network:
        if run.sound(path):
            run.network = _network_file(run, str(network["file"]), network_accept.accepted(spec))
    else:
        # nmstate checks tolerate malformed parts, so a typo in one interface does not hide the others' problems
        run.out += [f for f in nmstate_check.check(network, path, network_accept.accepted(spec)) if run.sound(f.path)]
        run.network = dict(network)
    broken = any(f.severity is findings.Severity.ERROR and findings.is_under(f.path, path) for f in run.out)
    if run.network is not None and not broken:
        network_probes.check_probed(run, spec, run.network)


def _pair(run: checks.Run, which: str, pair: Mapping[str, Any], names: tuple[str, ...]) -> None:
    path = (*checks.SPEC, "certificates", which)
    cert = run.source((*path, "certificate"), pair["certificate"], secret=False)
    key = run.source((*path, "key"), pair["key"], secret=True)
    if cert is not None:
        for problem in certs.check_chain(cert, names, run.now):
            run.error(checks.origin((*path, "certificate"), pair["certificate"]), problem)
    if key is not None:
        for problem in certs.check_key(cert or b"", key):
            run.error(checks.origin((*path, "key"), pair["key"]), problem)


def _certificates(run: checks.Run, spec: Mapping[str, Any], domain: str | None) -> None:
    if not run.sound((*checks.SPEC, "certificates")):
        return
    for which, pair in (spec.get("certificates") or {}).items():
        if run.sound((*checks.SPEC, "certificates", which)):
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
    return checks.port_problem(registry)


def _auths(run: checks.Run, doc: Any, where: findings.Path, inline: bool) -> bool:
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


def _pull_secret_bytes(run: checks.Run, secret: Any) -> tuple[bytes | None, findings.Path]:
    path = (*checks.SPEC, "pullSecret")
    if "file" in secret:
        return run.read((*path, "file"), str(secret["file"]), secret=True), (*path, "file")
    if "json" in secret:
        raw = str(secret["json"]).encode()
        redact.register_secret(raw)
        return raw, (*path, "json")
    raw = json.dumps(secret["inline"], indent=2).encode()
    redact.register_secret(raw)
    return raw, (*path, "inline")


def _pull_secret(run: checks.Run, spec: Mapping[str, Any]) -> None:
    path = (*checks.SPEC, "pullSecret")
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
    return [((*checks.SPEC, key, index), entry) for index, entry in items if isinstance(entry, Mapping)]


def _mirror_ports(run: checks.Run, spec: Mapping[str, Any], key: str) -> None:
    for path, entry in _entries(spec, key):
        checks.port(run, (*path, "source"), entry.get("source"))
        mirrors = entry.get("mirrors")
        for position, mirror in enumerate(mirrors if isinstance(mirrors, list) else ()):
            checks.port(run, (*path, "mirrors", position), mirror)


def _mirrors(run: checks.Run, spec: Mapping[str, Any], key: str) -> None:
    _mirror_ports(run, spec, key)
    first_seen: dict[str, int] = {}
    for index, entry in enumerate(spec.get(key) or []):
        path = (*checks.SPEC, key, index)
        if not run.sound(path):
            continue
        if entry["source"] in entry["mirrors"]:
            run.warn((*path, "mirrors"), "lists its own source as a mirror")
        earlier = first_seen.setdefault(entry["source"], index)
        if earlier != index:
            run.warn((*path, "source"), f"same source as {key}[{earlier}]; the cluster merges their mirrors")


def _registry_ca(run: checks.Run, spec: Mapping[str, Any]) -> None:
    seen: dict[str, int] = {}
    for index, entry in enumerate(spec.get("registryCA") or []):
        path = (*checks.SPEC, "registryCA", index)
        checks.port(run, (*path, "registry"), entry.get("registry") if isinstance(entry, Mapping) else None)
        if not run.sound(path):
            continue
        registry = str(entry["registry"]).lower()
        if seen.setdefault(registry, index) != index:
            run.error(
                (*path, "registry"), f"already listed at registryCA[{seen[registry]}]; put both CAs in one bundle"
            )
        bundle = run.source((*path, "certificate"), entry["certificate"], secret=False)
        chain = (
            checks.bundle(run, checks.origin((*path, "certificate"), entry["certificate"]), bundle) if bundle else None
        )
        if chain:
            run.sources[(*path, "certificate")] = certs.pem_bundle(chain)  # without comments or stray text


def _has_credentials(registries: list[str], mirror: str) -> bool:
    """Whether a pull-secret `auths` key serves `mirror` (a key is a host[:port], optionally with a path prefix)."""
    return any(mirror == key or mirror.startswith(key.rstrip("/") + "/") for key in registries)


def _mirror_credentials(run: checks.Run, spec: Mapping[str, Any]) -> None:
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


def _deprecated(run: checks.Run, data: Mapping[str, Any]) -> None:
    for path in schema.DEPRECATED_PATHS:
        parent = _at(data, path[:-1])
        if isinstance(parent, Mapping) and path[-1] in parent:
            run.warn(path, str(schema.at(path)["description"]))


def _at(data: Any, path: findings.Path) -> Any:
    for part in path:
        data = data.get(part) if isinstance(data, Mapping) else None
    return data


def check(data: Mapping[str, Any], base_dir: str, now: dt.datetime, broken: frozenset[findings.Path]) -> checks.Checked:
    """Semantic findings for a site-config whose structural problems are at the paths in `broken`: the core
    sections here, then every setting's own checks (`registry.check`)."""
    run = checks.Run(base_dir, now, broken)
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
        settings_registry.check(run, spec)
    _deprecated(run, data)
    return checks.Checked(tuple(run.out), run.sources, run.network, run.pull_secret, run.parsed)

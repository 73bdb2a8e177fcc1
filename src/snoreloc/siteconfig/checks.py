"""What every offline check of the site-config is given and shares: the run (findings with their paths, so each
problem gets its field and line; the files read once; what the checks parsed for the model) and the small checks
several sections make (ports, CA bundles, where a `{file|pem}` value came from). `semantic` runs the core
sections and each setting's own `check` (`settings.*`) with one `Run`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from snoreloc import redact
from snoreloc.pki import certs
from snoreloc.siteconfig import claims, files, findings

SPEC: findings.Path = ("spec",)


MAX_NAME = 253


PORTS = range(1, 65536)


@dataclass(frozen=True)
class Checked:
    """Findings plus what the checks read and parsed, for the model: source bytes by the path of their
    `{file|pem}` object, the network, the pull secret document, and what a setting's check parsed (by its key)."""

    found: tuple[findings.Finding, ...]
    sources: Mapping[findings.Path, bytes] = field(repr=False)
    network: dict[str, Any] | None = None
    pull_secret: dict[str, Any] | None = field(default=None, repr=False)
    parsed: Mapping[str, Any] = field(default_factory=dict, repr=False)


class Run:
    """One run of the offline checks over a site-config whose schema errors are at the paths in `broken`."""

    def __init__(self, base_dir: str, now: dt.datetime, broken: frozenset[findings.Path]) -> None:
        self.base_dir = base_dir
        self.now = now
        self.broken = broken
        self.out: list[findings.Finding] = []
        self.sources: dict[findings.Path, bytes] = {}
        self.network: dict[str, Any] | None = None
        self.pull_secret: dict[str, Any] | None = None
        self.parsed: dict[str, Any] = {}  # what a setting's check parsed for its model, by the setting's key
        self.claimed: list[claims.Claim] = []  # what snoreloc will write for this site-config (`registry.claimed`)

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
    if not colon or not (port.isascii() and port.isdigit()) or int(port) in PORTS:
        return None
    return f"port {port} is out of range: ports are {PORTS.start}-{PORTS.stop - 1}"


def port(run: Run, path: findings.Path, reference: Any) -> None:
    """A port problem of the host[:port] reference at `path`, unless the schema already rejected it."""
    problem = port_problem(reference) if isinstance(reference, str) and run.sound(path) else None
    if problem:
        run.error(path, problem)


def bundle(run: Run, path: findings.Path, bundle: bytes) -> list[certs.Certificate] | None:
    try:
        chain = certs.parse_chain(bundle)
    except certs.CertError as exc:
        run.error(path, str(exc))
        return None
    for position, cert in enumerate(chain, start=1):
        if cert.not_valid_after_utc <= run.now:
            run.warn(path, f"certificate {position} of the bundle expired on {cert.not_valid_after_utc:%Y-%m-%d}")
    return chain

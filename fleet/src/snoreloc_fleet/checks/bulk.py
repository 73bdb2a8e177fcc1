"""Validating thousands of site-configs on every core: the agent's verdict per file, plus the facts fleet checks need.

Each worker reads one file, asks the agent (`agent.check_site_config`: the same rules as `snoreloc validate`, never
a copy of them) and sends back a small picklable `Verdict`: the findings, and the few facts the fleet-wide checks
compare across sites (domain, site addresses, certificate fingerprints and expiry dates). Certificates are parsed
here, in the workers, so the parent only groups and sorts.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import multiprocessing
import os
import pathlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from snoreloc.siblings import certs, safefile
from snoreloc_fleet import agent

if TYPE_CHECKING:
    from snoreloc.siblings import errors, model

Path = tuple[str | int, ...]
_CHUNK_MAX = 64


@dataclass(frozen=True)
class Finding:
    """One problem or warning of one site: the agent's, a fleet-wide check's, or the renderer's."""

    message: str
    path: str = ""
    line: int | None = None
    column: int | None = None
    severity: str = "error"
    check: str = "site-config"  # which rule: the agent's own, or a fleet-wide check's name
    inventory: str | None = None  # the inventory cell the field came from, when known


@dataclass(frozen=True)
class CertFact:
    """One certificate a site-config carries: where, its SHA-256, when it expires; `serving` for api/ingress."""

    path: Path
    position: int
    sha256: str
    not_after: dt.datetime
    serving: bool


@dataclass(frozen=True)
class Facts:
    """What the fleet-wide checks compare across sites (taken from the agent's model of a valid file)."""

    domain: str
    addresses: tuple[tuple[Path, str], ...] = ()  # (field, "ip/prefix")
    certificates: tuple[CertFact, ...] = ()


@dataclass(frozen=True)
class Job:
    site: str
    path: str
    shown: str  # the file's name as the user should see it
    now: dt.datetime


@dataclass(frozen=True)
class Verdict:
    site: str
    file: str
    findings: tuple[Finding, ...] = ()
    facts: Facts | None = field(default=None, repr=False)
    row: str | None = None  # the inventory row the site came from

    @property
    def valid(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)


def _finding(problem: errors.Problem) -> Finding:
    return Finding(problem.message, problem.path, problem.line, problem.column, problem.severity)


def _network_paths(network: Mapping[str, Any]) -> Iterator[tuple[Path, str]]:
    """Each interface address with its field (a network given as a file: the line shown is `network:`'s)."""
    for index, interface in enumerate(network.get("interfaces") or ()):
        if not isinstance(interface, Mapping):
            continue
        for family in ("ipv4", "ipv6"):
            for number, entry in enumerate((interface.get(family) or {}).get("address") or ()):
                where = ("spec", "network", "interfaces", index, family, "address", number, "ip")
                yield where, f"{entry.get('ip')}/{entry.get('prefix-length')}"


def _addresses(config: model.SiteConfig) -> tuple[tuple[Path, str], ...]:
    found = []
    for where, text in _network_paths(config.network or {}):
        try:
            interface = ipaddress.ip_interface(text)
        except ValueError:
            continue
        if not (interface.ip.is_link_local or interface.ip.is_loopback):
            found.append((where, text))
    return tuple(found)


def _bundle(path: Path, pem: bytes | str, *, serving: bool) -> list[CertFact]:
    data = pem.encode("ascii") if isinstance(pem, str) else pem
    try:
        chain = certs.load_all(data)
    except ValueError:
        return []
    return [
        CertFact(
            path,
            index,
            certs.fingerprint(cert),
            cert.not_valid_after_utc,
            serving and index == 0,
        )
        for index, cert in enumerate(chain)
    ]


def _certificates(config: model.SiteConfig) -> tuple[CertFact, ...]:
    out: list[CertFact] = []
    for which in ("api", "ingress"):
        pair = getattr(config.certificates, which)
        if pair is not None:
            out += _bundle(("spec", "certificates", which, "certificate"), pair.cert_pem, serving=True)
    for index, entry in enumerate(config.registry_ca):
        out += _bundle(("spec", "registryCA", index, "certificate"), entry.bundle_pem, serving=False)
    if config.proxy is not None and config.proxy.trusted_ca:
        out += _bundle(("spec", "proxy", "trustedCA"), config.proxy.trusted_ca, serving=False)
    return tuple(out)


def read_site_config(path: str) -> bytes:
    """A site-config's bytes by the bounded reader (a link judged by its target, as `snoreloc validate` reads one):
    a FIFO, a device or a directory raises safefile.Unfit at once; at most one byte past the agent's limit is read
    (its loader says the file is too large, with the limit)."""
    return safefile.read_head(path, safefile.SITE_FILE.limit + 1, follow=True)


def check_file(job: Job) -> Verdict:
    """The agent's verdict on one site-config file and, when it is valid, its facts. Runs in a worker."""
    try:
        raw = read_site_config(job.path)
    except safefile.Unfit as exc:
        return Verdict(job.site, job.shown, (Finding(f"cannot use {job.shown}: {exc}"),))
    except OSError as exc:
        return Verdict(job.site, job.shown, (Finding(f"cannot read {job.shown}: {exc.strerror}"),))
    report = agent.check_site_config(raw, base_dir=os.path.dirname(job.path), source=job.shown, now=job.now)
    found = tuple(_finding(p) for p in (*report.problems, *report.warnings))
    facts = None
    if report.config is not None:
        config = report.config
        facts = Facts(config.domain, _addresses(config), _certificates(config))
    return Verdict(job.site, job.shown, found, facts)


def _chunk(count: int, jobs: int) -> int:
    return max(1, min(_CHUNK_MAX, count // (jobs * 8) or 1))


def run(work: Sequence[Job], jobs: int) -> list[Verdict]:
    """Every job's verdict, in order; `jobs` worker processes (forked: the agent's modules are imported once)."""
    if jobs <= 1 or len(work) < 2:
        return [check_file(job) for job in work]
    agent.preload()  # import the agent's rules once, before forking, rather than once per worker
    context = multiprocessing.get_context("fork")
    with context.Pool(processes=jobs) as pool:
        return list(pool.imap(check_file, work, chunksize=_chunk(len(work), jobs)))


def discover(directory: pathlib.Path) -> list[tuple[str, pathlib.Path]]:
    """(site, file) for every `DIR/<site>/site-config.yaml` and every `DIR/*.yaml`, sorted by site."""
    nested = [(p.parent.name, p) for p in directory.glob(f"*/{agent.SITE_CONFIG_NAME}")]
    flat = [(p.stem, p) for p in directory.glob("*.yaml") if not p.is_dir()]  # a FIFO is a finding, not skipped
    return sorted(nested + flat)


def jobs_for(found: Iterable[tuple[str, pathlib.Path]], now: dt.datetime) -> list[Job]:
    return [Job(site, str(path), str(path), now) for site, path in found]

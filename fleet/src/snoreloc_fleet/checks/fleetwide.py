"""The checks no single site-config can make: they compare sites with each other or with the shipping date.

- the same domain at two sites (both clusters would answer to the same names);
- overlapping site addresses, when the owner says every site's network is its own (`--unique-addresses`);
- one serving certificate at two sites (its private key is then at both: a stolen stick opens the other site);
- a certificate that expires before the sticks are shipped (`--ship-by DATE`): valid today, dead on arrival.

They run on the facts the workers took from the agent's model of each valid file, so a file the agent rejects is
not compared (its own findings come first). Each finding is attached to every site it involves.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from snoreloc_fleet import agent
from snoreloc_fleet.checks import bulk

DUPLICATE_DOMAIN = "duplicate-domain"
OVERLAPPING_ADDRESSES = "overlapping-addresses"
REUSED_CERTIFICATE = "reused-certificate"
EXPIRES_BEFORE_SHIPPING = "expires-before-shipping"
_NAMED = 3  # other sites named in one message


@dataclass(frozen=True)
class Placed:
    """A fleet-wide finding for the site at `index` of the verdict list, at a field (its line found later)."""

    index: int
    path: bulk.Path
    check: str
    message: str


def _others(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_NAMED])
    return shown + (f" and {len(names) - _NAMED} more" if len(names) > _NAMED else "")


def duplicate_domains(verdicts: Sequence[bulk.Verdict]) -> Iterator[Placed]:
    by_domain: dict[str, list[int]] = defaultdict(list)
    for index, verdict in enumerate(verdicts):
        if verdict.facts is not None:
            by_domain[verdict.facts.domain.lower().rstrip(".")].append(index)
    for domain, indexes in by_domain.items():
        if len(indexes) < 2:
            continue
        for index in indexes:
            others = [verdicts[i].site for i in indexes if i != index]
            message = f"domain {domain} is also the domain of {_others(others)}: every site needs its own"
            yield Placed(index, ("spec", "domain"), DUPLICATE_DOMAIN, message)


@dataclass(frozen=True)
class _Range:
    start: int
    end: int
    index: int
    path: bulk.Path
    text: str


def _ranges(verdicts: Sequence[bulk.Verdict]) -> dict[int, list[_Range]]:
    by_version: dict[int, list[_Range]] = defaultdict(list)
    for index, verdict in enumerate(verdicts):
        for path, text in verdict.facts.addresses if verdict.facts else ():
            network = ipaddress.ip_interface(text).network
            start, end = int(network.network_address), int(network.broadcast_address)
            by_version[network.version].append(_Range(start, end, index, path, text))
    return by_version


def _overlaps(ranges: list[_Range]) -> Iterator[tuple[_Range, _Range]]:
    """Each range that overlaps a range of another site, with one such range (a sweep: n log n, not n squared)."""
    ranges.sort(key=lambda r: (r.start, -r.end))
    reach: _Range | None = None  # the range reaching furthest so far
    other: _Range | None = None  # the one reaching furthest among the other sites than `reach`'s
    for current in ranges:
        for candidate in (reach, other):
            if candidate is not None and candidate.index != current.index and current.start <= candidate.end:
                yield current, candidate
                break
        if reach is None or current.end > reach.end:
            if reach is not None and reach.index != current.index:
                other = reach
            reach = current
        elif current.index != reach.index and (other is None or current.end > other.end):
            other = current


def overlapping_addresses(verdicts: Sequence[bulk.Verdict]) -> Iterator[Placed]:
    seen: set[tuple[int, bulk.Path]] = set()
    for ranges in _ranges(verdicts).values():
        for mine, theirs in _overlaps(ranges):
            for a, b in ((mine, theirs), (theirs, mine)):
                if (a.index, a.path) in seen:
                    continue
                seen.add((a.index, a.path))
                message = (
                    f"address {a.text} overlaps {verdicts[b.index].site}'s {b.text} "
                    f"({agent.dotted(b.path)}); --unique-addresses says each site's network is its own"
                )
                yield Placed(a.index, a.path, OVERLAPPING_ADDRESSES, message)


def reused_certificates(verdicts: Sequence[bulk.Verdict]) -> Iterator[Placed]:
    by_digest: dict[str, list[tuple[int, bulk.CertFact]]] = defaultdict(list)
    for index, verdict in enumerate(verdicts):
        for cert in verdict.facts.certificates if verdict.facts else ():
            if cert.serving:
                by_digest[cert.sha256].append((index, cert))
    for digest, users in by_digest.items():
        sites = sorted({index for index, _ in users})
        if len(sites) < 2:
            continue
        for index, cert in users:
            others = [verdicts[i].site for i in sites if i != index]
            message = (
                f"this serving certificate (SHA-256 {digest[:16]}...) is also used by {_others(others)}; its key "
                "travels on every one of those sticks: issue each site its own"
            )
            yield Placed(index, cert.path, REUSED_CERTIFICATE, message)


def expiring(verdicts: Sequence[bulk.Verdict], ship_by: dt.date) -> Iterator[Placed]:
    """Certificates not valid through the whole of the `ship_by` day (UTC)."""
    deadline = dt.datetime.combine(ship_by + dt.timedelta(days=1), dt.time(), tzinfo=dt.UTC)
    for index, verdict in enumerate(verdicts):
        for cert in verdict.facts.certificates if verdict.facts else ():
            if cert.not_after < deadline:
                which = f"certificate {cert.position + 1} of the bundle" if cert.position else "the certificate"
                message = (
                    f"{which} expires on {cert.not_after:%Y-%m-%d}, inside the shipping window "
                    f"(--ship-by {ship_by:%Y-%m-%d}): renew it before the sticks are made"
                )
                yield Placed(index, cert.path, EXPIRES_BEFORE_SHIPPING, message)


def check(verdicts: Sequence[bulk.Verdict], *, unique_addresses: bool, ship_by: dt.date | None) -> list[Placed]:
    found = [*duplicate_domains(verdicts), *reused_certificates(verdicts)]
    if unique_addresses:
        found += overlapping_addresses(verdicts)
    if ship_by is not None:
        found += expiring(verdicts, ship_by)
    return found

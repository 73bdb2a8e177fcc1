"""Shelf life (issue 37): which certificates decide whether a sealed node comes up unattended, the date it must boot
by, and where a node back from the depot stands. One definition for `seal` (which records it), the node (which acts
on it before kubelet starts) and the report the hub shows.

Nothing rotates while a node is powered off. At its first boot at the site each certificate that expired on the
shelf falls in one of three classes (`AtExpiry`), taken from the operators' sources:

- `CSR`: the kubelet's own client and serving certificates (files on the node, 30 days: kube-controller-manager's
  `cluster-signing-duration: 720h`, its operator's `bindata/assets/config/defaultconfig.yaml`).
  The kubelet asks again by CSR (kubernetes KEP-266); nobody approves on SNO but snoreloc's `csr` step.
- `REGENERATED`: control-plane signers and their leaves (kube-control-plane-signer 60 days, aggregator-client-signer
  30, kube-controller-manager's csr-signer-signer 60 and csr-signer 30: the two operators'
  `pkg/operator/certrotationcontroller/certrotationcontroller.go`). The cert-regeneration controller of the
  kube-apiserver and the cert-recovery controller of kube-controller-manager rewrite expired ones at start
  (openshift/enhancements `kube-apiserver/auto-cert-recovery.md`; the operator's
  `NewCertRotationControllerOnlyWhenExpired`). snoreloc waits for each, bounded.
- `HORIZON`: what nothing recovers unattended. The `kube-apiserver-to-kubelet-signer` (365 days, renewed at 292:
  docs "node certificates") is the date the docs tell an administrator to restart a shut-down cluster by
  (openshift-docs `modules/graceful-shutdown.adoc`, PR #45621: "You can shut down a cluster until a year from the
  installation date"); the installer's 10-year serving signers outlive any shelf but are read all the same.

The earliest `HORIZON` expiry is the node's *must boot by* date.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from snoreloc.pki import certs

KAS_OPERATOR = "openshift-kube-apiserver-operator"
KCM_OPERATOR = "openshift-kube-controller-manager-operator"
KUBELET_CLIENT_FILE = "/var/lib/kubelet/pki/kubelet-client-current.pem"
KUBELET_SERVER_FILE = "/var/lib/kubelet/pki/kubelet-server-current.pem"
NOT_AFTER_ANNOTATION = "auth.openshift.io/certificate-not-after"  # library-go certrotation's
RECOVERY_DOC = "OpenShift's documented recovery: 'Recovering from expired control plane certificates'"
_CERT_BLOCK = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.DOTALL)
_STAMP = "%Y-%m-%dT%H:%M:%SZ"


class AtExpiry(enum.StrEnum):
    """What happens at the site to a certificate that expired on the shelf."""

    CSR = "csr"  # the kubelet asks again; snoreloc approves this node's CSRs
    REGENERATED = "regenerated"  # the control plane regenerates it at start
    HORIZON = "horizon"  # nothing recovers it unattended: the node must boot before it expires


@dataclass(frozen=True)
class Watched:
    """One certificate whose expiry decides whether the node comes up unattended: a Secret or a node file."""

    name: str
    at_expiry: AtExpiry
    namespace: str = ""
    path: str = ""
    why: str = ""  # what happens when it has expired, for people


WATCHED = (
    Watched(
        "kube-apiserver-to-kubelet-signer",
        AtExpiry.HORIZON,
        KAS_OPERATOR,
        why="the kubelet's CA (365 days, renewed at 292); OpenShift restarts gracefully only before it expires",
    ),
    Watched("loadbalancer-serving-signer", AtExpiry.HORIZON, KAS_OPERATOR, why="the installer's 10-year signer"),
    Watched("localhost-serving-signer", AtExpiry.HORIZON, KAS_OPERATOR, why="the installer's 10-year signer"),
    Watched("service-network-serving-signer", AtExpiry.HORIZON, KAS_OPERATOR, why="the installer's 10-year signer"),
    Watched(
        "kube-control-plane-signer",
        AtExpiry.REGENERATED,
        KAS_OPERATOR,
        why="the kube-apiserver's cert-regeneration controller rewrites it at start",
    ),
    Watched(
        "aggregator-client-signer",
        AtExpiry.REGENERATED,
        KAS_OPERATOR,
        why="the kube-apiserver's cert-regeneration controller rewrites it at start",
    ),
    Watched(
        "csr-signer-signer",
        AtExpiry.REGENERATED,
        KCM_OPERATOR,
        why="kube-controller-manager's cert-recovery controller rewrites it at start",
    ),
    Watched(
        "csr-signer",
        AtExpiry.REGENERATED,
        KCM_OPERATOR,
        why="kube-controller-manager's cert-recovery controller rewrites it at start; it signs the kubelet's CSRs",
    ),
    Watched(
        "kubelet-client-current",
        AtExpiry.CSR,
        path=KUBELET_CLIENT_FILE,
        why="the kubelet asks for a new client certificate by CSR; snoreloc approves this node's",
    ),
    Watched(
        "kubelet-server-current",
        AtExpiry.CSR,
        path=KUBELET_SERVER_FILE,
        why="the kubelet asks for a new serving certificate by CSR; snoreloc approves this node's",
    ),
)
BY_NAME = {watched.name: watched for watched in WATCHED}


def stamp(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime(_STAMP)


def parse_stamp(text: str) -> dt.datetime:
    """A `YYYY-MM-DDTHH:MM:SSZ` time; ValueError otherwise."""
    return dt.datetime.strptime(text, _STAMP).replace(tzinfo=dt.UTC)


def pem_not_after(pem: bytes) -> dt.datetime:
    """notAfter of the first certificate of a PEM file (a kubelet's file holds its key too, never parsed)."""
    block = _CERT_BLOCK.search(pem)
    if block is None:
        raise ValueError("no certificate in the file")
    return certs.not_after(block.group(0))


def secret_not_after(secret: Mapping[str, Any] | None) -> dt.datetime | None:
    """A TLS Secret's notAfter: its certificate's, else library-go's annotation; None when neither reads."""
    if secret is None:
        return None
    data = secret.get("data") or {}
    try:
        return pem_not_after(base64.b64decode(str(data.get("tls.crt", "")), validate=True))
    except (ValueError, binascii.Error):
        pass
    annotations = (secret.get("metadata") or {}).get("annotations") or {}
    try:
        return parse_stamp(str(annotations.get(NOT_AFTER_ANNOTATION, "")))
    except ValueError:
        return None


@dataclass(frozen=True)
class Reading:
    """One watched certificate as read: when it expires."""

    name: str
    not_after: dt.datetime

    @property
    def watched(self) -> Watched:
        return BY_NAME[self.name]


@dataclass(frozen=True)
class Horizon:
    """What `seal` records: when it sealed, every reading, and the date the node must boot by (None: no signer
    that sets it could be read)."""

    sealed_at: dt.datetime
    readings: tuple[Reading, ...]

    @property
    def limit(self) -> Reading | None:
        horizon = [r for r in self.readings if r.watched.at_expiry is AtExpiry.HORIZON]
        return min(horizon, key=lambda r: r.not_after) if horizon else None

    @property
    def must_boot_by(self) -> dt.datetime | None:
        limit = self.limit
        return limit.not_after if limit else None

    def record(self) -> dict[str, Any]:
        """The seal marker's `shelf` entry (and what the node reports)."""
        limit = self.limit
        return {
            "sealedAt": stamp(self.sealed_at),
            "mustBootBy": stamp(limit.not_after) if limit else None,
            "setBy": limit.name if limit else None,
            "certificates": [{"name": r.name, "notAfter": stamp(r.not_after)} for r in self.readings],
        }

    def with_readings(self, fresher: Iterable[Reading]) -> Horizon:
        """The same horizon with some readings replaced (the node's own files, read again at the site)."""
        by_name = {r.name: r for r in self.readings}
        by_name.update({r.name: r for r in fresher})
        return Horizon(self.sealed_at, tuple(sorted(by_name.values(), key=lambda r: r.name)))


def from_record(record: Mapping[str, Any], sealed_at: dt.datetime) -> Horizon:
    """A horizon from a seal marker's `shelf` entry; entries it does not know or cannot read are left out."""
    readings = []
    for entry in record.get("certificates") or []:
        if not isinstance(entry, Mapping) or entry.get("name") not in BY_NAME:
            continue
        try:
            readings.append(Reading(str(entry["name"]), parse_stamp(str(entry.get("notAfter", "")))))
        except ValueError:
            continue
    return Horizon(sealed_at, tuple(readings))


@dataclass(frozen=True)
class Standing:
    """Where a node back from the shelf stands at `now`: its expired certificates, by what happens to them."""

    horizon: Horizon
    now: dt.datetime

    def expired(self, at_expiry: AtExpiry) -> tuple[Reading, ...]:
        return tuple(r for r in self.horizon.readings if r.watched.at_expiry is at_expiry and r.not_after <= self.now)

    @property
    def stuck(self) -> tuple[Reading, ...]:
        return self.expired(AtExpiry.HORIZON)

    @property
    def recovering(self) -> tuple[Reading, ...]:
        return self.expired(AtExpiry.REGENERATED) + self.expired(AtExpiry.CSR)

    @property
    def shelf_days(self) -> int:
        return max(0, (self.now - self.horizon.sealed_at).days)

    def summary(self) -> str:
        """One line for the step's note and the journal."""
        if self.stuck:
            return f"past the horizon: {', '.join(r.name for r in self.stuck)} expired"
        if not self.recovering:
            return "within the horizon: no certificate expired on the shelf"
        return "recovering: " + ", ".join(f"{r.name} ({r.watched.at_expiry})" for r in self.recovering)

    def verdict(self) -> str:
        """The words for a node past what it can recover unattended (only meaningful when `stuck`)."""
        first = min(self.stuck, key=lambda r: r.not_after)
        return (
            f"this node was sealed on {self.horizon.sealed_at:%Y-%m-%d} and waited {self.shelf_days} days; its "
            f"{first.name} expired on {first.not_after:%Y-%m-%d} ({first.watched.why}), and OpenShift does not "
            "recover it unattended. Nothing on this node was changed"
        )


VERDICT_HINT = (
    "Power the node off and return it to the depot to be re-installed and sealed again (a re-sealed node gets a new "
    f"must-boot-by date), or have an OpenShift administrator follow {RECOVERY_DOC} on site."
)

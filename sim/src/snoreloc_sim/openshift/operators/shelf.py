"""Time on the shelf (issue 37): the platform's certificates as a node sealed `days` ago has them, and what the
platform does at start with each one that expired meanwhile.

Nothing rotates while a node is powered off, so after N days on the shelf every certificate is N days older than it
was at the seal. The model: the cluster was installed `INSTALL_AGE_DAYS` before the seal and every certificate
below was issued at install (a fresh factory cluster has rotated none yet), with the lifetime its source gives.
The simulator's start is the node's first boot at the site. Then, per certificate (`Cert.at_start`):

- `REGENERATED`: the control plane regenerates it by itself. openshift/enhancements
  `enhancements/kube-apiserver/auto-cert-recovery.md` (2019) puts a cert-regeneration controller in the
  kube-apiserver static pod (over `localhost-recovery`) and a cert-recovery controller in kube-controller-manager's;
  cluster-kube-controller-manager-operator's `NewCertRotationControllerOnlyWhenExpired` is that recovery mode for its
  `csr-signer-signer` and `csr-signer`. Modelled: rewritten `REGEN_DELAY` cluster seconds after start (the
  enhancement gives no figure; the delay is an estimate).
- `CSR`: the kubelet's own certificates, files on the node. An expired client certificate sends the kubelet back to
  its bootstrap kubeconfig to ask for a new one by CSR (kubernetes KEP-266), the serving one likewise (signer
  `kubernetes.io/kubelet-serving`); the enhancement's non-goals leave CSR approval to a person ("A cluster-admin must
  manually approve client CSRs"), and on SNO no Machine lets the machine-approver do it. The CSRs are made by
  `kubelet.shelve`; the kube-controller-manager signs an approved one only once its own `csr-signer` is valid again
  (`csr_signer_ready`), so the chain is regeneration, then approval, then signing.
- `STUCK`: the `kube-apiserver-to-kubelet-signer`. The docs promise a graceful restart only before its
  `auth.openshift.io/certificate-not-after` (openshift-docs `modules/graceful-shutdown.adoc`, PR #45621: "You can
  shut down a cluster until a year from the installation date"); what happens after is not automatic in any source
  found, so nothing regenerates it here and the node never turns Ready (`blocked`). Unsure whether a real cluster
  half-recovers; the model takes the documented promise as the limit.

A certificate still valid but past its refresh point is renewed at start by its operator (library-go
`pkg/operator/certrotation`: a signer past `Refresh` is rotated by the next sync), after the same delay; the
`kube-apiserver-to-kubelet-signer` is renewed at 292 days (docs "node certificates": "generates a new
kube-apiserver-to-kubelet-signer CA certificate at 292 days. The old CA certificate is removed after 365 days").

Lifetimes: cluster-kube-apiserver-operator and cluster-kube-controller-manager-operator
`pkg/operator/certrotationcontroller/certrotationcontroller.go` (signers 60 days refreshed at 30, leaves 30 refreshed
at 15, `aggregator-client-signer` 30/15, the serving signers 10 years "effectively do not rotate"); the kubelet's
30 days are kube-controller-manager's `cluster-signing-duration: 720h` (its operator's
`bindata/assets/config/defaultconfig.yaml`).
"""

from __future__ import annotations

import base64
import datetime
from dataclasses import dataclass

from snoreloc_sim.kube import certs, model
from snoreloc_sim.openshift.operators import base

Obj = model.Obj

REGENERATED, CSR, STUCK = "regenerated", "csr", "stuck"
INSTALL_AGE_DAYS = 1  # installed, then sealed a day later
REGEN_DELAY = 30.0  # cluster seconds after start before a regeneration or renewal is written (an estimate)
NOT_AFTER = "auth.openshift.io/certificate-not-after"  # library-go certrotation's annotations
NOT_BEFORE = "auth.openshift.io/certificate-not-before"
ISSUER = "auth.openshift.io/certificate-issuer"
KAS_OPERATOR = "openshift-kube-apiserver-operator"
KCM_OPERATOR = "openshift-kube-controller-manager-operator"
KUBELET_CLIENT_FILE = "/var/lib/kubelet/pki/kubelet-client-current.pem"
KUBELET_SERVER_FILE = "/var/lib/kubelet/pki/kubelet-server-current.pem"
TEN_YEARS = 3650


@dataclass(frozen=True)
class Cert:
    """One certificate of the model: where it lives, its lifetime and refresh point (days), what happens at start
    once it has expired, and the signer (another entry's name) that issues it, if not self-signed."""

    name: str
    namespace: str
    lifetime: int
    refresh: int
    at_start: str
    signer: str = ""
    path: str = ""  # a node file instead of a Secret

    @property
    def is_signer(self) -> bool:
        return not self.signer


CERTS = (
    Cert("kube-apiserver-to-kubelet-signer", KAS_OPERATOR, 365, 292, STUCK),
    Cert("kube-control-plane-signer", KAS_OPERATOR, 60, 30, REGENERATED),
    Cert("aggregator-client-signer", KAS_OPERATOR, 30, 15, REGENERATED),
    Cert("localhost-serving-signer", KAS_OPERATOR, TEN_YEARS, 8 * 365, STUCK),
    Cert("service-network-serving-signer", KAS_OPERATOR, TEN_YEARS, 8 * 365, STUCK),
    Cert("csr-signer-signer", KCM_OPERATOR, 60, 30, REGENERATED),
    Cert("csr-signer", KCM_OPERATOR, 30, 15, REGENERATED, signer="csr-signer-signer"),
    Cert("kubelet-client", "openshift-kube-apiserver", 30, 15, REGENERATED, signer="kube-apiserver-to-kubelet-signer"),
    Cert("aggregator-client", "openshift-kube-apiserver", 30, 15, REGENERATED, signer="aggregator-client-signer"),
    Cert(
        "kube-controller-manager-client-cert-key",
        "openshift-config-managed",
        30,
        15,
        REGENERATED,
        signer="kube-control-plane-signer",
    ),
    Cert(
        "kube-scheduler-client-cert-key", "openshift-config-managed", 30, 15, REGENERATED, "kube-control-plane-signer"
    ),
    Cert("kubelet-client-current", "", 30, 24, CSR, signer="csr-signer", path=KUBELET_CLIENT_FILE),
    Cert("kubelet-server-current", "", 30, 24, CSR, signer="csr-signer", path=KUBELET_SERVER_FILE),
)
BY_NAME = {cert.name: cert for cert in CERTS}


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _stamp(when: datetime.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def installed_at(days: int) -> datetime.datetime:
    """When the cluster was installed, for a node sealed `days` ago."""
    return _now() - datetime.timedelta(days=days + INSTALL_AGE_DAYS)


def _mint(cert: Cert, issuer: certs.KeyPair | None, start: datetime.datetime, node: str) -> certs.KeyPair:
    end = start + datetime.timedelta(days=cert.lifetime)
    if issuer is None:
        return certs.make_ca(f"{cert.name}@{int(start.timestamp())}", days=cert.lifetime, start=start)
    if cert.path == KUBELET_SERVER_FILE:
        return certs.issue(issuer, [node], start=start, not_after=end)
    common = f"system:node:{node}" if cert.path else f"system:{cert.name}"
    return certs.issue(issuer, [common], client=True, start=start, not_after=end)


def _secret(cert: Cert, pair: certs.KeyPair, issuer: str) -> Obj:
    body = base.tls_secret(cert.namespace, cert.name, pair)
    found = pair.cert
    body["metadata"]["annotations"] = {
        NOT_AFTER: _stamp(found.not_valid_after_utc),
        NOT_BEFORE: _stamp(found.not_valid_before_utc),
        ISSUER: issuer,
    }
    return body


def age(cluster: model.Cluster, *, days: int, node: str) -> tuple[dict[str, bytes], list[Obj]]:
    """Write every Secret of the model as a node sealed `days` ago has it; the kubelet's files (path -> PEM,
    certificate then key) for the node's root, and the Secrets as written (what `seal` read at the factory)."""
    start = installed_at(days)
    pairs: dict[str, certs.KeyPair] = {}
    files: dict[str, bytes] = {}
    written: list[Obj] = []
    secrets_type = base.rtype(cluster, base.SECRETS)
    for cert in CERTS:  # signers come before what they sign
        issuer = pairs.get(cert.signer)
        pair = pairs[cert.name] = _mint(cert, issuer, start, node)
        if cert.path:
            files[cert.path] = pair.cert_pem + pair.key_pem
            continue
        written.append(cluster.store.create(secrets_type, _secret(cert, pair, cert.signer or cert.name)))
    return files, written


def not_after(cluster: model.Cluster, cert: Cert) -> datetime.datetime | None:
    """The Secret's notAfter as its annotation says (None: no such Secret)."""
    found = base.find(cluster, base.SECRETS, cert.name, cert.namespace)
    if found is None:
        return None
    stamp = (found["metadata"].get("annotations") or {}).get(NOT_AFTER, "")
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC) if stamp else None


def expired(cluster: model.Cluster, cert: Cert) -> bool:
    end = not_after(cluster, cert)
    return end is not None and end <= _now()


def _past_refresh(cluster: model.Cluster, cert: Cert) -> bool:
    end = not_after(cluster, cert)
    return end is not None and end - datetime.timedelta(days=cert.lifetime - cert.refresh) <= _now()


def csr_signer_ready(cluster: model.Cluster) -> bool:
    """Whether kube-controller-manager can sign the kubelet's CSRs (its `csr-signer` is valid)."""
    return not expired(cluster, BY_NAME["csr-signer"])


def blocked(cluster: model.Cluster) -> list[str]:
    """The expired certificates nothing recovers at start (the node stays NotReady while any is listed)."""
    return [cert.name for cert in CERTS if cert.at_start == STUCK and not cert.path and expired(cluster, cert)]


def start(cluster: model.Cluster) -> None:
    """The node boots at the site: schedule the regeneration of each expired `REGENERATED` certificate and the
    renewal of each valid one past its refresh point; an expired `STUCK` one stays as it is."""
    for cert in CERTS:
        if cert.path or not _past_refresh(cluster, cert):
            continue
        if cert.at_start == STUCK and expired(cluster, cert):
            continue
        cluster.timeline.after(REGEN_DELAY, lambda cert=cert: regenerate(cluster, cert))  # type: ignore[misc]


def regenerate(cluster: model.Cluster, cert: Cert) -> None:
    """Rewrite the Secret with a certificate valid from now for its lifetime, signed by its signer's current pair."""
    issuer = _pair(cluster, BY_NAME[cert.signer]) if cert.signer else None
    pair = _mint(cert, issuer, _now() - datetime.timedelta(minutes=1), "")
    body = _secret(cert, pair, cert.signer or cert.name)
    found = base.find(cluster, base.SECRETS, cert.name, cert.namespace)
    if found is not None:
        body["metadata"] = {**found["metadata"], "annotations": body["metadata"]["annotations"]}
    cluster.store.update(base.rtype(cluster, base.SECRETS), body, check_rv=False)


def _pair(cluster: model.Cluster, cert: Cert) -> certs.KeyPair | None:
    found = base.find(cluster, base.SECRETS, cert.name, cert.namespace)
    if found is None:
        return None
    data = found.get("data") or {}
    return certs.KeyPair(base64.b64decode(data["tls.crt"]), base64.b64decode(data["tls.key"]))


def kubelet_expired(days: int) -> bool:
    """Whether the kubelet's client certificate of a node sealed `days` ago has expired."""
    return BY_NAME["kubelet-client-current"].lifetime <= days + INSTALL_AGE_DAYS

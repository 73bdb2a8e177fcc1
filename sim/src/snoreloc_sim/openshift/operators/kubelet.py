"""A kubelet back from the shelf, and kube-controller-manager's CSR signer.

A node that sat powered off past its kubelet client certificate's expiry cannot post status (Node Ready=Unknown)
and asks for new certificates: a client CSR (signer `kubernetes.io/kube-apiserver-client-kubelet`) and a
serving CSR (`kubernetes.io/kubelet-serving`, SANs = node name and IPs). Nothing approves them on their own
here; that is the agent's job, and it must approve only the node's own requests: a decoy CSR from another
requester that claims the node's identity is created alongside and must stay pending. Once a CSR is approved,
the signer issues its certificate a moment later, and the kubelet, once it has a client certificate, reports
Ready again.

While the node is NotReady the static-pod operators say so: `NodeController` below marks kube-apiserver,
kube-controller-manager, kube-scheduler and etcd Degraded with `NodeControllerDegraded`, and every rollout is held
(see `base.Serial`) until the node is Ready.
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
import threading

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from snoreloc_sim.kube import certs, model
from snoreloc_sim.openshift.operators import base, conditions, shelf, watch

Obj = model.Obj

CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
SERVING_SIGNER = "kubernetes.io/kubelet-serving"
CSR_DELAY = 3.0  # cluster seconds after start before the kubelet asks
SIGN_DELAY = 2.0
READY_DELAY = 5.0
DECOY_REQUESTER = "system:serviceaccount:default:csr-requester"


def csr_pem(common_name: str, organization: str, sans: list[str]) -> bytes:
    """A PEM certificate request as the kubelet sends it (its own fresh key; the key stays on the node)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )
    builder = x509.CertificateSigningRequestBuilder().subject_name(subject)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName([_general_name(n) for n in sans]), critical=False)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def csr_object(requester: str, groups: list[str], signer: str, request: bytes, usages: list[str]) -> Obj:
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": f"csr-{secrets.token_hex(3)[:5]}"},
        "spec": {
            "request": base.b64(request),
            "signerName": signer,
            "usages": usages,
            "username": requester,
            "groups": groups,
        },
    }


def node_requests(node: str, ips: list[str]) -> list[Obj]:
    """The kubelet's client and serving CSRs, and the decoy that impersonates it from another requester."""
    identity, group = f"system:node:{node}", "system:nodes"
    groups = [group, "system:authenticated"]
    return [
        csr_object(identity, groups, CLIENT_SIGNER, csr_pem(identity, group, []), ["digital signature", "client auth"]),
        csr_object(
            identity,
            groups,
            SERVING_SIGNER,
            csr_pem(identity, group, [node, *ips]),
            ["digital signature", "server auth"],
        ),
        csr_object(
            DECOY_REQUESTER,
            ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"],
            CLIENT_SIGNER,
            csr_pem(identity, group, []),
            ["digital signature", "client auth"],
        ),
    ]


def shelve(cluster: model.Cluster, node: str, ips: list[str]) -> None:
    """Schedule the expired kubelet's certificate requests a few cluster seconds from now."""

    def ask() -> None:
        csrs = base.rtype(cluster, base.CSRS)
        for body in node_requests(node, ips):
            cluster.store.create(csrs, body)

    cluster.timeline.after(CSR_DELAY, ask)


def is_approved(csr: Obj | None) -> bool:
    found = conditions.condition(csr or {}, "Approved")
    return found is not None and found.get("status") == "True"


class CSRSigner:
    """kube-controller-manager's signer for the kubelet signers: signs approved CSRs, nothing else."""

    def __init__(self, cluster: model.Cluster) -> None:
        self._cluster = cluster
        self._lock = threading.Lock()
        self._ca: certs.KeyPair | None = None

    def watches(self) -> tuple[watch.Watch, ...]:
        """CertificateSigningRequests, created or updated: the approval is a change of their conditions."""
        return (watch.Watch(base.CSRS, self._csr_changed, events=watch.LIVE, changed=("status.conditions",)),)

    def _csr_changed(self, change: watch.Change) -> None:
        new = change.new or {}
        if is_approved(change.old) or not is_approved(new):
            return
        if (new["spec"].get("signerName") in (CLIENT_SIGNER, SERVING_SIGNER)) and not new.get("status", {}).get(
            "certificate"
        ):
            name = new["metadata"]["name"]
            self._cluster.timeline.after(SIGN_DELAY, lambda: self.sign(name))

    def _signer(self) -> certs.KeyPair:
        with self._lock:
            if self._ca is None:
                self._ca = certs.make_ca(f"kube-csr-signer_@{_epoch()}")
            return self._ca

    def sign(self, name: str) -> None:
        csr = base.find(self._cluster, base.CSRS, name)
        if csr is None or not is_approved(csr) or (csr.get("status") or {}).get("certificate"):
            return
        if not shelf.csr_signer_ready(self._cluster):  # its csr-signer expired on the shelf: signs once regenerated
            self._cluster.timeline.after(SIGN_DELAY, lambda: self.sign(name))
            return
        request = x509.load_pem_x509_csr(base.unb64(csr["spec"]["request"]))
        server = csr["spec"]["signerName"] == SERVING_SIGNER
        csr.setdefault("status", {})["certificate"] = base.b64(_issue(self._signer(), request, server=server))
        base.write_status(self._cluster, base.CSRS, csr)
        if not server and csr["spec"].get("username", "").startswith("system:node:"):
            node = csr["spec"]["username"].removeprefix("system:node:")
            self._cluster.timeline.after(READY_DELAY, lambda: mark_ready(self._cluster, node))


def _epoch() -> int:
    return int(datetime.datetime.now(datetime.UTC).timestamp())


def _issue(ca: certs.KeyPair, request: x509.CertificateSigningRequest, *, server: bool) -> bytes:
    now = datetime.datetime.now(datetime.UTC)
    usage = x509.oid.ExtendedKeyUsageOID.SERVER_AUTH if server else x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(request.subject)
        .issuer_name(ca.cert.subject)
        .public_key(request.public_key())
        .serial_number(secrets.randbits(127))
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    try:
        sans = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        builder = builder.add_extension(sans, critical=False)
    except x509.ExtensionNotFound:
        pass
    return builder.sign(ca.key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def mark_ready(cluster: model.Cluster, node_name: str) -> None:
    """The kubelet has a client certificate again and posts Ready (not while a certificate nothing recovers has
    expired: `shelf.blocked`)."""
    node = base.find(cluster, base.NODES, node_name)
    if node is None or shelf.blocked(cluster):
        return
    now = model.now_rfc3339()  # core types keep second precision
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            if cond.get("status") != "True":
                cond.update(status="True", reason="KubeletReady", message="kubelet is posting ready status")
                cond["lastTransitionTime"] = now
            cond["lastHeartbeatTime"] = now
    base.write_status(cluster, base.NODES, node)


# The operators built on library-go's static-pod controllers, whose node controller reports NotReady masters:
# openshift/library-go pkg/operator/staticpod/controller/node/node_controller.go sets the operator condition
# `NodeControllerDegraded` (reason `MasterNodesReady`) with "The master nodes not ready: node %q not ready since
# %s because %s (%s)", and its status union turns that into the ClusterOperator's Degraded=True with reason
# `NodeController_MasterNodesReady` and the message prefixed `NodeControllerDegraded: `.
STATIC_POD_OPERATORS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd")
NODE_DEGRADED_REASON = "NodeController_MasterNodesReady"


def not_ready_text(node: Obj) -> str | None:
    """The node controller's words for a NotReady node (None when Ready)."""
    ready = conditions.condition(node, "Ready") or {}
    if ready.get("status") == "True":
        return None
    return (
        f'node "{node["metadata"]["name"]}" not ready since {ready.get("lastTransitionTime", "")} because '
        f"{ready.get('reason', '')} ({ready.get('message', '')})"
    )


class NodeController:
    """The static-pod operators' node controller: Degraded while a master node is NotReady, cleared once Ready."""

    def __init__(self, cluster: model.Cluster) -> None:
        self._cluster = cluster
        self._lock = threading.Lock()
        self._degraded = False  # the seed starts every operator healthy

    def watches(self) -> tuple[watch.Watch, ...]:
        """Every change of a Node (its Ready condition)."""
        return (watch.Watch(base.NODES, lambda _change: self._cluster.timeline.after(0, self.sync)),)

    def sync(self) -> None:
        nodes = base.rtype(self._cluster, base.NODES)
        problems = [text for node in self._cluster.store.list(nodes) if (text := not_ready_text(node))]
        with self._lock:
            if bool(problems) == self._degraded:
                return
            self._degraded = bool(problems)
        if problems:
            message = "NodeControllerDegraded: The master nodes not ready: " + ", ".join(problems)
            update = conditions.Condition("Degraded", "True", NODE_DEGRADED_REASON, message)
        else:
            update = conditions.Condition("Degraded", "False", "AsExpected", "")
        for name in STATIC_POD_OPERATORS:
            conditions.set_operator(self._cluster, name, [update])

"""CSRs: approve the kubelet's pending certificate requests, and only this node's.

A node that sat on a shelf past its kubelet certificate's life asks for new ones at the site, and on SNO nobody
else approves them. We apply the machine-approver's rules, narrowed to this node: a client CSR
(`kubernetes.io/kube-apiserver-client-kubelet`) from `system:node:<node>` or the node-bootstrapper, for the
subject `system:node:<node>` in `system:nodes`; a serving CSR (`kubernetes.io/kubelet-serving`) from
`system:node:<node>` in `system:nodes` whose DNS names and IPs are all the Node's own. Everything else is left
pending, and every decision is logged with its reason.
"""

from __future__ import annotations

import base64
import ipaddress
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID

from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc.steps import base, context

LOG = logging.getLogger(__name__)

CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
SERVING_SIGNER = "kubernetes.io/kubelet-serving"
BOOTSTRAPPER = "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"


@dataclass(frozen=True)
class Node:
    name: str
    names: frozenset[str]
    addresses: frozenset[str]


def this_node(ctx: context.Context) -> Node:
    wanted = ctx.settings.node_name or ctx.site.kubelet.node_name
    nodes = ctx.kube.list(kube.NODES)
    chosen = [n for n in nodes if wanted is None or n["metadata"]["name"] == wanted]
    if len(chosen) != 1:
        raise errors.UnavailableError(
            f"csr: cannot tell which node this is ({len(chosen)} candidates)",
            hint="Set spec.kubelet.nodeName in the site-config.",
        )
    node = chosen[0]
    addresses = node.get("status", {}).get("addresses") or []
    names = {node["metadata"]["name"]} | {a["address"] for a in addresses if a.get("type") in ("Hostname",)}
    ips = {str(ipaddress.ip_address(a["address"])) for a in addresses if a.get("type", "").endswith("IP")}
    return Node(node["metadata"]["name"], frozenset(names), frozenset(ips))


def pending(csr: kube.Obj) -> bool:
    status = csr.get("status") or {}
    decided = {c.get("type") for c in status.get("conditions") or []} & {"Approved", "Denied", "Failed"}
    return not decided and not status.get("certificate")


def _request(csr: kube.Obj) -> x509.CertificateSigningRequest:
    return x509.load_pem_x509_csr(base64.b64decode(csr["spec"]["request"]))


def _subject_problems(req: x509.CertificateSigningRequest, node: Node) -> list[str]:
    cn = [a.value for a in req.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    orgs = [a.value for a in req.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    problems = []
    if cn != [f"system:node:{node.name}"]:
        problems.append(f"subject CN {cn} is not system:node:{node.name}")
    if orgs != ["system:nodes"]:
        problems.append(f"subject O {orgs} is not system:nodes")
    return problems


def _san_problems(req: x509.CertificateSigningRequest, node: Node) -> list[str]:
    try:
        sans = req.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    dns = set(sans.get_values_for_type(x509.DNSName))
    ips = {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}
    problems = [f"DNS name {name} is not the node's" for name in sorted(dns - node.names)]
    problems += [f"IP {ip} is not the node's" for ip in sorted(ips - node.addresses)]
    if sans.get_values_for_type(x509.RFC822Name) or sans.get_values_for_type(x509.UniformResourceIdentifier):
        problems.append("unexpected e-mail or URI SANs")
    return problems


def decide(csr: kube.Obj, node: Node) -> list[str]:
    """Why `csr` must not be approved (empty: approve it)."""
    spec = csr.get("spec") or {}
    user, groups, signer = spec.get("username", ""), set(spec.get("groups") or []), spec.get("signerName")
    own = f"system:node:{node.name}"
    if signer == CLIENT_SIGNER:
        if user not in (own, BOOTSTRAPPER):
            return [f"requester {user} is neither {own} nor the node-bootstrapper"]
    elif signer == SERVING_SIGNER:
        if user != own or "system:nodes" not in groups:
            return [f"requester {user} (groups {sorted(groups)}) is not {own} in system:nodes"]
    else:
        return [f"signer {signer} is not a kubelet signer"]
    try:
        req = _request(csr)
    except (KeyError, ValueError) as exc:
        return [f"request does not parse: {exc}"]
    problems = _subject_problems(req, node)
    if signer == SERVING_SIGNER:
        problems += _san_problems(req, node)
    elif req.extensions and _san_problems(req, node):
        problems.append("a client certificate request must not ask for names")
    return problems


def approvable(ctx: context.Context, node: Node) -> list[kube.Obj]:
    chosen = []
    for csr in ctx.kube.list(kube.CSRS):
        if not pending(csr):
            continue
        problems = decide(csr, node)
        name = csr["metadata"]["name"]
        if problems:
            LOG.info("csr %s: left pending: %s", name, "; ".join(problems))
        else:
            LOG.info("csr %s: approving (%s for %s)", name, csr["spec"].get("signerName"), node.name)
            chosen.append(csr)
    return chosen


class Csr:
    name = "csr"
    description = "approving this node's pending certificate requests"

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {"node": ctx.settings.node_name or ctx.site.kubelet.node_name, "approve": ctx.site.kubelet.approve_csrs}

    def plan(self, ctx: context.Context) -> base.Plan:
        if not ctx.site.kubelet.approve_csrs:
            return base.Plan(self.name, notes=("CSR approval disabled in the site-config",))
        node = this_node(ctx)
        names = [c["metadata"]["name"] for c in approvable(ctx, node)]
        return base.Plan(self.name, notes=tuple(f"approve CSR {n} of node {node.name}" for n in names))

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.Outcome:
        if not ctx.site.kubelet.approve_csrs:
            return base.Outcome()
        node = this_node(ctx)
        approved: list[str] = []
        started = ctx.clock.monotonic()
        while True:
            for csr in approvable(ctx, node):
                ctx.kube.approve_csr(csr["metadata"]["name"], f"snoreloc: kubelet CSR of node {node.name}")
                approved.append(csr["metadata"]["name"])
            if ctx.clock.monotonic() - started >= ctx.settings.csr_wait:
                break
            ctx.clock.sleep(ctx.settings.poll_interval)
        return base.Outcome(changed=tuple(f"approve CSR {n}" for n in approved), details={"approved": approved})

    def verify(self, ctx: context.Context) -> None:
        if ctx.site.kubelet.approve_csrs and approvable(ctx, this_node(ctx)):
            raise errors.TemporaryError("csr: this node still has pending certificate requests")

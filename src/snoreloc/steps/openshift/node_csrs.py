"""The node's CSRs: approve the kubelet's pending certificate requests, and only this node's.

A node that sat on a shelf past its kubelet certificate's life asks for new ones at the site, and on SNO nobody
else approves them. Until they are approved the node is NotReady, so no installer or deployment pod can start and
every rollout we would cause waits: this step therefore runs first, right after the API answers, and the later
waits (preflight, settle) keep approving through `tend`, because the kubelet asks again (for its serving
certificate) once it has a client certificate.

We apply the machine-approver's rules, narrowed to this node: a client CSR
(`kubernetes.io/kube-apiserver-client-kubelet`) from `system:node:<node>` or the node-bootstrapper, for the
subject `system:node:<node>` in `system:nodes`; a serving CSR (`kubernetes.io/kubelet-serving`) from
`system:node:<node>` in `system:nodes` whose DNS names and IPs are all the Node's own. Everything else is left
pending, and every decision is logged with its reason.

An approval is written only if the CSR is still pending at that moment: the write carries the resourceVersion we
decided on, and a CSR that someone else approved or denied meanwhile is reported and left alone (a real
kube-apiserver refuses a second Approved or an Approved beside a Denied with 422).
"""

from __future__ import annotations

import base64
import ipaddress
import logging
from dataclasses import dataclass, field

from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc.pki import signing_requests
from snoreloc.siteconfig.settings import kubelet as kubelet_setting
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


def node_object(ctx: context.Context) -> kube.Obj:
    wanted = ctx.settings.node_name or ctx.site.get(kubelet_setting.SETTING).node_name
    nodes = ctx.kube.list(kube.NODES)
    chosen = [n for n in nodes if wanted is None or n["metadata"]["name"] == wanted]
    if len(chosen) != 1:
        raise errors.UnavailableError(
            f"csr: cannot tell which node this is ({len(chosen)} candidates)",
            hint="Set spec.kubelet.nodeName in the site-config.",
        )
    return chosen[0]


def not_ready(node: kube.Obj) -> str | None:
    """Why the Node is not Ready, in words for the report (None when it is Ready)."""
    ready = base.conditions(node).get("Ready", {})
    if ready.get("status") == "True":
        return None
    message = f": {ready.get('message')}" if ready.get("message") else ""
    return (
        f"node {node['metadata']['name']} is NotReady (Ready={ready.get('status', 'unknown')}{message}); "
        "no pod can start on it until the kubelet has valid certificates"
    )


def this_node(ctx: context.Context) -> Node:
    node = node_object(ctx)
    addresses = node.get("status", {}).get("addresses") or []
    names = {node["metadata"]["name"]} | {a["address"] for a in addresses if a.get("type") in ("Hostname",)}
    ips = {str(ipaddress.ip_address(a["address"])) for a in addresses if a.get("type", "").endswith("IP")}
    return Node(node["metadata"]["name"], frozenset(names), frozenset(ips))


def pending(csr: kube.Obj) -> bool:
    status = csr.get("status") or {}
    decided = {c.get("type") for c in status.get("conditions") or []} & {"Approved", "Denied", "Failed"}
    return not decided and not status.get("certificate")


def _request(csr: kube.Obj) -> signing_requests.Request:
    return signing_requests.parse(base64.b64decode(csr["spec"]["request"]))


def _subject_problems(req: signing_requests.Request, node: Node) -> list[str]:
    cn, orgs = list(req.common_names), list(req.organizations)
    problems = []
    if cn != [f"system:node:{node.name}"]:
        problems.append(f"subject CN {cn} is not system:node:{node.name}")
    if orgs != ["system:nodes"]:
        problems.append(f"subject O {orgs} is not system:nodes")
    return problems


def _san_problems(req: signing_requests.Request, node: Node) -> list[str]:
    problems = [f"DNS name {name} is not the node's" for name in sorted(req.dns_names - node.names)]
    problems += [f"IP {ip} is not the node's" for ip in sorted(req.ips - node.addresses)]
    if req.other_sans:
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
    elif req.has_sans and _san_problems(req, node):
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
            LOG.debug("csr %s: left pending: %s", name, "; ".join(problems))
        else:
            chosen.append(csr)
    return chosen


@dataclass
class Approvals:
    """What approving found: CSRs we approved, and CSRs someone else decided between our read and our write."""

    approved: list[str] = field(default_factory=list)
    decided_elsewhere: list[str] = field(default_factory=list)

    def add(self, other: Approvals) -> None:
        self.approved += [n for n in other.approved if n not in self.approved]
        self.decided_elsewhere += [n for n in other.decided_elsewhere if n not in self.decided_elsewhere]


APPROVE_ATTEMPTS = 3


def approve(client: kube.Client, csr: kube.Obj, node: Node) -> bool | None:
    """Approve `csr` if it is still pending and still ours to approve when we write. True: approved; False: someone
    else decided it meanwhile; None: it changed into something we leave pending."""
    name = csr["metadata"]["name"]
    for _attempt in range(APPROVE_ATTEMPTS):
        try:
            client.approve_csr(csr, f"snoreloc: kubelet CSR of node {node.name}")
        except kube.Conflict:
            fresh = client.find(kube.Ref(kube.CSRS, name))
            if fresh is None or not pending(fresh):
                LOG.info("csr %s: decided by someone else meanwhile; left as it is", name)
                return False
            if decide(fresh, node):
                return None
            csr = fresh
            continue
        LOG.info("csr %s: approved (%s for %s)", name, csr["spec"].get("signerName"), node.name)
        return True
    return None


def approve_pending(ctx: context.Context, node: Node) -> Approvals:
    """Approve every pending CSR of this node (never another's)."""
    found = Approvals()
    for csr in approvable(ctx, node):
        done = approve(ctx.kube, csr, node)
        if done is True:
            found.approved.append(csr["metadata"]["name"])
        elif done is False:
            found.decided_elsewhere.append(csr["metadata"]["name"])
    return found


def tend(ctx: context.Context, seen: Approvals | None = None, *, approve: bool = True) -> list[str]:
    """One round of looking after the node during a wait: approve its pending CSRs (when the site-config lets
    us and `approve`), and say what still keeps it from being Ready (empty: Ready)."""
    node = node_object(ctx)
    if approve and ctx.site.get(kubelet_setting.SETTING).approve_csrs:
        found = approve_pending(ctx, this_node(ctx))
        if seen is not None:
            seen.add(found)
    problem = not_ready(node)
    return [problem] if problem else []

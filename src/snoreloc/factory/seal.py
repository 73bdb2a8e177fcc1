"""`seal`: the factory's last step. Check that the node is ready to travel, then arm snoreloc and stop the node.

Checks (every failure is listed at once, so the installer fixes all of them in one go):
the cluster is healthy; the factory MachineConfig is in the pool's rendered config and the pool is updated; the
internal IP is on its interface; the dispatcher script and the kubelet/CRI-O drop-ins are in place; the node has
the SNO dnsmasq configuration that lets it answer for its new names at the site (a warning when not); in container
mode the agent image is on the node (the site has no registry for it); the kubelet client certificate outlives the
stated shelf time (expiring on the shelf is a warning, since the agent approves the node's renewal CSRs at the
site; `strict` makes it a refusal; already expired or unreadable is always a refusal). It reads the certificates and
signers whose expiry decides whether the node comes up unattended (`pki.shelf`: Secrets through the API, the
kubelet's files on the node) and records the *must boot by* date and the certificate that sets it in the marker's
`shelf` entry; a date within the shelf time is a warning (`strict`: a refusal), one already past a refusal, a
signer it cannot read a warning (the date is then unknown). It also lists, as warnings,
the factory's ways in that travel with the node (SSH keys, the admin client signer, kubeadmin, the node-local
kubeconfigs' signer, pull-secret entries) and what a site-config can do about each (issue 32).

Then, in this order: the seal marker `/etc/snoreloc/sealed` (it arms snoreloc.service), kubelet disabled and
stopped (a MachineConfig cannot do this without taking the factory node down), every pod sandbox stopped and
removed (CRI-O otherwise spends up to 48 minutes at the site on stale sandboxes), optionally power-off. Once the
marker exists the cluster checks are skipped (kubelet may already be stopped), so an interrupted seal is completed
by running it again.

A refusal exits 69 (`UnavailableError`): what is missing is a state of the node, not a bad input.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

import snoreloc
from snoreloc import errors
from snoreloc.adapters import clock, command, fs, kube, systemd
from snoreloc.factory import machineconfig
from snoreloc.host import kubelet, node_dns
from snoreloc.pki import certs, shelf

LOG = logging.getLogger(__name__)

KUBELET_CLIENT_CERT = "/var/lib/kubelet/pki/kubelet-client-current.pem"
UNIT_FILE = "/etc/systemd/system/snoreloc.service"
MACHINECONFIGS = kube.Resource("machineconfiguration.openshift.io", "v1", "machineconfigs", "MachineConfig", False)
COMMAND_TIMEOUT = 60.0
CRICTL_TIMEOUT = 600.0
_CERT_BLOCK = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.DOTALL)


class ClusterFacts(Protocol):
    """What seal asks the cluster (wired to the kube adapter by `KubeClusterFacts`; faked in tests)."""

    def unhealthy_operators(self) -> list[str]: ...

    def pool_problems(self, pool: str, machineconfig: str) -> list[str]: ...

    def domain(self) -> str: ...

    def version(self) -> str: ...

    def node_name(self) -> str: ...

    def name_clashes(self) -> list[str]:
        """Users' objects under the names snoreloc creates (`steps.name_clashes`), each with its fix."""

    def factory_ways_in(self) -> list[str]:
        """The factory's ways in that travel with the node and what a site-config can do about each
        (`steps.openshift.factory_access`): said at the seal, never a refusal."""

    def certificates(self) -> dict[str, datetime | None]:
        """notAfter of each Secret `pki.shelf.WATCHED` names, by name (None: missing or unreadable)."""


@dataclass(frozen=True)
class Finding:
    """One thing wrong; `fatal` findings refuse the seal, the others are printed as warnings."""

    check: str
    message: str
    fatal: bool = True

    def render(self) -> str:
        return f"{self.check}: {self.message}"


class SealRefused(errors.UnavailableError):
    """The node is not ready to be sealed; the message lists every reason."""

    def __init__(self, findings: list[Finding]) -> None:
        lines = "\n".join(f"  - {finding.render()}" for finding in findings)
        super().__init__(
            f"seal refused, {len(findings)} problem(s):\n{lines}",
            hint="Fix every problem listed, then run `snoreloc seal` again.",
        )
        self.findings = tuple(findings)


@dataclass(frozen=True)
class Options:
    """How to seal: the shelf time the kubelet certificate must outlive, the pool and MachineConfig to check."""

    shelf_days: int = 30
    strict: bool = False
    pool: str = "master"
    machineconfig: str = "99-master-snoreloc"
    poweroff: bool = False
    allow_factory_node_ip: bool = False  # ship a node whose kubelet/CRI-O node IP is not decoupled


@dataclass(frozen=True)
class Node:
    """The host side of seal: its files, its processes, its clock."""

    host: fs.HostFS
    runner: command.Runner
    clk: clock.Clock


@dataclass(frozen=True)
class Sealed:
    """What seal did: the marker written and the warnings it let pass."""

    marker: dict[str, Any]
    warnings: tuple[Finding, ...]


# --- checks ---------------------------------------------------------------------------------------------------------


def factory_config(node: Node) -> dict[str, str] | None:
    if not node.host.exists(machineconfig.CONFIG_PATH):
        return None
    return machineconfig.parse_config(node.host.read_text(machineconfig.CONFIG_PATH))


def check_node(node: Node, options: Options) -> list[Finding]:
    """Every host-side check (no API needed)."""
    config = factory_config(node)
    if config is None:
        missing = f"{machineconfig.CONFIG_PATH} is missing: the factory MachineConfig is not applied to this node"
        return [Finding("machineconfig", missing), *check_kubelet_cert(node, options)]
    findings = check_files(node, config) + check_internal_ips(node, config) + check_image(node, config)
    findings += check_decoupled(config, options) + check_node_dns(node)
    return findings + check_kubelet_cert(node, options)


def check_node_dns(node: Node) -> list[Finding]:
    """A warning when the node cannot answer for its new names at the site (no SNO dnsmasq configuration)."""
    if node_dns.configured(node.host):
        return []
    message = (
        f"this node has no SNO dnsmasq configuration ({node_dns.SCRIPT}): at the site the new names can only come "
        "from the site DNS, and the run refuses to start until they resolve. To have the node answer them itself, "
        "render the factory MachineConfig with --node-dns <this cluster's domain> and apply it (one reboot here, "
        "none at the site)"
    )
    return [Finding("node-dns", message, fatal=False)]


def check_cluster(facts: ClusterFacts, options: Options) -> list[Finding]:
    findings = [Finding("cluster", f"ClusterOperator {entry}") for entry in facts.unhealthy_operators()]
    findings += [Finding("names", text) for text in facts.name_clashes()]  # found here, not after the site's network
    findings += [Finding("factory-access", text, fatal=False) for text in facts.factory_ways_in()]
    return findings + [
        Finding("machineconfig", text) for text in facts.pool_problems(options.pool, options.machineconfig)
    ]


def _addresses(config: dict[str, str]) -> list[machineconfig.Address]:
    return [ipaddress.ip_interface(text) for text in config.get("SNORELOC_INTERNAL_IPS", "").split()]


def check_files(node: Node, config: dict[str, str]) -> list[Finding]:
    wanted = [UNIT_FILE]
    if _addresses(config):
        wanted += [machineconfig.DISPATCHER_PATH, machineconfig.KUBELET_DROPIN, machineconfig.CRIO_DROPIN]
    findings = [Finding("files", f"{path} is missing") for path in wanted if not node.host.exists(path)]
    dispatcher = machineconfig.DISPATCHER_PATH
    if dispatcher in wanted and node.host.exists(dispatcher) and not node.host.mode(dispatcher) & 0o100:
        findings.append(Finding("files", f"{dispatcher} is not executable: NetworkManager will not run it"))
    return findings


def check_decoupled(config: dict[str, str], options: Options) -> list[Finding]:
    """A node without internal addresses keeps its factory node IP, which does not exist at another site."""
    if _addresses(config):
        return []
    message = (
        "kubelet and CRI-O keep the factory node IP (the MachineConfig has no internal address): at a site on "
        "another network the node loses its node IP. Render it with --internal-ip, or seal with "
        "--allow-factory-node-ip if the site keeps the factory addressing"
    )
    return [Finding("node-ip", message, fatal=not options.allow_factory_node_ip)]


def check_internal_ips(node: Node, config: dict[str, str]) -> list[Finding]:
    wanted = _addresses(config)
    if not wanted:
        return []
    interface = config.get("SNORELOC_INTERFACE", "br-ex")
    shown = node.runner.run(["ip", "-j", "addr", "show", "dev", interface], timeout=COMMAND_TIMEOUT, check=False)
    present = _interface_addresses(shown.stdout) if shown.ok else set()
    return [
        Finding("internal-ip", f"{address.with_prefixlen} is not on {interface}")
        for address in wanted
        if address not in present
    ]


def _interface_addresses(ip_json: str) -> set[machineconfig.Address]:
    try:
        links = json.loads(ip_json or "[]")
    except json.JSONDecodeError:
        return set()
    return {
        ipaddress.ip_interface(f"{info['local']}/{info['prefixlen']}")
        for link in links
        for info in link.get("addr_info", [])
        if "local" in info and "prefixlen" in info
    }


def check_image(node: Node, config: dict[str, str]) -> list[Finding]:
    if config.get("SNORELOC_RUNTIME", "container") != machineconfig.Runtime.CONTAINER.value:
        return []
    image = config.get("SNORELOC_IMAGE", "")
    if not image:
        return [Finding("image", f"{machineconfig.CONFIG_PATH} names no SNORELOC_IMAGE for container mode")]
    exists = node.runner.run(["podman", "image", "exists", image], timeout=COMMAND_TIMEOUT, check=False)
    if exists.ok:
        return []
    return [Finding("image", f"the agent image {image} is not on this node: run `podman pull {image}` first")]


def check_kubelet_cert(node: Node, options: Options) -> list[Finding]:
    try:
        not_after = kubelet_cert_expiry(node.host.read_bytes(KUBELET_CLIENT_CERT))
    except (OSError, ValueError) as exc:
        return [Finding("kubelet-cert", f"cannot read the kubelet client certificate {KUBELET_CLIENT_CERT}: {exc}")]
    now = node.clk.now()
    if not_after <= now:
        return [Finding("kubelet-cert", f"the kubelet client certificate expired at {not_after:%Y-%m-%d %H:%M}Z")]
    if not_after < now + timedelta(days=options.shelf_days):
        message = (
            f"the kubelet client certificate expires {not_after:%Y-%m-%d} (in {(not_after - now).days} days), "
            f"within the {options.shelf_days}-day shelf time: at the site its renewal CSRs must be approved "
            "(snoreloc does it unless kubelet.approveCSRs is false)"
        )
        return [Finding("kubelet-cert", message, fatal=options.strict)]
    return []


def kubelet_cert_expiry(pem: bytes) -> datetime:
    """notAfter of the first certificate in a PEM bundle; the bundle's private key block is never parsed."""
    block = _CERT_BLOCK.search(pem)
    if block is None:
        raise ValueError("no certificate in the file")
    return certs.not_after(block.group(0))


def read_horizon(node: Node, secrets: dict[str, datetime | None]) -> tuple[shelf.Horizon, list[str]]:
    """Every watched certificate's expiry (the cluster's Secrets as `ClusterFacts.certificates` read them, the
    kubelet's files) and the names not read."""
    found = dict(secrets)
    for watched in shelf.WATCHED:
        if watched.path:
            found[watched.name] = _file_not_after(node, watched.path)
    readings = tuple(shelf.Reading(name, when) for name, when in sorted(found.items()) if when is not None)
    unread = [name for name, when in sorted(found.items()) if when is None]
    return shelf.Horizon(node.clk.now(), readings), unread


def _file_not_after(node: Node, path: str) -> datetime | None:
    try:
        return shelf.pem_not_after(node.host.read_bytes(path))
    except (OSError, ValueError):
        return None


def check_horizon(horizon: shelf.Horizon, unread: list[str], options: Options) -> list[Finding]:
    """The must-boot-by date against the shelf time; what could not be read (the kubelet's client file is judged
    by `check_kubelet_cert`)."""
    findings = [
        Finding("shelf", f"cannot read {name}: the must-boot-by date may be earlier than recorded", fatal=False)
        for name in unread
        if shelf.BY_NAME[name].path != shelf.KUBELET_CLIENT_FILE
    ]
    limit, now = horizon.limit, horizon.sealed_at
    if limit is None:
        return findings
    if limit.not_after <= now:
        return [*findings, Finding("shelf", f"{limit.name} expired at {limit.not_after:%Y-%m-%d %H:%M}Z")]
    if limit.not_after < now + timedelta(days=options.shelf_days):
        message = (
            f"the node must boot by {limit.not_after:%Y-%m-%d} (in {(limit.not_after - now).days} days, set by "
            f"{limit.name}), within the {options.shelf_days}-day shelf time: past it the node cannot relocate "
            "unattended (renew the signer first: `oc annotate -n openshift-kube-apiserver-operator secret "
            "kube-apiserver-to-kubelet-signer auth.openshift.io/certificate-not-after-`)"
        )
        findings.append(Finding("shelf", message, fatal=options.strict))
    return findings


# --- sealing --------------------------------------------------------------------------------------------------------


def seal(node: Node, facts: ClusterFacts | None, options: Options = Options()) -> Sealed:
    """Check, then arm and stop the node; raises SealRefused listing every fatal finding."""
    resuming = node.host.exists(kubelet.SEAL_MARKER)
    findings = check_node(node, options)
    horizon = None
    if not resuming:
        if facts is None:
            raise errors.InternalError("seal needs the cluster's facts for a first seal")
        findings += check_cluster(facts, options)
        horizon, unread = read_horizon(node, facts.certificates())
        findings += check_horizon(horizon, unread, options)
    fatal = [finding for finding in findings if finding.fatal]
    if fatal:
        raise SealRefused(fatal)
    marker = _read_marker(node) if resuming or facts is None else _write_marker(node, facts, horizon)
    _stop_node(node, poweroff=options.poweroff)
    return Sealed(marker, tuple(finding for finding in findings if not finding.fatal))


def _write_marker(node: Node, facts: ClusterFacts, horizon: shelf.Horizon | None) -> dict[str, Any]:
    marker: dict[str, Any] = {
        "domain": facts.domain(),
        "version": facts.version(),
        "node": facts.node_name(),
        "time": node.clk.now().strftime("%Y-%m-%dT%H:%M:%SZ"),
        "snoreloc": snoreloc.__version__,
    }
    if horizon is not None:
        marker["shelf"] = horizon.record()
    node.host.mkdir("/etc/snoreloc", 0o755)
    node.host.write_text(kubelet.SEAL_MARKER, json.dumps(marker, indent=2, sort_keys=True) + "\n", mode=0o644)
    return marker


def _read_marker(node: Node) -> dict[str, Any]:
    try:
        marker: dict[str, Any] = json.loads(node.host.read_text(kubelet.SEAL_MARKER))
    except ValueError:
        return {}
    return marker


def _stop_node(node: Node, *, poweroff: bool) -> None:
    units = systemd.Systemd(node.runner)
    units.disable(kubelet.KUBELET)
    units.stop(kubelet.KUBELET)
    remove_pods(node.runner)
    if poweroff:
        node.runner.run(["systemctl", "poweroff"], timeout=COMMAND_TIMEOUT)


def remove_pods(runner: command.Runner) -> None:
    """Stop every pod sandbox, then remove them all, so CRI-O starts clean at the site."""
    pods = runner.run(["crictl", "pods", "-q"], timeout=CRICTL_TIMEOUT).stdout.split()
    if pods:
        runner.run(["crictl", "stopp", *pods], timeout=CRICTL_TIMEOUT)
    runner.run(["crictl", "rmp", "-a", "-f"], timeout=CRICTL_TIMEOUT)


# --- the cluster's facts through the kube adapter -------------------------------------------------------------------


def _conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {c.get("type", ""): c.get("status", "") for c in obj.get("status", {}).get("conditions", []) or []}


class KubeClusterFacts:
    """ClusterFacts read through the kube adapter."""

    def __init__(self, client: kube.Client) -> None:
        self.client = client

    def unhealthy_operators(self) -> list[str]:
        unhealthy = []
        for operator in self.client.list(kube.CLUSTEROPERATORS):
            state = _conditions(operator)
            if (state.get("Available"), state.get("Progressing"), state.get("Degraded")) != ("True", "False", "False"):
                summary = ", ".join(f"{key}={state.get(key, '?')}" for key in ("Available", "Progressing", "Degraded"))
                unhealthy.append(f"{operator['metadata']['name']}: {summary}")
        return unhealthy

    def pool_problems(self, pool: str, machineconfig: str) -> list[str]:
        if self.client.find(kube.Ref(MACHINECONFIGS, machineconfig)) is None:
            return [f"MachineConfig {machineconfig} does not exist (render it with `snoreloc render-machineconfig`)"]
        found = self.client.find(kube.Ref(kube.MCPS, pool))
        if found is None:
            return [f"MachineConfigPool {pool} does not exist"]
        sources = {entry.get("name") for entry in found.get("status", {}).get("configuration", {}).get("source", [])}
        problems = (
            [] if machineconfig in sources else [f"MachineConfigPool {pool} has not rendered {machineconfig} yet"]
        )
        if _conditions(found).get("Updated") != "True":
            problems.append(f"MachineConfigPool {pool} is not Updated (wait for the MachineConfig to roll out)")
        return problems

    def domain(self) -> str:
        ingress = self.client.get(kube.Ref(kube.INGRESSES, "cluster"))
        return str(ingress.get("spec", {}).get("domain", "")).removeprefix("apps.")

    def version(self) -> str:
        cv = self.client.get(kube.Ref(kube.CLUSTERVERSIONS, "version"))
        return str(cv.get("status", {}).get("desired", {}).get("version", ""))

    def name_clashes(self) -> list[str]:
        from snoreloc.steps.openshift import name_clashes  # noqa: PLC0415 (lazy: only seal's cluster check needs it)

        owned = name_clashes.owned_by_settings()
        return [name_clashes.fix(ref) for ref in name_clashes.found(self.client, extra=owned)]

    def factory_ways_in(self) -> list[str]:
        from snoreloc.steps.openshift import factory_access  # noqa: PLC0415 (lazy, as name_clashes)

        return [way.line() for way in factory_access.ways_in(self.client, None)]

    def node_name(self) -> str:
        nodes = self.client.list(kube.NODES)
        return str(nodes[0]["metadata"]["name"]) if nodes else ""

    def certificates(self) -> dict[str, datetime | None]:
        return {
            watched.name: shelf.secret_not_after(
                self.client.find(kube.Ref(kube.SECRETS, watched.name, watched.namespace))
            )
            for watched in shelf.WATCHED
            if not watched.path
        }

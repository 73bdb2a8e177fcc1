"""The factory MachineConfig: everything the node needs on disk before `seal`, delivered the OpenShift way.

It carries four things (design §5): the NetworkManager pre-up dispatcher script that keeps a fixed internal
address on br-ex; kubelet and CRI-O drop-ins (`30-nodenet.conf`, sorting after the platform's `20-nodenet.conf`)
that pin the node IP to it, so the site's new addresses do not change the node's identity; the snoreloc unit; and
`/etc/snoreloc/config`, which tells the unit how to run the agent (image or host install) and tells `seal` what to
check. Rendering returns a plain dict (so it can be created through the API as well as printed). It never disables
kubelet: a MachineConfig that did would take the factory node down; `seal` does that.

With `--node-dns CLUSTER_DOMAIN` it also carries the node-local DNS an Assisted Installer SNO already has (its
`50-master-dnsmasq-configuration`), for a factory cluster installed without it: a dnsmasq unit whose
`ExecStartPre=` script answers `api`, `api-int` and `*.apps` of the cluster domain with the node's internal
address and reads the same overrides file with the same names, a NetworkManager dispatcher script that puts that
dnsmasq first in `/etc/resolv.conf`, and `rc-manager=unmanaged`. Applying it costs one reboot at the factory (the
pool update); at the site the `node-dns` step then needs none. The unit is ordered as the platform's own: before
kubelet and CRI-O, after `network.target` and `ovs-configuration.service` (OCPBUGS-47627; the unit file cites it).
"""

from __future__ import annotations

import base64
import enum
import ipaddress
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from snoreloc import errors
from snoreloc.host import internal_ip, node_dns

IGNITION_VERSION = "3.2.0"
MC_API_VERSION = "machineconfiguration.openshift.io/v1"
ROLE_LABEL = "machineconfiguration.openshift.io/role"

DISPATCHER_PATH = "/etc/NetworkManager/dispatcher.d/pre-up.d/30-snoreloc-internal-ip"
KUBELET_DROPIN = "/etc/systemd/system/kubelet.service.d/30-nodenet.conf"
CRIO_DROPIN = "/etc/systemd/system/crio.service.d/30-nodenet.conf"
CONFIG_PATH = internal_ip.CONFIG_PATH
parse_config = internal_ip.parse_config
UNIT_NAME = "snoreloc.service"
DNSMASQ_SCRIPT = node_dns.SCRIPT
FORCEDNS_PATH = "/etc/NetworkManager/dispatcher.d/forcedns"
NM_UNMANAGED_RESOLV = "/etc/NetworkManager/conf.d/single-node.conf"
_DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")

_INTERFACE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$")
_ROLE = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")

Address = ipaddress.IPv4Interface | ipaddress.IPv6Interface


class Runtime(enum.Enum):
    """How the unit runs the agent: from the container image (RHCOS) or an installed `snoreloc`."""

    CONTAINER = "container"
    HOST = "host"


@dataclass(frozen=True)
class FactoryOptions:
    """What `render-machineconfig` was asked for; `check()` refuses what would render a broken node."""

    internal_ips: tuple[Address, ...] = ()
    ipv6_primary: bool = False  # dual stack: the IPv6 address is kubelet's first node IP
    interface: str = "br-ex"
    runtime: Runtime = Runtime.CONTAINER
    image: str | None = None
    role: str = "master"
    name: str | None = None
    args: str = ""
    node_dns: str | None = None  # the install-time cluster domain the node-local dnsmasq answers

    @property
    def mc_name(self) -> str:
        return self.name or f"99-{self.role}-snoreloc"

    def check(self) -> None:
        problems = _problems(self)
        if problems:
            raise errors.UsageError("; ".join(problems))


def _problems(options: FactoryOptions) -> list[str]:
    problems = []
    if not _INTERFACE.match(options.interface):
        problems.append(f"--interface {options.interface!r} is not an interface name")
    if options.runtime is Runtime.CONTAINER and not (options.image and _IMAGE.match(options.image)):
        problems.append("--image REF is required (a plain image reference) unless --host-install is given")
    if not _ROLE.match(options.role) or not _ROLE.match(options.mc_name):
        problems.append("--role and --name must be DNS labels")
    versions = [address.version for address in options.internal_ips]
    if len(versions) != len(set(versions)):
        problems.append("give at most one internal IPv4 and one internal IPv6 address")
    if options.node_dns is not None and not _DOMAIN.match(options.node_dns):
        problems.append(f"--node-dns {options.node_dns!r} is not a cluster domain like sno1.factory.example.com")
    if options.node_dns is not None and not options.internal_ips:
        problems.append("--node-dns needs the internal address dnsmasq answers with (--internal-ip/--internal-ipv6)")
    if any(char in options.args for char in "\"'\\\n$`"):
        problems.append("--agent-args must not contain quotes, backslashes, $ or backticks")
    return problems


def parse_address(text: str, version: int) -> Address:
    """An interface address `IP/PREFIX` of the given IP version (UsageError otherwise)."""
    try:
        address = ipaddress.ip_interface(text)
    except ValueError as exc:
        raise errors.UsageError(f"{text!r} is not an address with prefix length (e.g. 192.168.127.10/24)") from exc
    if address.version != version or "/" not in text:
        raise errors.UsageError(f"{text!r} is not an IPv{version} address with prefix length")
    return address


def _ordered(options: FactoryOptions) -> list[Address]:
    """Primary first: IPv4 unless the node is IPv6-primary (or IPv6-only)."""
    return sorted(options.internal_ips, key=lambda address: address.version, reverse=options.ipv6_primary)


def dispatcher_script(options: FactoryOptions) -> str:
    template = resources.files("snoreloc.factory.data").joinpath("30-snoreloc-internal-ip.sh").read_text("utf-8")
    quoted = " ".join(f'"{address.with_prefixlen}"' for address in _ordered(options))
    return template.replace("@INTERFACE@", options.interface).replace("@ADDRESSES@", quoted)


def kubelet_dropin(options: FactoryOptions) -> str:
    ips = [str(address.ip) for address in _ordered(options)]
    return (
        "# Written by snoreloc: pins kubelet to the node's internal IP; sorts after 20-nodenet.conf, so it wins.\n"
        f'[Service]\nEnvironment="KUBELET_NODE_IP={ips[0]}" "KUBELET_NODE_IPS={",".join(ips)}"\n'
    )


def crio_dropin(options: FactoryOptions) -> str:
    first = _ordered(options)[0].ip
    return (
        "# Written by snoreloc: CRI-O streams on the node's internal IP; sorts after 20-nodenet.conf, so it wins.\n"
        f'[Service]\nEnvironment="CONTAINER_STREAM_ADDRESS={first}"\n'
    )


def config_text(options: FactoryOptions) -> str:
    """`/etc/snoreloc/config`: the unit's EnvironmentFile, and what `seal` checks."""
    addresses = " ".join(address.with_prefixlen for address in _ordered(options))
    lines = [
        f"# snoreloc factory settings, from MachineConfig {options.mc_name}. Read by snoreloc.service and `seal`.",
        f"SNORELOC_RUNTIME={options.runtime.value}",
        f"SNORELOC_IMAGE={options.image or ''}",
        f"SNORELOC_INTERFACE={options.interface}",
        f'SNORELOC_INTERNAL_IPS="{addresses}"',
        f'SNORELOC_ARGS="{options.args}"',
    ]
    return "\n".join(lines) + "\n"


def unit_text(runtime: Runtime) -> str:
    name = "snoreloc.service" if runtime is Runtime.CONTAINER else "snoreloc-host.service"
    return resources.files("snoreloc.factory.data").joinpath(name).read_text("utf-8")


def dnsmasq_unit_text() -> str:
    """`dnsmasq.service` as `--node-dns` installs it (the platform's SNO unit, OCPBUGS-47627's ordering included)."""
    return resources.files("snoreloc.factory.data").joinpath("snoreloc-dnsmasq.service").read_text("utf-8")


def node_dns_script(options: FactoryOptions, name: str) -> str:
    """The dnsmasq `ExecStartPre=` script or the `forcedns` dispatcher, for the install's domain and address."""
    cluster, base = node_dns.split(options.node_dns or "")
    template = resources.files("snoreloc.factory.data").joinpath(name).read_text("utf-8")
    values = {"@HOST_IP@": str(_ordered(options)[0].ip), "@CLUSTER_NAME@": cluster, "@BASE_DOMAIN@": base}
    for key, value in values.items():
        template = template.replace(key, value)
    return template


def _node_dns_files(options: FactoryOptions) -> list[dict[str, Any]]:
    if options.node_dns is None:
        return []
    return [
        _file(DNSMASQ_SCRIPT, node_dns_script(options, "dnsmasq-config.sh"), 0o755),
        _file(FORCEDNS_PATH, node_dns_script(options, "forcedns.sh"), 0o755),
        _file(NM_UNMANAGED_RESOLV, "[main]\nrc-manager=unmanaged\n", 0o644),
    ]


def _units(options: FactoryOptions) -> list[dict[str, Any]]:
    units = [{"name": UNIT_NAME, "enabled": True, "contents": unit_text(options.runtime)}]
    if options.node_dns is not None:
        units.append({"name": node_dns.UNIT, "enabled": True, "contents": dnsmasq_unit_text()})
    return units


def _file(path: str, text: str, mode: int) -> dict[str, Any]:
    encoded = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return {"path": path, "mode": mode, "overwrite": True, "contents": {"source": f"data:;base64,{encoded}"}}


def files(options: FactoryOptions) -> list[dict[str, Any]]:
    found = [_file(CONFIG_PATH, config_text(options), 0o644)]
    if options.internal_ips:
        found += [
            _file(DISPATCHER_PATH, dispatcher_script(options), 0o755),
            _file(KUBELET_DROPIN, kubelet_dropin(options), 0o644),
            _file(CRIO_DROPIN, crio_dropin(options), 0o644),
        ]
    return found + _node_dns_files(options)


def render(options: FactoryOptions) -> dict[str, Any]:
    """The MachineConfig object, ready to print or to create through the API."""
    options.check()
    return {
        "apiVersion": MC_API_VERSION,
        "kind": "MachineConfig",
        "metadata": {"name": options.mc_name, "labels": {ROLE_LABEL: options.role}},
        "spec": {
            "config": {
                "ignition": {"version": IGNITION_VERSION},
                "storage": {"files": files(options)},
                "systemd": {"units": _units(options)},
            }
        },
    }


def render_yaml(options: FactoryOptions) -> str:
    header = "# Factory MachineConfig for snoreloc; rendered by `snoreloc render-machineconfig`.\n"
    return header + yaml.safe_dump(render(options), sort_keys=False, width=120)


def decode_file(entry: dict[str, Any]) -> str:
    """The text of one rendered Ignition file entry (its data URL decoded)."""
    source = str(entry["contents"]["source"])
    return base64.b64decode(source.partition(",")[2]).decode("utf-8")

"""The demo's flow: a whole relocation, end to end, on this machine, in under a minute, changing nothing here.

It starts the OpenShift simulator with the 4.16 factory seed (durations are real SNO figures sped up), writes a
site-config for an imaginary site into a temporary host root, and runs the same node flow as the systemd unit:
discovery, validation, network, kubelet, API wait and every cluster step. The host side acts on fakes (an
in-memory NetworkManager, a scripted systemctl) and says so; the cluster side talks HTTPS to the simulator
through the official kubernetes client, exactly as it would to a node's kube-apiserver.

This module sits outside the product layers: it is the only code that imports both the agent and the simulator.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from snoreloc.siblings import (
    blockdev,
    clock,
    command,
    console,
    context,
    fs,
    journal,
    kube,
    nmstate,
    node,
    paths,
    probe,
    runner,
    safefile,
    systemd,
    timeline,
    view,
)
from snoreloc.siblings import certs as pki
from snoreloc.siblings import services as host_services
from snoreloc_sim.openshift import dns, simulator

SITE_DOMAIN = "store042.edge.example.net"
SITE_ADDRESS = "10.42.0.10"
MANIFESTS = Path(__file__).parent / "manifests"
FACTORY_NETWORK: dict[str, Any] = {
    "interfaces": [{"name": "eno1", "type": "ethernet", "state": "up", "ipv4": {"enabled": True, "dhcp": True}}],
}


class MemoryNetwork:
    """NetworkManager as nmstate sees it, in memory: apply keeps a checkpoint until commit or rollback."""

    def __init__(self, current: dict[str, Any]) -> None:
        self.current = copy.deepcopy(current)
        self._saved: dict[str, Any] | None = None

    def show(self) -> dict[str, Any]:
        return copy.deepcopy(self.current)

    def apply(self, desired: dict[str, Any], *, commit: bool, rollback_timeout: int) -> nmstate.Checkpoint | None:
        self._saved = copy.deepcopy(self.current)
        by_name = {i["name"]: i for i in self.current.get("interfaces", [])}
        by_name.update({i["name"]: copy.deepcopy(i) for i in desired.get("interfaces", [])})
        self.current = {**self.current, **copy.deepcopy(desired), "interfaces": list(by_name.values())}
        return None if commit else nmstate.Checkpoint(f"/org/freedesktop/NetworkManager/Checkpoint/{rollback_timeout}")

    def commit(self, checkpoint: nmstate.Checkpoint) -> None:
        self._saved = None

    def rollback(self, checkpoint: nmstate.Checkpoint) -> None:
        if self._saved is not None:
            self.current, self._saved = self._saved, None


def fake_systemctl(on_restart: dict[str, Any] | None = None) -> command.FakeRunner:
    """systemctl and agetty as a freshly sealed node answers them: kubelet disabled until we start it;
    `systemctl restart UNIT` calls `on_restart[UNIT]` (the simulator's dnsmasq re-reading its overrides)."""
    runner_ = command.FakeRunner()
    hooks = on_restart or {}

    def restart(argv: Any, _input: Any) -> command.Result:
        hook = hooks.get(argv[-1])
        if hook is not None:
            hook()
        return command.Result(0 if hook is not None else 5)  # 5: systemctl's "unit not found"

    state = {"kubelet": False}

    def start(argv: Any, _input: Any) -> command.Result:
        state["kubelet"] = True
        return command.Result(0)

    def is_active(argv: Any, _input: Any) -> command.Result:
        return command.Result(0 if state["kubelet"] else 3)

    runner_.on(["systemctl", "start"], start)
    runner_.on(["systemctl", "is-active"], is_active)
    runner_.on(["systemctl", "enable"], command.Result(0))
    runner_.on(["systemctl", "restart"], restart)
    runner_.on(["agetty", "--reload"], command.Result(0))
    return runner_


def site_config() -> dict[str, Any]:
    """The demo site's site-config: store-042 on a VLAN, its own mirror and registry CA, a technician's key."""
    return {
        "apiVersion": "snoreloc.io/v1alpha1",
        "kind": "SiteConfig",
        "metadata": {"name": "store-042"},
        "spec": {
            "domain": SITE_DOMAIN,
            "network": {
                "interfaces": [
                    {
                        "name": "eno1.120",
                        "type": "vlan",
                        "state": "up",
                        "vlan": {"base-iface": "eno1", "id": 120},
                        "ipv4": {
                            "enabled": True,
                            "dhcp": False,
                            "address": [{"ip": SITE_ADDRESS, "prefix-length": 24}],
                        },
                    }
                ],
                "routes": {"config": [{"destination": "0.0.0.0/0", "next-hop-address": "10.42.0.1"}]},
                "dns-resolver": {"config": {"server": ["10.42.0.53"]}},
            },
            "pullSecret": {"file": "pull-secret.json", "mode": "merge"},
            "imageDigestMirrors": [
                {
                    "source": "quay.io/openshift-release-dev/ocp-release",
                    "mirrors": ["registry.store042.example.net:5000/ocp4/release"],
                }
            ],
            "registryCA": [
                {"registry": "registry.store042.example.net:5000", "certificate": {"file": "registry-ca.crt"}}
            ],
            "sshAuthorizedKeys": {"mode": "add", "keys": [f"{_demo_ssh_key()} store-042-admin"]},
            "extraManifests": {"directory": "manifests"},
        },
    }


def _demo_ssh_key() -> str:
    """A fresh public key for the site's technicians (its private half is thrown away: the demo never logs in)."""
    public = ed25519.Ed25519PrivateKey.generate().public_key()
    return public.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()


def write_site(host: fs.HostFS, sim: simulator.Simulator | None = None) -> Path:
    """The site-config and its files where a technician's node would have them: /etc/snoreloc/ (`sim` is not
    needed: the site-config names no simulator address)."""
    auth = {"auths": {"registry.store042.example.net:5000": {"auth": "ZGVtby11c2VyOmRlbW8tcGFzc3dvcmQ=", "email": ""}}}
    ca_pem, _key = pki.issue_ca("store042 registry CA", now=datetime.datetime.now(datetime.UTC))
    host.mkdir("/etc/snoreloc", 0o700)
    host.write_text("/etc/snoreloc/pull-secret.json", json.dumps(auth), mode=0o600)
    host.write_bytes("/etc/snoreloc/registry-ca.crt", ca_pem, mode=0o644)
    host.mkdir("/etc/snoreloc/manifests", 0o700)
    for manifest in sorted(MANIFESTS.glob("*.yaml")):  # the same files as examples/manifests
        host.write_text(f"/etc/snoreloc/manifests/{manifest.name}", manifest.read_text(), mode=0o600)
    host.write_text("/etc/snoreloc/site-config.yaml", yaml.safe_dump(site_config(), sort_keys=False), mode=0o600)
    return host.path("/etc/snoreloc/site-config.yaml")


def factory_node(host: fs.HostFS, sim: simulator.Simulator, *, dnsmasq: bool = True) -> None:
    """The factory node's own files the simulator reads: with `dnsmasq`, the SNO dnsmasq configuration's script
    (the `50-master-dnsmasq-configuration` MachineConfig), as the Assisted Installer leaves it on every SNO; the
    kubelet's certificate files, as old as the simulator's time on the shelf makes them."""
    sim.attach_host_root(host.path("/"))
    facts = sim.seed_facts
    if dnsmasq and not host.exists(dns.SCRIPT):
        install = dns.Install(facts.cluster_name, facts.base_domain, facts.internal_ip)
        host.write_text(dns.SCRIPT, dns.script(install), mode=0o555)
    for path, pem in facts.kubelet_pki:  # the kubelet's certificates as the shelf left them (`operators.shelf`)
        if not host.exists(path):
            host.write_bytes(path, pem, mode=0o600)


def site_dns(domain: str = SITE_DOMAIN, address: str = SITE_ADDRESS) -> dns.SiteDns:
    """A store's DNS (the demo store's by default): it has the records for the new domain, pointing at the node's
    site address."""
    return dns.SiteDns({f"api.{domain}": [address], f"*.apps.{domain}": [address]})


def _indented(line: str) -> None:
    print(f"  {line}", file=sys.stderr, flush=True)


def services(
    root: fs.HostFS,
    sim: simulator.Simulator,
    clk: clock.Clock,
    *,
    dnsmasq: bool = True,
    echo: Callable[[str], None] = _indented,
) -> node.Services:
    factory_node(root, sim, dnsmasq=dnsmasq)
    runner_ = fake_systemctl({dns.UNIT: sim.restart_dnsmasq} if dnsmasq else None)
    node_host = host_services.HostServices(
        fs=root, nmstate=MemoryNetwork(FACTORY_NETWORK), prober=probe.FakeProber(), units=systemd.Systemd(runner_)
    )
    return node.Services(
        host=node_host,
        devices=blockdev.BlockDevices(runner_, root),
        banner=console.Banner(root, runner_),
        client_factory=lambda: kube.Client.from_kubeconfig(str(sim.kubeconfig_path), clock=clk),
        clock=clk,
        echo=echo,
        resolve=sim.resolve,
    )


def relocate(
    root: fs.HostFS, sim: simulator.Simulator, *, page_port: int = 0, echo: Callable[[str], None] = _indented
) -> tuple[node.NodeRequest, runner.Result]:
    """The node flow (as the systemd unit runs it) on host root `root` against `sim`, host steps on the demo's
    fakes; the request (its paths hold the run's journal and report) and the run's result. The progress page is
    stopped after."""
    request = node.NodeRequest(
        paths=paths.Paths.under(root.path("/")),
        options=runner.Options(),
        settings=context.Settings(ingress_endpoint=sim.router_address, poll_interval=5.0),
        page_host="127.0.0.1",
        page_port=page_port,
    )
    svc = services(root, sim, clock.ScaledClock(sim.cluster.timeline.speed), echo=echo)
    try:
        result = node.relocate(request, svc)
    finally:
        for served in svc.pages:
            served.stop()
    return request, result


def _relocate(args: argparse.Namespace, workdir: Path) -> int:
    say = sys.stderr.write
    say(f"snoreloc demo: starting the simulated factory SNO ({args.seed}, {args.speed:g}x real time) ...\n")
    sim_ = simulator.Simulator(args.seed, args.speed, routes=args.routes, workdir=workdir / "sim", site_dns=site_dns())
    with sim_ as sim:
        say(f"  cluster up in {sim.startup_seconds:.2f}s: {sim.api_url}\n")
        say("  host steps act on fakes (in-memory NetworkManager, scripted systemctl): nothing here changes\n")
        host = fs.HostFS(workdir / "root")
        write_site(host, sim)
        started = time.monotonic()
        req, _result = relocate(host, sim, page_port=args.page_port)
        say(f"snoreloc demo: relocated in {time.monotonic() - started:.1f}s of wall time (the steps below count the "
            f"simulated cluster's seconds, {args.speed:g}x faster)\n\n")  # fmt: skip
        _write_svg(req, Path(args.svg))
        report_text = safefile.read_text(req.paths.report, safefile.STATE)
        sys.stdout.write(report_text if args.output == "json" else node.summary(req))
        state = req.paths.state_dir
        say(f"\nconsole banner, as the node shows it ({host.path(console.ISSUE_FILE)}):\n")
        say(node_banner(host.read_text(console.ISSUE_FILE), state) + "\n")
    say(remains(args, workdir, state))
    return 0


NODE_STATE = "/var/lib/snoreloc"  # the state directory on a node, which the banner's hints name


def node_banner(text: str, state: Path) -> str:
    """The banner with the node's state directory shown where the demo keeps it, and without the progress page's
    address: the page stops with the demo."""
    kept = [line for line in text.splitlines() if not line.startswith("Progress page:")]
    return "\n".join(kept).replace(NODE_STATE, str(state))


def remains(args: argparse.Namespace, workdir: Path, state: Path) -> str:
    """The demo's last lines: what is left once it exits, and how to look at it."""
    gone = "the simulated cluster and the progress page stopped with the demo"
    if not args.keep:
        return (
            f"\nsnoreloc demo: what remains: the timeline picture {args.svg}. {gone}, and the node's files (state, "
            f"report, journal, bundle hint above) were in {workdir}, now removed; `snoreloc demo --keep DIR` keeps "
            "them for `snoreloc status`, `analyze` and `collect-logs`.\n"
        )
    root = Path(workdir) / "root"
    return (
        f"\nsnoreloc demo: what remains in {workdir} (--keep): the node's files under {root} (state directory "
        f"{state}: status.json, report.json, snoreloc.log), the simulator's under {Path(workdir) / 'sim'}, and the "
        f"timeline picture {args.svg}; {gone}. Look again with:\n"
        f"  snoreloc status --long --root {root}\n"
        f"  snoreloc analyze --root {root}\n"
        f"  snoreloc collect-logs --root {root} --kubeconfig '' --output {Path(workdir) / 'bundle.tar.gz'}\n"
    )


def _write_svg(req: node.NodeRequest, path: Path) -> None:
    run = view.facts(journal.read(req.paths.status))
    safefile.write(path, timeline.svg(view.timeline_of(run)), shared_dir=safefile.NAMED_OUTPUT)
    sys.stderr.write(f"  timeline picture: {path}\n")


def run(args: argparse.Namespace) -> int:
    if args.keep:
        Path(args.keep).mkdir(parents=True, exist_ok=True)
        return _relocate(args, Path(args.keep))
    with tempfile.TemporaryDirectory(prefix="snoreloc-demo-") as workdir:
        return _relocate(args, Path(workdir))

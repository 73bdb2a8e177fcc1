"""A throw-away node and site, made of real Linux parts, that a test can break without touching this machine.

`Sandbox.start()` runs `unshare --net --mount --uts --ipc --pid --fork --mount-proc` around a small init script:
tmpfs over /run, /etc/NetworkManager and /var/lib/NetworkManager, a read-only sysfs of the new network namespace
(NetworkManager then manages devices without waiting for udev, which is not running in here), a system D-Bus and a
real NetworkManager. The "site" is a second network namespace inside it, joined to the node's `eth0` by a veth pair,
with the gateway's addresses on `gw0` and a tiny DNS responder whose answer code a test can change. Every address is
in a documentation range and lives only in these namespaces; stopping the sandbox kills its PID namespace, and with
it every process it started.

Clients reach NetworkManager through `nsenter -t PID -n -m -p` (its net, mount and PID namespaces): from outside the
PID namespace NetworkManager refuses checkpoints ("insufficient permission").
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
VENV_BIN = Path(sys.executable).parent
NM_CONF = """\
[main]
plugins=keyfile
auth-polkit=false
no-auto-default=*
rc-manager=unmanaged
[logging]
level=INFO
"""
INIT_SCRIPT = r"""
set -eu
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /etc/NetworkManager
mount -t tmpfs tmpfs /var/lib/NetworkManager
mount -t sysfs -o ro sysfs /sys
mkdir -p /run/dbus /run/netns /run/site /etc/NetworkManager/conf.d /etc/NetworkManager/system-connections \
  /etc/NetworkManager/dispatcher.d/pre-up.d
printf '%s' "$NM_CONF" > /etc/NetworkManager/NetworkManager.conf
ip link set lo up
hostname node
dbus-daemon --system --fork
NetworkManager --no-daemon > /run/site/NetworkManager.log 2>&1 &
touch /run/site/started
exec sleep infinity
"""
READY_TIMEOUT = 20.0
UNSHARE = ("unshare", "--net", "--mount", "--uts", "--ipc", "--pid", "--fork", "--mount-proc", "--kill-child")
# nmstate 0.3 (the only nmstate that installs here) calls `apply` `set`; everything else the backend uses is the same.
NMSTATECTL_COMPAT = """#!/bin/sh
if [ "$1" = apply ]; then shift; set -- set "$@"; fi
exec {venv}/nmstatectl "$@"
"""


class SandboxError(RuntimeError):
    """The sandbox could not be built or a command inside it failed."""


@dataclass(frozen=True)
class Site:
    """Where things are on the site side: the gateway's addresses and the DNS responder."""

    gateway4: str = "192.0.2.1"
    gateway6: str = "2001:db8:2::1"
    dns4: str = "192.0.2.53"
    factory_gateway4: str = "198.51.100.1"
    factory_gateway6: str = "2001:db8:1::1"


@dataclass
class Sandbox:
    """One node (a NetworkManager in fresh namespaces) and its site; `start` it, `stop` it at teardown."""

    workdir: Path
    site: Site = field(default_factory=Site)
    pid: int = 0
    _unshare: subprocess.Popen[bytes] | None = None
    _background: list[subprocess.Popen[bytes]] = field(default_factory=list)

    # lifecycle

    def start(self) -> Sandbox:
        env = {**os.environ, "NM_CONF": NM_CONF}
        self._unshare = subprocess.Popen(
            [*UNSHARE, "sh", "-c", INIT_SCRIPT],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=(self.workdir / "init.log").open("wb"),
        )
        self.pid = self._child_pid()
        self._wait_for(lambda: self.run(["nmcli", "-t", "general", "status"], check=False).returncode == 0, "NM")
        self._build_site()
        return self

    def stop(self) -> None:
        if self.pid:
            _kill(self.pid)
        for process in [*self._background, *([self._unshare] if self._unshare else [])]:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)
        self.pid = 0

    def _child_pid(self) -> int:
        assert self._unshare is not None
        children = Path(f"/proc/{self._unshare.pid}/task/{self._unshare.pid}/children")
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self._unshare.poll() is not None:
                raise SandboxError(f"unshare exited: {(self.workdir / 'init.log').read_text()}")
            text = children.read_text().split() if children.exists() else []
            if text:
                return int(text[0])
            time.sleep(0.02)
        raise SandboxError("unshare started no child")

    def _wait_for(self, ready: Any, what: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while not ready():
            if time.monotonic() > deadline:
                raise SandboxError(f"{what} not ready after {READY_TIMEOUT:g}s; log: {self.nm_log()[-2000:]}")
            time.sleep(0.1)

    def _build_site(self) -> None:
        s = self.site
        for argv in (
            ["ip", "netns", "add", "site"],
            ["ip", "link", "add", "eth0", "type", "veth", "peer", "name", "gw0"],
            ["ip", "link", "set", "gw0", "netns", "site"],
            ["ip", "-n", "site", "link", "set", "lo", "up"],
            ["ip", "-n", "site", "link", "set", "gw0", "up"],
        ):
            self.run(argv)
        for address in (
            f"{s.factory_gateway4}/24",
            f"{s.gateway4}/24",
            f"{s.dns4}/24",
            f"{s.factory_gateway6}/64",
            f"{s.gateway6}/64",
        ):
            self.run(["ip", "-n", "site", "addr", "add", address, "dev", "gw0", "nodad"])
        self.set_dns_rcode("NOERROR")
        self.background(["ip", "netns", "exec", "site", sys.executable, str(HERE / "dns_responder.py"), s.dns4])

    # commands inside

    def argv(self, argv: Sequence[str]) -> list[str]:
        return ["nsenter", "-t", str(self.pid), "-n", "-m", "-p", "-u", "-i", "--", *argv]

    def run(
        self, argv: Sequence[str], *, check: bool = True, input: str | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"}
        done = subprocess.run(
            self.argv(argv), input=input, capture_output=True, text=True, timeout=timeout, env=env, check=False
        )
        if check and done.returncode != 0:
            raise SandboxError(f"{argv} exited {done.returncode}: {done.stderr.strip()[-3000:]}")
        return done

    def site_run(self, argv: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(["ip", "netns", "exec", "site", *argv], check=check)

    def background(self, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        log = (self.workdir / f"bg-{len(self._background)}.log").open("wb")
        process = subprocess.Popen(self.argv(argv), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self._background.append(process)
        return process

    def agent(self, *args: str, timeout: float = 180) -> dict[str, Any]:
        """Run tests/realhost/agent.py inside the sandbox (snoreloc's own code); its JSON verdict."""
        done = self.run([sys.executable, str(HERE / "agent.py"), *args], check=False, timeout=timeout)
        try:
            verdict: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError) as exc:
            raise SandboxError(f"agent printed no verdict (exit {done.returncode}): {done.stderr[-3000:]}") from exc
        return verdict

    def write(self, path: str, text: str) -> None:
        self.run(["sh", "-c", f'mkdir -p "$(dirname {path})" && cat > {path}'], input=text)

    # site behaviour

    def set_dns_rcode(self, rcode: str) -> None:
        """What the site's resolver answers from now on: NOERROR, REFUSED or SERVFAIL."""
        self.write("/run/site/dns-rcode", rcode)

    def drop_icmp_echo(self) -> None:
        """The gateway drops pings (IPv4 and IPv6 echo requests) but still answers ARP and neighbour discovery."""
        # One command per statement: this nft refuses rules inside a chain block given on the command line.
        self.site_run(["nft", "add table inet site"])
        self.site_run(["nft", "add chain inet site input { type filter hook input priority 0; policy accept; }"])
        for family in ("icmp", "icmpv6"):
            self.site_run(["nft", f"add rule inet site input {family} type echo-request drop"])

    def install_nmstatectl(self) -> None:
        """Put the `nmstatectl` the agent's CLI backend runs at /run/site/bin (see NMSTATECTL_COMPAT)."""
        self.write("/run/site/bin/nmstatectl", NMSTATECTL_COMPAT.format(venv=VENV_BIN))
        self.run(["chmod", "755", "/run/site/bin/nmstatectl"])

    # the node's view

    def checkpoints(self) -> list[str]:
        """NetworkManager's pending checkpoints (empty once a change was committed or rolled back)."""
        argv = ["busctl", "--system", "--json=short", "get-property", "org.freedesktop.NetworkManager"]
        argv += ["/org/freedesktop/NetworkManager", "org.freedesktop.NetworkManager", "Checkpoints"]
        found: list[str] = json.loads(self.run(argv).stdout)["data"]
        return found

    def factory_network(self, *, gateway: bool = True, ipv6: bool = False) -> None:
        """The node as it leaves the factory: eth0 with a static factory address (and default route)."""
        s = self.site
        argv = ["nmcli", "connection", "add", "type", "ethernet", "ifname", "eth0", "con-name", "eth0"]
        argv += ["ipv4.method", "manual", "ipv4.addresses", "198.51.100.10/24"]
        argv += ["ipv4.gateway", s.factory_gateway4] if gateway else []
        if ipv6:
            argv += ["ipv6.method", "manual", "ipv6.addresses", "2001:db8:1::10/64"]
            argv += ["ipv6.gateway", s.factory_gateway6] if gateway else []
        else:
            argv += ["ipv6.method", "disabled"]
        self.run(["nmcli", "device", "set", "eth0", "managed", "yes"])
        self.run(argv)
        self.run(["nmcli", "--wait", "20", "connection", "up", "eth0"])

    def addresses(self, device: str = "eth0") -> list[str]:
        """The global addresses on `device`, as the kernel has them, sorted."""
        shown = json.loads(self.run(["ip", "-j", "addr", "show", "dev", device]).stdout)
        found = [
            f"{info['local']}/{info['prefixlen']}"
            for link in shown
            for info in link.get("addr_info", [])
            if info.get("scope") == "global"
        ]
        return sorted(found)

    def routes(self) -> list[str]:
        """Every IPv4 and IPv6 route of the main table (destination, gateway, device, metric), sorted."""
        found = []
        for family in ("-4", "-6"):
            for route in json.loads(self.run(["ip", "-j", family, "route", "show", "table", "main"]).stdout):
                if route.get("dst", "").startswith("fe80") or route.get("type") == "multicast":
                    continue
                found.append(
                    f"{route['dst']} via {route.get('gateway', '-')} dev {route.get('dev')} {route.get('metric')}"
                )
        return sorted(found)

    def nm_log(self) -> str:
        done = self.run(["cat", "/run/site/NetworkManager.log"], check=False) if self.pid else None
        return done.stdout if done else ""


def _kill(pid: int) -> None:
    """SIGKILL the PID namespace's init: the kernel then kills every process in that namespace."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return


def missing_prerequisites() -> str | None:
    """Why a sandbox cannot be built on this machine, or None when it can."""
    if os.geteuid() != 0:
        return "needs root (network, mount and PID namespaces)"
    for program in ("unshare", "nsenter", "ip", "dbus-daemon", "NetworkManager", "nmcli", "nft"):
        if shutil.which(program) is None:
            return f"`{program}` is not installed (.ci/run installs it)"
    probe = subprocess.run(["unshare", "--net", "--mount", "--pid", "--fork", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        return f"unshare cannot make namespaces here: {probe.stderr.decode().strip()}"
    return None


def require(*programs: str) -> None:
    """Skip the test, naming what is missing, unless every program is on PATH."""
    for program in programs:
        if shutil.which(program) is None and not (Path(sys.executable).parent / program).exists():
            pytest.skip(f"`{program}` is not installed (.ci/run installs it)")


def require_libnmstate() -> None:
    try:
        importlib.import_module("libnmstate")
    except ImportError as exc:
        pytest.skip(f"libnmstate does not import ({exc}); .ci/run installs nmstate==0.3.6 and Debian's gi")


def desired_file(box: Sandbox, desired: dict[str, object]) -> Path:
    path = box.workdir / "desired.json"
    path.write_text(json.dumps(desired))
    return path

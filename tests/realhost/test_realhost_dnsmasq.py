"""The node answers for its new names through a real dnsmasq (Debian's dnsmasq-base), configured as the SNO
MachineConfig configures it: its script (`/usr/local/bin/dnsmasq_config.sh`, run by bash exactly as the
`ExecStartPre=` of `dnsmasq.service` runs it) reads the overrides file snoreloc's `host.node_dns` wrote and
writes the `address=` lines dnsmasq loads from its configuration directory. Lookups go through glibc's resolver
(Python's `socket.getaddrinfo`, as the agent's own check does) with `/etc/resolv.conf` pointing at that dnsmasq,
in a network and mount namespace of the test's own: the machine's network and resolver are never used.

The sequence is the node's: the factory boot (no overrides: the install-time names), snoreloc's write, the
restart (script again, dnsmasq again), then `rollback` (the file put back, the restart again).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from realhost_sandbox import require

from snoreloc.adapters import command, fs, systemd
from snoreloc.host import node_dns
from snoreloc_sim.openshift import dns

NODE_IP = "192.168.127.10"
FACTORY = dns.Install("sno1", "factory.example.com", NODE_IP)
NEW = "store042.edge.example.net"
FACTORY_API_INT = "api-int.sno1.factory.example.com"

RESOLVE = """
import json, socket, sys
found = {}
for name in sys.argv[1:]:
    try:
        found[name] = sorted({i[4][0] for i in socket.getaddrinfo(name, None, socket.AF_INET)})
    except socket.gaierror:
        found[name] = []
print(json.dumps(found))
"""

NAMES = (
    f"api.{NEW}",
    f"api-int.{NEW}",
    f"snoreloc-dns-check.apps.{NEW}",
    f"oauth-openshift.apps.{NEW}",
    "api-int.sno1.factory.example.com",
    "console-openshift-console.apps.sno1.factory.example.com",
)


def _boot(root: fs.HostFS, tmp: Path, names: tuple[str, ...] = NAMES) -> dict[str, list[str]]:
    """`systemctl restart dnsmasq.service` in a namespace: the script, then dnsmasq; then look the names up."""
    script = tmp / "dnsmasq_config.sh"
    script.write_text(dns.script(FACTORY, overrides=str(root.path(node_dns.OVERRIDES)), conf=str(root.path(dns.CONF))))
    resolv = tmp / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\noptions attempts:1 timeout:1\n")
    (tmp / "resolve.py").write_text(RESOLVE)
    conf_dir = root.path(dns.CONF_DIR)
    conf_dir.mkdir(parents=True, exist_ok=True)
    dnsmasq = (
        "dnsmasq --conf-file=/dev/null --keep-in-foreground --no-resolv --no-hosts --user=root --pid-file= "
        f"--listen-address=127.0.0.1 --bind-interfaces --conf-dir={shlex.quote(str(conf_dir))},*.conf"
    )
    inner = f"""
set -euo pipefail
ip link set lo up
mount --bind {shlex.quote(str(resolv))} /etc/resolv.conf
bash {shlex.quote(str(script))}
{dnsmasq} &
trap 'kill $!' EXIT
resolve() {{ python3 {shlex.quote(str(tmp / "resolve.py"))} "$@"; }}
for _ in $(seq 100); do  # until dnsmasq answers (an api name of either domain)
  resolve api.{FACTORY.cluster_name}.{FACTORY.base_domain} api.{NEW} | grep -q {NODE_IP} && break
  sleep 0.1
done
resolve {" ".join(names)}
"""
    done = subprocess.run(
        ["unshare", "--net", "--mount", "--fork", "bash", "-c", inner],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_real_dnsmasq_answers_the_new_names_from_the_agents_overrides(tmp_path: Path) -> None:
    require("dnsmasq", "unshare", "ip")
    root = fs.HostFS(tmp_path / "root")
    state = tmp_path / "state"

    factory = _boot(root, tmp_path)
    assert factory[f"api.{NEW}"] == [] and factory["api-int.sno1.factory.example.com"] == [NODE_IP]

    node_dns.write(root, state, node_dns.wanted(NEW, NODE_IP))
    relocated = _boot(root, tmp_path)

    assert relocated == {name: [NODE_IP] for name in NAMES}, "new names and the kept factory names, to the node"

    runner = command.FakeRunner()
    runner.on(["systemctl", "restart"], command.Result(0))
    node_dns.restore(root, systemd.Systemd(runner), state)
    rolled_back = _boot(root, tmp_path)

    assert not root.exists(node_dns.OVERRIDES)
    assert rolled_back == factory


def test_a_site_domain_that_is_a_parent_of_the_factorys_keeps_the_factory_api_int_answered(tmp_path: Path) -> None:
    """Issue 30: the kept factory names were filtered by substring, so `example.com` dropped `api-int.sno1.factory.
    example.com`, the name the kubelet reaches its API by."""
    require("dnsmasq", "unshare", "ip")
    root = fs.HostFS(tmp_path / "root")
    parent = "example.com"  # cluster name "example", base domain "com"
    names = (f"api.{parent}", f"api-int.{parent}", f"x.apps.{parent}", "api-int.sno1.factory.example.com")
    _boot(root, tmp_path, names)
    node_dns.write(root, tmp_path / "state", node_dns.wanted(parent, NODE_IP))
    assert _boot(root, tmp_path, names) == {name: [NODE_IP] for name in names}


def test_a_second_site_keeps_the_first_answered_until_it_is_dropped(tmp_path: Path) -> None:
    """Issue 35: a corrected stick (A, then B) switches the overrides to B while the cluster's routes are still on
    A; the earlier-sites file keeps A answered by the real dnsmasq until `node-dns-prune` drops it, and rollback
    puts the factory's answers back exactly."""
    require("dnsmasq", "unshare", "ip")
    root = fs.HostFS(tmp_path / "root")
    state = tmp_path / "state"
    first = "store041.edge.example.net"
    names = (f"api.{NEW}", f"x.apps.{NEW}", f"api.{first}", f"oauth-openshift.apps.{first}", FACTORY_API_INT)
    factory = _boot(root, tmp_path, names)
    node_dns.write(root, state, node_dns.wanted(first, NODE_IP))
    _boot(root, tmp_path, names)  # dnsmasq restarted at A: its script now answers A

    node_dns.write(root, state, node_dns.wanted(NEW, NODE_IP))
    assert _boot(root, tmp_path, names) == {name: [NODE_IP] for name in names}, "B, A (still used) and the factory"

    assert node_dns.drop_earlier(root, state, (first,)) == [f"apps.{first}", f"api-int.{first}", f"api.{first}"]
    dropped = _boot(root, tmp_path, names)
    assert dropped == {**{name: [NODE_IP] for name in names}, f"api.{first}": [], f"oauth-openshift.apps.{first}": []}

    runner = command.FakeRunner()
    runner.on(["systemctl", "restart"], command.Result(0))
    node_dns.restore(root, systemd.Systemd(runner), state)
    assert _boot(root, tmp_path, names) == factory
    assert not root.exists(node_dns.EARLIER) and not root.exists(node_dns.KEPT)


@pytest.fixture(autouse=True)
def _root_only() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (network and mount namespaces)")

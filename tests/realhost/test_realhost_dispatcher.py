"""The rendered NetworkManager dispatcher script, run by the real nm-dispatcher on a Linux bridge named br-ex.

Debian's NetworkManager has no OVS plugin, so a Linux bridge with eth0 as its port stands in for OpenShift's OVS
br-ex. The internal addresses must be on br-ex when it comes up (pre-up), exactly once, and stay so when the
profile is activated again, without the profile being rewritten at every activation.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from realhost_sandbox import Sandbox, desired_file, require_libnmstate
from test_realhost_machineconfig import options

from snoreloc.factory import machineconfig

INTERNAL = {"v4": ["192.168.127.10/24"], "v6": ["fd00:127::10/64"], "dual": ["192.168.127.10/24", "fd00:127::10/64"]}


def br_ex(box: Sandbox, render: str) -> None:
    """br-ex (factory address 198.51.100.10/24) with eth0 as its port, and the rendered script installed."""
    box.write(machineconfig.DISPATCHER_PATH, machineconfig.dispatcher_script(options(render)))
    box.run(["chmod", "755", machineconfig.DISPATCHER_PATH])
    box.run(["nmcli", "device", "set", "eth0", "managed", "yes"])
    add = ["nmcli", "connection", "add", "type", "bridge", "ifname", "br-ex", "con-name", "br-ex"]
    add += ["bridge.stp", "no", "ipv4.method", "manual", "ipv4.addresses", "198.51.100.10/24"]
    add += ["ipv6.method", "manual", "ipv6.addresses", "2001:db8:1::10/64"]
    box.run(add)
    box.run(["nmcli", "connection", "add", "type", "ethernet", "ifname", "eth0", "con-name", "eth0", "master", "br-ex"])
    box.run(["nmcli", "--wait", "30", "connection", "up", "br-ex"])
    box.run(["nmcli", "--wait", "30", "connection", "up", "eth0"])


def profile_stamp(box: Sandbox) -> str:
    """When NetworkManager last wrote br-ex's keyfile (a rewrite changes it)."""
    return box.run(["sh", "-c", "stat -c %.9Y /etc/NetworkManager/system-connections/br-ex.nmconnection"]).stdout


def wait_for_addresses(box: Sandbox, wanted: list[str]) -> list[str]:
    deadline = time.monotonic() + 15
    found = box.addresses("br-ex")
    while not set(wanted) <= set(found) and time.monotonic() < deadline:
        time.sleep(0.2)
        found = box.addresses("br-ex")
    return found


@pytest.mark.parametrize("render", ["v4", "v6", "dual"])
def test_internal_addresses_at_pre_up_once_and_stable(sandbox: Sandbox, render: str) -> None:
    br_ex(sandbox, render)
    first = wait_for_addresses(sandbox, INTERNAL[render])
    stamp = profile_stamp(sandbox)

    sandbox.run(["nmcli", "--wait", "30", "connection", "up", "br-ex"])
    sandbox.run(["nmcli", "--wait", "30", "connection", "up", "eth0"])
    again = wait_for_addresses(sandbox, INTERNAL[render])

    for address in INTERNAL[render]:
        assert first.count(address) == 1, first
        assert again.count(address) == 1, again
    assert profile_stamp(sandbox) == stamp, "the dispatcher rewrote the profile although the address was there"


def br_ex_site_network() -> dict[str, Any]:
    """A site network that describes br-ex itself: its site address, the default route and DNS through it."""
    return {
        "interfaces": [
            {
                "name": "br-ex",
                "type": "linux-bridge",
                "state": "up",
                "ipv4": {"enabled": True, "dhcp": False, "address": [{"ip": "192.0.2.10", "prefix-length": 24}]},
            }
        ],
        "routes": {
            "config": [{"destination": "0.0.0.0/0", "next-hop-address": "192.0.2.1", "next-hop-interface": "br-ex"}]
        },
        "dns-resolver": {"config": {"server": ["192.0.2.53"]}},
    }


def factory_root(box: Sandbox, render: str) -> Path:
    """A directory holding the factory's `/etc/snoreloc/config` (outside the sandbox's /etc, which is the host's)."""
    root = box.workdir / "factory"
    config = root / machineconfig.CONFIG_PATH.lstrip("/")
    config.parent.mkdir(parents=True)
    config.write_text(machineconfig.config_text(options(render)))
    return root


def test_site_network_touching_br_ex_converges(sandbox: Sandbox) -> None:
    """The network step's desired state (the site's plus the internal addresses) applies, verifies and commits, and
    the internal address stays on br-ex; a re-run changes nothing."""
    require_libnmstate()
    br_ex(sandbox, "v4")
    wait_for_addresses(sandbox, INTERNAL["v4"])
    args = ("converge", "lib", str(desired_file(sandbox, br_ex_site_network())), "3", str(factory_root(sandbox, "v4")))

    verdict = sandbox.agent(*args)
    again = sandbox.agent(*args)

    assert verdict.get("change") == "applied", verdict
    assert set(wait_for_addresses(sandbox, [*INTERNAL["v4"], "192.0.2.10/24"])) >= {"192.0.2.10/24", *INTERNAL["v4"]}
    assert sandbox.addresses("br-ex").count(INTERNAL["v4"][0]) == 1
    assert sandbox.checkpoints() == []
    assert again.get("change") == "unchanged", again

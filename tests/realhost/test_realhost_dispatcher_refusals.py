"""The dispatcher script, under the real nm-dispatcher, when NetworkManager or the kernel refuses one of its changes.

The script adds each internal address to br-ex and then to its profile. NetworkManager refuses an address in a
profile whose family is disabled ("this property is not allowed for 'method=disabled'"), and with
`ipv6.method=disabled` it also sets the device's `disable_ipv6`, so the kernel refuses the IPv6 address too. The
outcome that is defined either way: a refused command costs only that one change. The same address still goes on the
device when only the profile refuses it, and the other family's address is added on the device and in the profile.
Under the script's former `set -e`, the first refusal ended the script, and kubelet's node IP was never added.
"""

from __future__ import annotations

from realhost_sandbox import Sandbox
from test_realhost_dispatcher import wait_for_addresses

from snoreloc.factory import machineconfig

INTERNAL_V4 = "192.168.127.10/24"
INTERNAL_V6 = "fd00:127::10/64"

# What the profile of br-ex carries besides its bridge settings: one family is disabled.
IPV4_DISABLED = ["ipv4.method", "disabled", "ipv6.method", "manual", "ipv6.addresses", "2001:db8:1::10/64"]
IPV6_DISABLED = ["ipv4.method", "manual", "ipv4.addresses", "198.51.100.10/24", "ipv6.method", "disabled"]


def dual_stack(*, ipv6_primary: bool) -> machineconfig.FactoryOptions:
    ips = (machineconfig.parse_address(INTERNAL_V4, 4), machineconfig.parse_address(INTERNAL_V6, 6))
    return machineconfig.FactoryOptions(internal_ips=ips, ipv6_primary=ipv6_primary, image="quay.io/snoreloc/x:1")


def br_ex_with(box: Sandbox, options: machineconfig.FactoryOptions, ip_settings: list[str]) -> None:
    """br-ex with eth0 as its port, its profile given `ip_settings`, and the rendered script installed."""
    box.write(machineconfig.DISPATCHER_PATH, machineconfig.dispatcher_script(options))
    box.run(["chmod", "755", machineconfig.DISPATCHER_PATH])
    box.run(["nmcli", "device", "set", "eth0", "managed", "yes"])
    add = ["nmcli", "connection", "add", "type", "bridge", "ifname", "br-ex", "con-name", "br-ex", "bridge.stp", "no"]
    box.run([*add, *ip_settings])
    box.run(["nmcli", "connection", "add", "type", "ethernet", "ifname", "eth0", "con-name", "eth0", "master", "br-ex"])
    box.run(["nmcli", "--wait", "30", "connection", "up", "br-ex"])
    box.run(["nmcli", "--wait", "30", "connection", "up", "eth0"])


def profile_addresses(box: Sandbox, family: str) -> list[str]:
    shown = box.run(["nmcli", "-e", "no", "-g", f"{family}.addresses", "connection", "show", "br-ex"]).stdout
    return [address.strip() for address in shown.split(",") if address.strip()]


def test_a_profile_refusing_the_first_address_still_gets_it_on_the_device_and_the_next_in_the_profile(
    sandbox: Sandbox,
) -> None:
    """IPv4 first (the default order); the profile has ipv4.method=disabled, so NetworkManager refuses the IPv4
    address in it, while the kernel takes it on the device."""
    br_ex_with(sandbox, dual_stack(ipv6_primary=False), IPV4_DISABLED)

    found = wait_for_addresses(sandbox, [INTERNAL_V4, INTERNAL_V6])

    assert found.count(INTERNAL_V4) == 1, found
    assert found.count(INTERNAL_V6) == 1, found
    assert profile_addresses(sandbox, "ipv4") == []  # the refusal the script met
    assert INTERNAL_V6 in profile_addresses(sandbox, "ipv6")


def test_a_device_refusing_the_first_address_does_not_stop_the_next(sandbox: Sandbox) -> None:
    """IPv6 first (--ipv6-primary) on a br-ex whose IPv6 is disabled: the kernel and the profile both refuse the IPv6
    address; the IPv4 one must still reach the device and the profile."""
    br_ex_with(sandbox, dual_stack(ipv6_primary=True), IPV6_DISABLED)

    found = wait_for_addresses(sandbox, [INTERNAL_V4])

    assert found.count(INTERNAL_V4) == 1, found
    disabled = sandbox.run(["sysctl", "-n", "net.ipv6.conf.br-ex.disable_ipv6"]).stdout.strip()
    assert (disabled, INTERNAL_V6 in found) == ("1", False), "the refusal this test is about did not happen"
    assert INTERNAL_V4 in profile_addresses(sandbox, "ipv4")

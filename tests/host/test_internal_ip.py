"""A site network that describes br-ex converges: the internal addresses are part of its desired state."""

from __future__ import annotations

import copy
import ipaddress
from typing import Any

import pytest
import yaml

from snoreloc import errors
from snoreloc.adapters import clock, command, fs, nmstate, probe, systemd
from snoreloc.host import internal_ip, network
from snoreloc.host.services import HostServices
from snoreloc.siteconfig import loader, model
from snoreloc.steps.host import site_network

BR_EX: dict[str, Any] = {
    "interfaces": [
        {
            "name": "br-ex",
            "type": "ovs-interface",
            "state": "up",
            "ipv4": {"enabled": True, "address": [{"ip": "10.8.0.20", "prefix-length": 24}]},
            "ipv6": {"enabled": True, "address": [{"ip": "2001:db8:8::20", "prefix-length": 64}]},
        }
    ],
    "routes": {"config": [{"destination": "0.0.0.0/0", "next-hop-address": "10.8.0.1", "next-hop-interface": "br-ex"}]},
    "dns-resolver": {"config": {"server": ["10.8.0.53"]}},
}
INTERNAL = internal_ip.Internal(
    "br-ex", (ipaddress.ip_interface("fd00:127::10/64"), ipaddress.ip_interface("192.168.127.10/24"))
)


class DispatcherNmstate:
    """nmstate as it behaves on br-ex: the address lists become the desired ones, the dispatcher then adds the
    internal addresses during activation, and verification compares whole lists (nmstate query_apply/ip.rs)."""

    def __init__(self) -> None:
        self.current: dict[str, Any] = {"interfaces": [{"name": "br-ex", "type": "ovs-interface", "state": "up"}]}
        self.committed = False

    def show(self) -> dict[str, Any]:
        return copy.deepcopy(self.current)

    def apply(self, desired: dict[str, Any], *, commit: bool, rollback_timeout: int) -> nmstate.Checkpoint | None:
        applied = copy.deepcopy(desired)
        iface = applied["interfaces"][0]
        for address in INTERNAL.addresses:
            entries = iface[f"ipv{address.version}"]["address"]
            entry = {"ip": str(address.ip), "prefix-length": address.network.prefixlen}
            if entry not in entries:
                entries.append(entry)  # the dispatcher's pre-up
        for family in ("ipv4", "ipv6"):
            wanted = sorted(map(str, desired["interfaces"][0][family]["address"]))
            if sorted(map(str, iface[family]["address"])) != wanted:
                raise nmstate.ApplyFailed(f"NmstateError: VerificationError: {family} addresses differ", retryable=True)
        self.current = applied
        return nmstate.Checkpoint("/org/freedesktop/NetworkManager/Checkpoint/1")

    def commit(self, checkpoint: nmstate.Checkpoint) -> None:
        self.committed = True

    def rollback(self, checkpoint: nmstate.Checkpoint) -> None:
        raise AssertionError("not expected")


def test_without_the_internal_addresses_nmstate_verification_never_passes() -> None:
    backend = DispatcherNmstate()
    with pytest.raises(errors.TemporaryError, match="VerificationError"):
        network.converge(backend, probe.FakeProber(), clock.FakeClock(), BR_EX, progress=lambda _m: None)


def test_with_them_it_commits_and_a_rerun_changes_nothing() -> None:
    backend = DispatcherNmstate()
    desired = internal_ip.with_internal(BR_EX, INTERNAL)
    assert (
        network.converge(backend, probe.FakeProber(), clock.FakeClock(), desired).change is network.Convergence.APPLIED
    )
    assert backend.committed
    again = network.converge(backend, probe.FakeProber(), clock.FakeClock(), desired)
    assert again.change is network.Convergence.UNCHANGED


def test_with_internal_adds_once_per_family_and_leaves_other_interfaces_and_dhcp_alone() -> None:
    state = copy.deepcopy(BR_EX)
    state["interfaces"].append({"name": "eno2", "type": "ethernet", "ipv4": {"enabled": True, "address": []}})
    state["interfaces"][0]["ipv4"]["address"].append({"ip": "192.168.127.10", "prefix-length": 24})
    out = internal_ip.with_internal(state, INTERNAL)
    assert [a["ip"] for a in out["interfaces"][0]["ipv4"]["address"]] == ["10.8.0.20", "192.168.127.10"]
    assert [a["ip"] for a in out["interfaces"][0]["ipv6"]["address"]] == ["2001:db8:8::20", "fd00:127::10"]
    assert out["interfaces"][1] == state["interfaces"][1]
    dhcp = {"interfaces": [{"name": "br-ex", "ipv4": {"enabled": True, "dhcp": True}}]}
    assert internal_ip.with_internal(dhcp, INTERNAL) == dhcp
    assert BR_EX["interfaces"][0]["ipv4"]["address"] == [{"ip": "10.8.0.20", "prefix-length": 24}], "not mutated"


def test_read_takes_the_factory_config(tmp_path: Any) -> None:
    host = fs.HostFS(tmp_path)
    assert internal_ip.read(host) == internal_ip.Internal()
    host.write_text(
        internal_ip.CONFIG_PATH, 'SNORELOC_INTERFACE=br-ex\nSNORELOC_INTERNAL_IPS="fd00:127::10/64 192.168.127.10/24"\n'
    )
    assert internal_ip.read(host) == INTERNAL


def test_a_site_subnet_overlapping_an_internal_address_is_found() -> None:
    state = copy.deepcopy(BR_EX)
    state["interfaces"][0]["ipv4"]["address"] = [{"ip": "192.168.127.50", "prefix-length": 16}]
    assert internal_ip.conflicts(state, INTERNAL) == [
        "br-ex: 192.168.127.50/16 overlaps the node's internal address 192.168.127.10/24"
    ]
    assert internal_ip.conflicts(BR_EX, INTERNAL) == []
    assert internal_ip.conflicts(internal_ip.with_internal(BR_EX, INTERNAL), INTERNAL) == []


def test_the_network_step_refuses_an_overlap_before_touching_anything(tmp_path: Any) -> None:
    host = fs.HostFS(tmp_path)
    host.write_text(internal_ip.CONFIG_PATH, 'SNORELOC_INTERFACE=br-ex\nSNORELOC_INTERNAL_IPS="192.168.127.10/24"\n')
    state = copy.deepcopy(BR_EX)
    state["interfaces"][0]["ipv4"]["address"] = [{"ip": "192.168.127.50", "prefix-length": 24}]
    backend = DispatcherNmstate()
    services = HostServices(host, backend, probe.FakeProber(), systemd.Systemd(command.FakeRunner()))
    site = model.SiteConfig(name="s", domain="d.example.com", network=state)
    with pytest.raises(errors.ConfigError, match="overlaps the node's internal address") as caught:
        site_network.SiteNetwork(services).plan_for(site)
    assert caught.value.exit_code == 65 and backend.current["interfaces"][0].get("ipv4") is None


@pytest.mark.parametrize("form", ["inline", "file"])
def test_an_overlap_is_refused_at_its_field_and_line(form: str, tmp_path: Any) -> None:
    """The refusal names the site-config field and line (and the network file's line), like every other one."""
    host = fs.HostFS(tmp_path / "root")
    host.write_text(internal_ip.CONFIG_PATH, 'SNORELOC_INTERFACE=br-ex\nSNORELOC_INTERNAL_IPS="192.168.127.10/24"\n')
    state = copy.deepcopy(BR_EX)
    state["interfaces"][0]["ipv4"]["address"] = [{"ip": "192.168.127.50", "prefix-length": 24}]
    head = "apiVersion: snoreloc.io/v1alpha1\nkind: SiteConfig\nmetadata: {name: s}\nspec:\n  domain: d.example.com\n"
    text = yaml.safe_dump({"network": state}, sort_keys=False)
    if form == "file":
        (tmp_path / "net.yaml").write_text(yaml.safe_dump(state, sort_keys=False))
        text = "network: {file: net.yaml}\n"
    path = tmp_path / "site-config.yaml"
    path.write_text(head + "".join(f"  {line}\n" for line in text.splitlines()))
    site = loader.load(str(path))
    services = HostServices(host, DispatcherNmstate(), probe.FakeProber(), systemd.Systemd(command.FakeRunner()))
    with pytest.raises(errors.ConfigError) as caught:
        site_network.SiteNetwork(services).plan_for(site)
    [problem] = caught.value.problems
    lines = path.read_text().splitlines()
    if form == "inline":
        assert problem.path == "spec.network.interfaces[0].ipv4.address[0]"
        assert problem.line is not None and "192.168.127.50" in lines[problem.line - 1]
    else:
        assert (
            problem.path == "spec.network.file" and problem.line is not None and "net.yaml" in lines[problem.line - 1]
        )
        assert "net.yaml: interfaces[0].ipv4.address[0]:" in problem.message and "of net.yaml)" in problem.message
    assert "overlaps the node's internal address 192.168.127.10/24" in problem.message

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from snoreloc import errors
from snoreloc.adapters import clock, command, nmstate, probe
from snoreloc.host import network
from snoreloc.siteconfig import model

DESIRED: dict[str, Any] = {
    "interfaces": [
        {
            "name": "eno1.120",
            "type": "vlan",
            "state": "up",
            "vlan": {"base-iface": "eno1", "id": 120},
            "ipv4": {"enabled": True, "dhcp": False, "address": [{"ip": "10.42.0.10", "prefix-length": 24}]},
        }
    ],
    "routes": {
        "config": [{"destination": "0.0.0.0/0", "next-hop-address": "10.42.0.1", "next-hop-interface": "eno1.120"}]
    },
    "dns-resolver": {"config": {"server": ["10.42.0.53", "10.42.0.54"]}},
}

OLD: dict[str, Any] = {"interfaces": [{"name": "eno1", "type": "ethernet", "state": "up"}], "routes": {"config": []}}


@dataclass
class FakeNmstate:
    """Records every call in order; `failures` makes the first applies fail."""

    current: dict[str, Any]
    failures: list[nmstate.ApplyFailed] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    pending: dict[str, Any] | None = None

    def show(self) -> dict[str, Any]:
        self.events.append("show")
        return copy.deepcopy(self.current)

    def apply(self, desired: dict[str, Any], *, commit: bool, rollback_timeout: int) -> nmstate.Checkpoint | None:
        self.events.append(f"apply commit={commit} timeout={rollback_timeout}")
        if self.failures:
            raise self.failures.pop(0)
        self.pending, self.current = self.current, copy.deepcopy(desired)
        return nmstate.Checkpoint("/org/freedesktop/NetworkManager/Checkpoint/7")

    def commit(self, checkpoint: nmstate.Checkpoint) -> None:
        self.events.append(f"commit {checkpoint.id}")
        self.pending = None

    def rollback(self, checkpoint: nmstate.Checkpoint) -> None:
        self.events.append(f"rollback {checkpoint.id}")
        assert self.pending is not None
        self.current, self.pending = self.pending, None


@dataclass
class OrderedProber:
    """Fails the addresses in `failing`, and logs each probe into the backend's event list."""

    backend: FakeNmstate
    failing: set[str] = field(default_factory=set)

    def check(self, target: probe.Target) -> probe.Check:
        self.backend.events.append(f"probe {target}")
        ok = target.address not in self.failing
        return probe.Check(target, ok, "ok" if ok else "no answer to ping")


def test_applies_probes_then_commits_never_before(clk: clock.FakeClock) -> None:
    backend = FakeNmstate(copy.deepcopy(OLD))
    outcome = network.converge(backend, OrderedProber(backend), clk, DESIRED)
    assert outcome.change is network.Convergence.APPLIED and outcome.attempts == 1
    assert backend.events == [
        "show",
        "apply commit=False timeout=180",
        "probe gateway 10.42.0.1",
        "probe dns 10.42.0.53",
        "probe dns 10.42.0.54",
        "commit /org/freedesktop/NetworkManager/Checkpoint/7",
    ]


def test_failed_probe_rolls_back_and_never_commits(clk: clock.FakeClock) -> None:
    backend = FakeNmstate(copy.deepcopy(OLD))
    prober = OrderedProber(backend, failing={"10.42.0.1"})
    policy = network.Policy(probe_window=60, probe_interval=5)
    with pytest.raises(errors.TemporaryError, match=r"rolled back: gateway 10\.42\.0\.1: no answer") as caught:
        network.converge(backend, prober, clk, DESIRED, policy=policy)
    assert "previous network" in caught.value.hint
    assert backend.current == OLD
    assert not any(event.startswith("commit") for event in backend.events)
    assert backend.events[-1] == "rollback /org/freedesktop/NetworkManager/Checkpoint/7"
    assert clk.monotonic() >= 60, "kept probing for the whole window before giving up"


def test_probe_that_passes_late_within_the_window_commits(clk: clock.FakeClock) -> None:
    backend = FakeNmstate(copy.deepcopy(OLD))

    class LateGateway(OrderedProber):
        def check(self, target: probe.Target) -> probe.Check:
            self.failing = {"10.42.0.1"} if clk.monotonic() < 20 else set()
            return super().check(target)

    network.converge(backend, LateGateway(backend), clk, DESIRED)
    assert backend.events[-1].startswith("commit")


def test_crash_during_probe_rolls_back(clk: clock.FakeClock) -> None:
    backend = FakeNmstate(copy.deepcopy(OLD))

    class Exploding(OrderedProber):
        def check(self, target: probe.Target) -> probe.Check:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        network.converge(backend, Exploding(backend), clk, DESIRED)
    assert backend.events[-1].startswith("rollback") and backend.current == OLD


def test_skips_when_current_already_matches(clk: clock.FakeClock) -> None:
    current = copy.deepcopy(DESIRED)
    current["interfaces"][0]["ipv4"]["address"].append({"ip": "192.168.127.10", "prefix-length": 24})
    current["interfaces"][0]["mtu"] = 1500
    current["interfaces"].append({"name": "br-ex", "type": "ovs-interface"})
    current["routes"]["running"] = []
    backend = FakeNmstate(current)
    outcome = network.converge(backend, OrderedProber(backend), clk, DESIRED)
    assert outcome.change is network.Convergence.UNCHANGED
    assert backend.events == ["show"]


def test_first_boot_failures_are_retried_with_backoff(clk: clock.FakeClock) -> None:
    busy = [nmstate.ApplyFailed("NetworkManager is not running", retryable=True) for _ in range(2)]
    backend = FakeNmstate(copy.deepcopy(OLD), failures=busy)
    outcome = network.converge(backend, OrderedProber(backend), clk, DESIRED, progress=lambda _m: None)
    assert outcome.attempts == 3
    assert clk.sleeps[:2] == [10.0, 20.0]
    assert backend.events[-1].startswith("commit")


def test_retries_are_bounded(clk: clock.FakeClock) -> None:
    busy = [nmstate.ApplyFailed("device busy", retryable=True) for _ in range(4)]
    backend = FakeNmstate(copy.deepcopy(OLD), failures=busy)
    with pytest.raises(errors.TemporaryError, match=r"failed 4 times.*device busy"):
        network.converge(backend, OrderedProber(backend), clk, DESIRED, progress=lambda _m: None)
    assert backend.current == OLD


def test_invalid_state_is_the_site_configs_fault_and_not_retried(clk: clock.FakeClock) -> None:
    invalid = nmstate.ApplyFailed("InvalidArgument: vlan id 5000 out of range", retryable=False)
    backend = FakeNmstate(copy.deepcopy(OLD), failures=[invalid])
    with pytest.raises(errors.ConfigError, match="vlan id 5000"):
        network.converge(backend, OrderedProber(backend), clk, DESIRED)
    assert [e for e in backend.events if e.startswith("apply")] == ["apply commit=False timeout=180"]


def test_probe_targets_include_registry_and_link_local_gateway_interface() -> None:
    desired = copy.deepcopy(DESIRED)
    desired["routes"]["config"].append(
        {"destination": "::/0", "next-hop-address": "fe80::1", "next-hop-interface": "eno1"}
    )
    probes = model.NetworkProbes(tcp=(("mirror.example.com", 5000),))
    targets = network.probe_targets(desired, probes)
    assert [str(t) for t in targets] == [
        "gateway 10.42.0.1",
        "gateway fe80::1",
        "dns 10.42.0.53",
        "dns 10.42.0.54",
        "tcp mirror.example.com:5000",
    ]
    assert targets[1].interface == "eno1"


def test_policy_refuses_a_rollback_shorter_than_the_probe_window() -> None:
    with pytest.raises(ValueError, match="rollback_timeout"):
        network.Policy(rollback_timeout=60, probe_window=60)


@pytest.mark.parametrize(
    ("desired", "current", "expected"),
    [
        ({"a": [1, 2]}, {"a": [1, 2], "b": 3}, True),
        ({"a": [1, 2]}, {"a": [2, 1]}, False),
        ({"mac-address": "aa:bb:cc:dd:ee:ff"}, {"mac-address": "AA:BB:CC:DD:EE:FF"}, True),
        ({"interfaces": [{"name": "x", "state": "absent"}]}, {"interfaces": []}, True),
        ({"interfaces": [{"name": "x", "state": "absent"}]}, {"interfaces": [{"name": "x", "state": "up"}]}, False),
        ({"interfaces": [{"name": "x", "state": "absent"}]}, {"interfaces": [{"name": "x", "state": "down"}]}, True),
        (
            {"routes": {"config": [{"destination": "0.0.0.0/0", "next-hop-interface": "eno1", "state": "absent"}]}},
            {"routes": {"config": [{"destination": "0.0.0.0/0", "next-hop-interface": "eno2"}]}},
            True,
        ),
        (
            {"routes": {"config": [{"next-hop-interface": "eno1", "state": "absent"}]}},
            {"routes": {"config": [{"destination": "10.0.0.0/8", "next-hop-interface": "eno1"}]}},
            False,
        ),
        (  # "remove every default route, add the site's": done once only the site's is left
            {
                "routes": {
                    "config": [
                        {"destination": "0.0.0.0/0", "state": "absent"},
                        {"destination": "0.0.0.0/0", "next-hop-address": "192.0.2.1"},
                    ]
                }
            },
            {"routes": {"config": [{"destination": "0.0.0.0/0", "next-hop-address": "192.0.2.1", "metric": -1}]}},
            True,
        ),
        (
            {
                "routes": {
                    "config": [
                        {"destination": "0.0.0.0/0", "state": "absent"},
                        {"destination": "0.0.0.0/0", "next-hop-address": "192.0.2.1"},
                    ]
                }
            },
            {
                "routes": {
                    "config": [
                        {"destination": "0.0.0.0/0", "next-hop-address": "192.0.2.1"},
                        {"destination": "0.0.0.0/0", "next-hop-address": "198.51.100.1"},
                    ]
                }
            },
            False,
        ),
        ({"ip": "2001:0db8:0000::0010"}, {"ip": "2001:db8::10"}, True),
        ({"server": ["2001:DB8::53"]}, {"server": ["2001:db8::53"]}, True),
        ({"ip": "2001:db8::10"}, {"ip": "2001:db8::11"}, False),
        ({"prefix-length": 24}, {"prefix-length": "24"}, True),
    ],
)
def test_matches_is_a_subset_comparison(desired: Any, current: Any, expected: bool) -> None:
    assert network.matches(desired, current) is expected


def test_a_network_that_removes_the_factory_vlan_converges_and_is_not_reapplied(clk: clock.FakeClock) -> None:
    desired = copy.deepcopy(DESIRED)
    desired["interfaces"].append({"name": "eno1.99", "type": "vlan", "state": "absent"})
    backend = FakeNmstate({"interfaces": [{"name": "eno1.99", "type": "vlan", "state": "up"}]})
    network.converge(backend, OrderedProber(backend), clk, desired)
    backend.current["interfaces"] = [i for i in backend.current["interfaces"] if i["state"] != "absent"]
    backend.events.clear()
    assert network.converge(backend, OrderedProber(backend), clk, desired).change is network.Convergence.UNCHANGED
    assert backend.events == ["show"]


def test_long_hand_ipv6_matches_what_networkmanager_reports(clk: clock.FakeClock) -> None:
    desired = copy.deepcopy(DESIRED)
    desired["interfaces"][0]["ipv6"] = {"enabled": True, "address": [{"ip": "fd00:0:0:0::10", "prefix-length": 64}]}
    current = copy.deepcopy(desired)
    current["interfaces"][0]["ipv6"]["address"][0]["ip"] = "fd00::10"
    backend = FakeNmstate(current)
    assert network.converge(backend, OrderedProber(backend), clk, desired).change is network.Convergence.UNCHANGED


def test_nothing_to_probe_is_rolled_back_never_committed(clk: clock.FakeClock) -> None:
    desired = {"interfaces": [{"name": "eno1", "type": "ethernet", "state": "up", "mtu": 9000}]}
    backend = FakeNmstate(copy.deepcopy(OLD))
    with pytest.raises(errors.TemporaryError, match="nothing to probe") as caught:
        network.converge(backend, OrderedProber(backend), clk, desired)
    assert "networkProbes: none" in caught.value.hint
    assert backend.events[-1].startswith("rollback") and backend.current == OLD


def test_probes_none_commits_without_probing(clk: clock.FakeClock) -> None:
    backend = FakeNmstate(copy.deepcopy(OLD))
    probes = model.NetworkProbes(enabled=False, gateway=False, dns=False)
    outcome = network.converge(backend, OrderedProber(backend), clk, DESIRED, probes=probes)
    assert outcome.checks == ()
    assert not any(event.startswith("probe") for event in backend.events)
    assert backend.events[-1].startswith("commit")


def test_dhcp_network_probes_the_gateway_and_dns_it_learnt(clk: clock.FakeClock) -> None:
    desired = {
        "interfaces": [{"name": "eno1", "type": "ethernet", "state": "up", "ipv4": {"enabled": True, "dhcp": True}}]
    }

    class Dhcp(FakeNmstate):
        def show(self) -> dict[str, Any]:
            state = super().show()
            if self.pending is not None:
                state["routes"] = {"running": [{"destination": "0.0.0.0/0", "next-hop-address": "10.1.0.1"}]}
                state["dns-resolver"] = {"running": {"server": ["10.1.0.53"]}}
            return state

    backend = Dhcp(copy.deepcopy(OLD))
    network.converge(backend, OrderedProber(backend), clk, desired)
    assert [e for e in backend.events if e.startswith("probe")] == ["probe gateway 10.1.0.1", "probe dns 10.1.0.53"]
    assert backend.events[-1].startswith("commit")


def test_only_the_probes_the_site_asks_for_and_its_tcp_targets(clk: clock.FakeClock) -> None:
    backend = FakeNmstate(copy.deepcopy(OLD))
    probes = model.NetworkProbes(gateway=False, dns=True, tcp=(("fd00::5", 8443),))
    network.converge(backend, OrderedProber(backend), clk, DESIRED, probes=probes)
    probed = [e for e in backend.events if e.startswith("probe")]
    assert probed == ["probe dns 10.42.0.53", "probe dns 10.42.0.54", "probe tcp [fd00::5]:8443"]


def test_probe_failure_message_names_target_what_was_sent_and_what_came_back(clk: clock.FakeClock) -> None:
    backend = FakeNmstate(copy.deepcopy(OLD))
    runner = command.FakeRunner().on(
        ["ip", "-j", "neigh"], command.Result(0, stdout='[{"dst":"10.42.0.1","state":["FAILED"]}]')
    )
    prober = probe.NetworkProber(runner, timeout=0.2, trigger=lambda _a, _i: None)
    probes = model.NetworkProbes(dns=False)
    with pytest.raises(errors.TemporaryError) as caught:
        network.converge(backend, prober, clk, DESIRED, probes=probes, policy=network.Policy(probe_window=20))
    message = caught.value.message
    assert "gateway 10.42.0.1" in message and "sent a UDP datagram" in message and "FAILED" in message
    assert backend.events[-1].startswith("rollback")


@pytest.mark.parametrize("rcode", [2, 5])
def test_site_with_internal_resolver_and_icmp_dropping_gateway_is_committed(
    dns_server: tuple[int, list[int]], rcode: int, clk: clock.FakeClock
) -> None:
    """REFUSED/SERVFAIL resolvers and a gateway that never answers ping: the network is kept."""
    port, rcodes = dns_server
    rcodes.extend([rcode] * 4)
    desired = {
        "interfaces": [
            {"name": "lo", "type": "loopback", "ipv4": {"address": [{"ip": "127.0.0.5", "prefix-length": 8}]}}
        ],
        "routes": {"config": [{"destination": "0.0.0.0/0", "next-hop-address": "127.0.0.1"}]},
        "dns-resolver": {"config": {"server": ["127.0.0.1"]}},
    }
    runner = command.FakeRunner().on(
        ["ip", "-j", "neigh"], command.Result(0, stdout='[{"dst":"127.0.0.1","state":["REACHABLE"]}]')
    )
    runner.on(["ping"], command.Result(1))
    prober = probe.NetworkProber(runner, timeout=2, trigger=lambda _a, _i: None, dns_port=port)
    backend = FakeNmstate({"interfaces": []})
    outcome = network.converge(backend, prober, clk, desired)
    assert [check.ok for check in outcome.checks] == [True, True]
    assert backend.events[-1].startswith("commit")
    assert not runner.ran("ping")

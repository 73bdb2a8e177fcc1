"""A new network that fails its probe never strands the node, and a crash between apply and commit cannot either.

`FakeNetworkManager` keeps NetworkManager's promise for a checkpoint: an apply without commit is undone by
NetworkManager itself when its rollback timeout passes, unless committed first. With it, seeded probe histories
show that nothing commits before a passing probe round and that every checkpoint carries a timeout longer than the
probe window. A real `kill -9` of an agent process driving a fake `nmstatectl` shows the CLI path hands nmstate
that timeout and that a killed agent leaves nothing but the pending checkpoint behind.
"""

from __future__ import annotations

import copy
import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from snoreloc import errors
from snoreloc.adapters import clock, command, fs, nmstate, probe
from snoreloc.host import network

from . import figures

FACTORY: dict[str, Any] = {
    "interfaces": [{"name": "eno1", "type": "ethernet", "state": "up", "ipv4": {"enabled": True, "dhcp": True}}],
    "routes": {"config": []},
}
SITE: dict[str, Any] = {
    "interfaces": [
        {
            "name": "eno1",
            "type": "ethernet",
            "state": "up",
            "ipv4": {"enabled": True, "dhcp": False, "address": [{"ip": "10.41.20.10", "prefix-length": 24}]},
        }
    ],
    "routes": {
        "config": [{"destination": "0.0.0.0/0", "next-hop-address": "10.41.20.1", "next-hop-interface": "eno1"}]
    },
    "dns-resolver": {"config": {"server": ["10.41.0.53"]}},
}


class Killed(BaseException):
    """The agent process died here (SIGKILL): nothing it would still have done happens."""


@dataclass
class FakeNetworkManager:
    """NetworkManager's checkpoint semantics over a fake clock, with a log of every call the agent made."""

    clk: clock.FakeClock
    state: dict[str, Any] = field(default_factory=lambda: copy.deepcopy(FACTORY))
    events: list[tuple[Any, ...]] = field(default_factory=list)
    agent_alive: bool = True
    applied_at: float = 0.0
    _pending: tuple[dict[str, Any], float] | None = None

    def _expire(self) -> None:
        if self._pending is not None and self.clk.monotonic() >= self._pending[1]:
            self.state = self._pending[0]
            self._pending = None
            self.events.append(("timeout-rollback",))

    def show(self) -> dict[str, Any]:
        self._expire()
        return copy.deepcopy(self.state)

    def apply(self, desired: dict[str, Any], *, commit: bool, rollback_timeout: int) -> nmstate.Checkpoint | None:
        self._expire()
        self.events.append(("apply", commit, rollback_timeout))
        self.applied_at = self.clk.monotonic()
        if not commit:
            self._pending = (copy.deepcopy(self.state), self.clk.monotonic() + rollback_timeout)
        self.state = copy.deepcopy(desired)
        return None if commit else nmstate.Checkpoint("/org/freedesktop/NetworkManager/Checkpoint/1")

    def commit(self, checkpoint: nmstate.Checkpoint) -> None:
        if self.agent_alive:
            self._expire()
            self.events.append(("commit", self._pending is not None))
            self._pending = None

    def rollback(self, checkpoint: nmstate.Checkpoint) -> None:
        if self.agent_alive and self._pending is not None:
            self.state = self._pending[0]
            self._pending = None
            self.events.append(("rollback",))


@dataclass
class ScriptedProber:
    """Probe verdicts from a script of rounds (True: every target answers); the last round repeats."""

    nm: FakeNetworkManager
    rounds: list[bool]
    kill_at_round: int | None = None
    seen: int = 0
    targets_per_round: int = 2

    def check(self, target: probe.Target) -> probe.Check:
        current = self.seen // self.targets_per_round
        self.seen += 1
        if self.kill_at_round is not None and current >= self.kill_at_round:
            self.nm.agent_alive = False
            raise Killed
        ok = self.rounds[min(current, len(self.rounds) - 1)]
        self.nm.events.append(("probe", str(target), ok))
        return probe.Check(target, ok, "answered" if ok else "no reply within 3 s")


def _converge(nm: FakeNetworkManager, prober: ScriptedProber, policy: network.Policy) -> network.ConvergeResult:
    return network.converge(nm, prober, nm.clk, copy.deepcopy(SITE), policy=policy, progress=lambda text: None)


def test_a_failing_probe_restores_the_previous_network_and_says_why() -> None:
    nm = FakeNetworkManager(clock.FakeClock())
    with pytest.raises(errors.TemporaryError) as caught:
        _converge(nm, ScriptedProber(nm, [False]), network.Policy())
    assert nm.show() == FACTORY
    assert not [e for e in nm.events if e[0] == "commit"]
    assert nm.events[-1] == ("rollback",)
    assert "gateway 10.41.20.1: no reply" in caught.value.message
    assert "dns 10.41.0.53: no reply" in caught.value.message
    assert caught.value.exit_code == 75
    assert "back on its previous network" in (caught.value.hint or "")
    figures.record("network-safety", "failed probe restores the previous network", True)


def _check_history(nm: FakeNetworkManager, policy: network.Policy, committed: bool) -> None:
    applies = [e for e in nm.events if e[0] == "apply"]
    assert applies == [("apply", False, policy.rollback_timeout)]
    assert policy.rollback_timeout >= policy.probe_window + 30
    commits = [i for i, e in enumerate(nm.events) if e[0] == "commit"]
    if not committed:
        assert commits == []
        return
    assert len(commits) == 1 and nm.events[commits[0]] == ("commit", True)
    probes = [e for e in nm.events[: commits[0]] if e[0] == "probe"]
    last_round = probes[-2:]
    assert last_round and all(ok for _, _, ok in last_round), "committed after a failing probe round"


@pytest.mark.parametrize("seed", range(24))
def test_nothing_commits_before_a_passing_probe(seed: int) -> None:
    rng = random.Random(seed)
    policy = network.Policy(rollback_timeout=rng.choice([120, 180, 300]), probe_window=rng.choice([30.0, 60.0, 90.0]))
    rounds = [False] * rng.randrange(0, 30) + [True]
    nm = FakeNetworkManager(clock.FakeClock())
    within = (len(rounds) - 1) * policy.probe_interval <= policy.probe_window
    if within:
        assert _converge(nm, ScriptedProber(nm, rounds), policy).change is network.Convergence.APPLIED
        assert nm.show() == SITE
    else:
        with pytest.raises(errors.TemporaryError):
            _converge(nm, ScriptedProber(nm, rounds), policy)
        assert nm.show() == FACTORY
    _check_history(nm, policy, committed=within)
    figures.record("network-safety", f"seeded probe history {seed}", True)


@pytest.mark.parametrize("kill_round", [0, 1, 5])
def test_a_crash_between_apply_and_commit_is_undone_by_the_rollback_timeout(kill_round: int) -> None:
    nm = FakeNetworkManager(clock.FakeClock())
    policy = network.Policy()
    with pytest.raises(Killed):
        _converge(nm, ScriptedProber(nm, [False], kill_at_round=kill_round), policy)
    assert nm.state == SITE  # the agent is gone with the new network applied and not committed
    nm.clk.advance(nm.applied_at + policy.rollback_timeout - 1 - nm.clk.monotonic())
    assert nm.show() == SITE
    nm.clk.advance(1)
    assert nm.show() == FACTORY, "NetworkManager's rollback timeout restored the previous network"
    assert ("timeout-rollback",) in nm.events and not [e for e in nm.events if e[0] == "commit"]
    nm.agent_alive = True
    assert _converge(nm, ScriptedProber(nm, [True]), policy).change is network.Convergence.APPLIED  # the re-run
    assert nm.show() == SITE
    figures.record("network-safety", f"crash at probe round {kill_round}", True)


def test_the_nmstatectl_path_hands_nmstate_the_timeout() -> None:
    runner = command.FakeRunner()
    runner.on(
        ["nmstatectl", "apply"], command.Result(0, "", "Checkpoint: /org/freedesktop/NetworkManager/Checkpoint/7")
    )
    host = fs.HostFS(pathlib.Path(os.environ.get("TMPDIR", "/tmp")))
    checkpoint = nmstate.NmstatectlBackend(runner, host).apply(SITE, commit=False, rollback_timeout=180)
    (argv,) = runner.commands()
    assert argv[:5] == ("nmstatectl", "apply", "--no-commit", "--timeout", "180")
    assert checkpoint == nmstate.Checkpoint("/org/freedesktop/NetworkManager/Checkpoint/7")


FAKE_NMSTATECTL = """#!{python}
import json, os, sys
log = os.environ["FAKE_NM_LOG"]
with open(log, "a") as out:
    out.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:3] == ["show", "--json"]:
    print(json.dumps({{"interfaces": []}}))
elif sys.argv[1] == "apply":
    print("Checkpoint: /org/freedesktop/NetworkManager/Checkpoint/3", file=sys.stderr)
"""

AGENT = """
import json, sys, time
from snoreloc.adapters import clock, command, fs, nmstate, probe
from snoreloc.host import network

class Hanging:
    def check(self, target):
        print("probing", flush=True)
        time.sleep(120)
        return probe.Check(target, True, "")

backend = nmstate.NmstatectlBackend(command.SubprocessRunner(), fs.HostFS(sys.argv[1]))
network.converge(backend, Hanging(), clock.SystemClock(), json.loads(sys.argv[2]))
"""


def test_a_killed_agent_leaves_only_the_pending_checkpoint(tmp_path: pathlib.Path) -> None:
    bin_dir, root, log = tmp_path / "bin", tmp_path / "root", tmp_path / "nmstatectl.log"
    bin_dir.mkdir()
    (root / "run/snoreloc").mkdir(parents=True)
    fake = bin_dir / "nmstatectl"
    fake.write_text(textwrap.dedent(FAKE_NMSTATECTL.format(python=sys.executable)))
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_NM_LOG": str(log)}
    agent = subprocess.Popen(
        [sys.executable, "-c", AGENT, str(root), json.dumps(SITE)], env=env, stdout=subprocess.PIPE, text=True
    )
    assert agent.stdout is not None and agent.stdout.readline().strip() == "probing"
    os.kill(agent.pid, signal.SIGKILL)
    agent.wait(timeout=10)
    time.sleep(0.2)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls[0] == ["show", "--json"]
    assert calls[1][:4] == ["apply", "--no-commit", "--timeout", str(network.Policy().rollback_timeout)]
    assert len(calls) == 2, f"the killed agent ran more than show and apply: {calls}"
    assert not (root / "run/snoreloc/nmstate-desired.json").exists()
    figures.record("network-safety", "SIGKILL after apply: only the checkpoint remains", True)

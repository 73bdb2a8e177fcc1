"""Crash and resume: `kill -9` of a real `snoreloc run` at 40 seeded points, then a re-run to completion.

Points come in three kinds, all drawn from the point's seed: a random moment of the run; the inside of the k-th
API write (the simulator has applied it, the agent dies before the answer reaches it); and a random moment inside
an API outage (the kube-apiserver rollout the domain change sets off). After each kill `status.json` must parse;
the re-run (the same site-config, in process, re-run again if it stops with a retryable error while the API comes
back) must finish, and the cluster must then equal a clean run's: no duplicated secret, route or mirror object.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import random
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from snoreloc import errors
from snoreloc.engine import paths
from snoreloc.pki import certs
from snoreloc.siteconfig import loader
from snoreloc_sim.kube import messages
from snoreloc_sim.openshift import simulator

from . import figures, harness, inprocess, state

SPEED = 600.0
POINTS = 40
KINDS = ("moment", "inside-write", "during-outage")
RESUME_ATTEMPTS = 3

pytestmark = [pytest.mark.simonly, pytest.mark.slow]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    ca = certs.issue_ca("edge9-registry-ca", days=365, now=dt.datetime.now(dt.UTC))[0]
    return harness.write_site(tmp_path_factory.mktemp("site"), ca_pem=ca)


@pytest.fixture(scope="module")
def clean(site: pathlib.Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    with simulator.Simulator(seed="4.16", speed=SPEED) as sim:
        result = inprocess.relocate(sim, loader.load(str(site)), tmp_path_factory.mktemp("clean"))
        assert result.state in inprocess.FINISHED
        return {"state": state.managed(sim), "writes": sim.cluster.recorder.writes}


class KillOnWrite:
    """Stands in for the simulator's API handler: after the k-th write is applied, the agent is killed."""

    def __init__(self, api: Any, k: int) -> None:
        self.api, self.k, self.writes = api, k, 0
        self.pid: int | None = None
        self.killed = threading.Event()

    def handle(self, request: messages.Request, conflict: bool = False) -> Any:
        response = self.api.handle(request, conflict=conflict)
        if request.method != "GET" and response.code < 300:
            self.writes += 1
            if self.writes == self.k and self.pid is not None:
                os.kill(self.pid, signal.SIGKILL)
                self.killed.set()
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self.api, name)


def _points() -> Iterator[Any]:
    for seed in range(POINTS):
        yield pytest.param(seed, KINDS[seed % len(KINDS)], id=f"{seed:02d}-{KINDS[seed % len(KINDS)]}")


def _kill_at_moment(agent: subprocess.Popen[bytes], rng: random.Random) -> str:
    # A whole run takes ~1.5-4 s here since the simulator sets TCP_NODELAY: draw inside the shortest run seen (1.1 s).
    delay = rng.uniform(0.1, 0.8)
    try:
        agent.wait(timeout=delay)
        return f"ended before {delay:.2f}s"
    except subprocess.TimeoutExpired:
        agent.send_signal(signal.SIGKILL)
        return f"killed at {delay:.2f}s"


def _kill_in_outage(sim: simulator.Simulator, agent: subprocess.Popen[bytes], rng: random.Random) -> str:
    """Kill a random few milliseconds into an outage; if that outage ends first, wait for the next one."""
    deadline = time.monotonic() + 60.0
    while agent.poll() is None and time.monotonic() < deadline:
        if sim.cluster.availability.down() is None:
            time.sleep(0.002)
            continue
        time.sleep(rng.uniform(0.0, 0.02))
        mode = sim.cluster.availability.down()
        if mode is not None:
            agent.send_signal(signal.SIGKILL)
            return f"killed during an outage ({mode})"
    return "ended before an outage"


class StatusWatcher(threading.Thread):
    """Reads status.json as fast as it can while the agent writes it; counts reads that do not parse."""

    def __init__(self, root: pathlib.Path) -> None:
        super().__init__(daemon=True)
        self.status = paths.Paths.under(root).status
        self.stop = threading.Event()
        self.reads = self.unreadable = 0

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                json.loads(self.status.read_bytes())
                self.reads += 1
            except FileNotFoundError:
                pass
            except ValueError:
                self.unreadable += 1
            time.sleep(0.002)


def _status_readable(root: pathlib.Path) -> bool:
    status = paths.Paths.under(root).status
    if not status.exists():
        return True
    try:
        json.loads(status.read_text())
    except ValueError:
        return False
    return True


def _resume(sim: simulator.Simulator, site: pathlib.Path, root: pathlib.Path) -> int:
    """Re-run until it finishes; each stop on the way must be retryable. Returns the runs it took."""
    for attempt in range(1, RESUME_ATTEMPTS + 1):
        inprocess.wait_until_up(sim)
        try:
            result = inprocess.relocate(sim, loader.load(str(site)), root)
        except errors.SnorelocError as exc:
            assert exc.exit_code in (69, 75), f"resume {attempt} stopped for good: {exc.message}"
            continue
        assert result.state in inprocess.FINISHED
        return attempt
    raise AssertionError(f"no completion in {RESUME_ATTEMPTS} re-runs")


@pytest.mark.parametrize(("seed", "kind"), list(_points()))
def test_kill_and_resume(
    seed: int, kind: str, site: pathlib.Path, clean: dict[str, Any], tmp_path: pathlib.Path
) -> None:
    rng = random.Random(seed)
    began, passed, how = time.monotonic(), False, ""
    with simulator.Simulator(seed="4.16", speed=SPEED) as sim:
        hook = KillOnWrite(sim.running.front.api, k=rng.randint(1, clean["writes"]))
        if kind == "inside-write":
            sim.running.front.api = hook  # type: ignore[assignment]
        agent = subprocess.Popen(
            harness.run_args(site, tmp_path, sim), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        hook.pid = agent.pid
        watcher = StatusWatcher(tmp_path)
        watcher.start()
        try:
            if kind == "moment":
                how = _kill_at_moment(agent, rng)
            elif kind == "during-outage":
                how = _kill_in_outage(sim, agent, rng)
            else:
                how = f"killed inside write {hook.k}" if hook.killed.wait(60.0) else "ended before the write"
            agent.wait(timeout=60)
            watcher.stop.set()
            watcher.join()
            sim.running.front.api = hook.api
            assert watcher.unreadable == 0, f"{watcher.unreadable} of {watcher.reads} reads of status.json failed"
            assert agent.returncode == -signal.SIGKILL, f"the agent was not killed ({how}, exit {agent.returncode})"
            assert _status_readable(tmp_path), "status.json is unreadable after the kill"
            runs = _resume(sim, site, tmp_path)
            assert _status_readable(tmp_path)
            assert state.differences(clean["state"], state.managed(sim)) == []
            passed = True
        finally:
            watcher.stop.set()
            if agent.poll() is None:
                agent.kill()
                agent.wait()
            figures.record("crash-resume", f"{seed:02d} {how}", passed, seconds=time.monotonic() - began)
    assert runs >= 1

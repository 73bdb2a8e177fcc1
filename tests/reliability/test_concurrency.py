"""A second `snoreloc run` while one is running is refused at once (exit 69, a plain message) and changes nothing.

Two shapes: a real relocation in progress (the second run names its pid; its kubeconfig points at a second,
untouched simulator, so any API traffic it made would show there), and a lock held by another process over a
finished state directory (the host tree must be byte-for-byte unchanged, `rollback` refused the same way).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from snoreloc.engine import lock, paths
from snoreloc_sim.openshift import simulator

from . import figures, harness

pytestmark = pytest.mark.simonly  # runs two simulators and reads their stores

HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
os.write(fd, f"{os.getpid()}\\n".encode())
print("held", flush=True)
time.sleep(120)
"""


def _wait_for(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def second_sim() -> Iterator[simulator.Simulator]:
    with simulator.Simulator(seed="4.16", speed=600.0) as running:
        yield running


def _refused(result: harness.Measured, holder_pid: int) -> bool:
    # the site-config's warnings are logged first (the harness site gives no spec.adminAccess: issue 32's warning)
    lines = [line for line in result.stderr.splitlines() if " WARNING snoreloc.siteconfig.loader: " not in line]
    first = lines[0] if lines else ""
    plain = first.startswith(f"error: another snoreloc run (pid {holder_pid}) is in progress")
    return result.code == 69 and plain and "Traceback" not in result.stderr


@pytest.mark.parametrize("sim", [{"faults": "latency=15ms"}], indirect=True)
def test_a_second_run_during_a_relocation_is_refused(
    sim: simulator.Simulator, second_sim: simulator.Simulator, tmp_path: pathlib.Path, root: pathlib.Path
) -> None:
    site = harness.write_site(tmp_path / "site")
    lock_path = paths.Paths.under(root).lock
    first = subprocess.Popen(harness.run_args(site, root, sim), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert _wait_for(lambda: lock.held(lock_path) and str(first.pid) in lock_path.read_text(), 30.0)
        second = harness.measure(harness.run_args(site, root, second_sim), timeout=30.0)
        still_running = first.poll() is None
    finally:
        _out, err = first.communicate(timeout=120)
    passed = _refused(second, first.pid) and second_sim.cluster.recorder.writes == 0
    figures.record("concurrency", "second run during a relocation", passed and still_running)
    assert still_running, "the first run ended before the second was tried: the test proved nothing"
    assert _refused(second, first.pid), second.stderr
    assert second.seconds < 30.0  # refused at once, not after waiting for the lock (two shared cores: generous)
    assert second.stdout == ""
    assert second_sim.cluster.recorder.writes == 0
    assert second_sim.cluster.recorder.requests == 0, "the refused run talked to the API before taking the lock"
    assert first.returncode in (0, 2), err.decode()[-2000:]


@pytest.mark.parametrize("command", ["run", "rollback"])
def test_a_held_lock_leaves_the_state_untouched(
    command: str, sim: simulator.Simulator, tmp_path: pathlib.Path, root: pathlib.Path
) -> None:
    site = harness.write_site(tmp_path / "site")
    done = harness.measure(harness.run_args(site, root, sim), timeout=120.0)
    assert done.code in (0, 2), done.stderr  # 2: done, with DNS warnings (no resolver for the new domain here)
    lock_path = paths.Paths.under(root).lock
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        before, requests = harness.snapshot(root), sim.cluster.recorder.requests
        if command == "run":
            argv = harness.run_args(site, root, sim, "--force")
        else:
            argv = harness.snoreloc("rollback", "--kubeconfig", str(sim.kubeconfig_path), "--root", str(root))
        refused = harness.measure(argv, timeout=30.0)
        after = harness.snapshot(root)
    finally:
        holder.kill()
        holder.wait()
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    figures.record("concurrency", f"{command} while the lock is held", _refused(refused, holder.pid) and not changed)
    assert _refused(refused, holder.pid), refused.stderr
    assert changed == [], changed
    assert sim.cluster.recorder.requests == requests


def test_the_lock_dies_with_its_holder(tmp_path: pathlib.Path) -> None:
    """A killed run leaves no stale lock: the kernel drops the flock, the next run proceeds."""
    lock_path = tmp_path / "run/snoreloc/lock"
    lock_path.parent.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock_path)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    assert lock.held(lock_path)
    os.kill(holder.pid, 9)
    holder.wait()
    with lock.RunLock(lock_path):
        assert lock_path.read_text().strip() == str(os.getpid())

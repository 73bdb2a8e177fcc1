"""The unit under a real systemd: `systemd-nspawn` boots this machine's systemd on a volatile root in about 4 s.

The unit as the MachineConfig renders it runs with a stub `/usr/bin/podman` (an overlay on /usr, only inside the
container) that sends STATUS= to the notify socket and exits with the code a test chose. What is checked is systemd's
reading of the unit: STATUS= reaches `systemctl status` (NotifyAccess=all), exit 75 is restarted, exit 65 is not
(RestartPreventExitStatus), and the disabled marker keeps the unit from running at all.

The volatile root has an empty /etc, so on this first boot systemd enables every unit /usr ships (presets), those of
any package this machine has included. The stub therefore acts only when it is the unit's `podman run ... --name
snoreloc` (podman's own units run /usr/bin/podman too), and the disabled case waits for the unit's condition to be
checked, not for the whole boot to settle: podman's units want network-online.target, and with a private network
systemd-networkd-wait-online holds the boot in "starting" for two minutes.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from realhost_sandbox import require

from snoreloc.factory import machineconfig

STUB = """#!/usr/bin/python3
import os, socket, sys, time
if sys.argv[1:2] != ["run"] or "--name" not in sys.argv or sys.argv[sys.argv.index("--name") + 1] != "snoreloc":
    sys.exit(0)
open("/etc/snoreloc/stub-ran", "a").write("ran\\n")
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.connect(os.environ["NOTIFY_SOCKET"])
sock.send(b"STATUS=stub agent: applying the site network")
time.sleep(1)
if os.path.exists("/etc/snoreloc/stub-hold"):  # a hold: "USEC ROUNDS", 2 s a round, EXTEND_TIMEOUT_USEC each
    usec, rounds = open("/etc/snoreloc/stub-hold").read().split()
    for _ in range(int(rounds)):
        if usec != "0":
            sock.send(f"EXTEND_TIMEOUT_USEC={usec}".encode())
        time.sleep(2)
sys.exit(int(open("/etc/snoreloc/stub-exit").read()))
"""
BOOT_TIMEOUT = 90.0


@dataclass
class Container:
    process: subprocess.Popen[bytes]
    state: Path

    @property
    def pid(self) -> int:
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        found = children.read_text().split() if children.exists() else []
        return int(found[0]) if found else 0

    def run(self, *argv: str) -> str:
        done = subprocess.run(
            ["nsenter", "-t", str(self.pid), "-a", "--", *argv], capture_output=True, text=True, check=False
        )
        return done.stdout

    def unit(self) -> dict[str, str]:
        properties = "ActiveState,SubState,ExecMainStatus,ConditionResult,ConditionTimestampMonotonic,StatusText"
        properties += ",NRestarts"
        shown = self.run("systemctl", "show", "-p", properties, machineconfig.UNIT_NAME)
        return dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)

    def wait_unit(self, done: set[str]) -> dict[str, str]:
        """The unit's properties once its SubState is one of `done` (bounded by BOOT_TIMEOUT)."""
        deadline = time.monotonic() + BOOT_TIMEOUT
        while True:
            shown = self.unit() if self.pid else {}
            if shown.get("SubState") in done or time.monotonic() > deadline:
                return shown
            time.sleep(0.5)


def boot(
    tmp_path: Path, *, exit_code: int, disabled: bool = False, hold: str = "", start_timeout: str = ""
) -> Iterator[Container]:
    """Boot a container whose snoreloc unit is sealed (and maybe disabled) with a stub exiting `exit_code`; with
    `hold` ("USEC ROUNDS") the stub first waits as a held node does, with `start_timeout` the unit's
    TimeoutStartSec is that (a drop-in)."""
    require("systemd-nspawn", "nsenter")
    if not Path("/usr/bin/python3").exists():
        pytest.skip("the stub podman needs /usr/bin/python3")
    upper, state, unit = tmp_path / "usr", tmp_path / "etc-snoreloc", tmp_path / "snoreloc.service"
    (upper / "bin").mkdir(parents=True)
    (upper / "bin/podman").write_text(STUB)
    (upper / "bin/podman").chmod(0o755)
    state.mkdir()
    (state / "config").write_text("SNORELOC_IMAGE=quay.io/snoreloc/snoreloc:0.1.0\nSNORELOC_ARGS=\n")
    (state / "sealed").touch()
    (state / "stub-exit").write_text(str(exit_code))
    if disabled:
        (state / "disabled").touch()
    if hold:
        (state / "stub-hold").write_text(hold)
    unit.write_text(machineconfig.unit_text(machineconfig.Runtime.CONTAINER))
    argv = ["systemd-nspawn", "--quiet", "--register=no", "--keep-unit", "--volatile=yes", "-D", "/"]
    argv += ["--private-network", f"--overlay-ro=/usr:{upper}:/usr", f"--bind={state}:/etc/snoreloc"]
    argv += [f"--bind-ro={unit}:/etc/systemd/system/{machineconfig.UNIT_NAME}", "-b", "systemd.firstboot=off"]
    if start_timeout:
        dropin = tmp_path / "timeout.conf"
        dropin.write_text(f"[Service]\nTimeoutStartSec={start_timeout}\n")
        argv[-2:-2] = [f"--bind-ro={dropin}:/etc/systemd/system/{machineconfig.UNIT_NAME}.d/timeout.conf"]
    log = (tmp_path / "console.log").open("wb")
    container = Container(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log), state)
    try:
        yield container
    finally:
        if container.pid:
            subprocess.run(["kill", "-9", str(container.pid)], check=False)
        container.process.wait(timeout=30)


@pytest.fixture
def temporary_failure(tmp_path: Path) -> Iterator[Container]:
    yield from boot(tmp_path, exit_code=75)


@pytest.fixture
def bad_site_config(tmp_path: Path) -> Iterator[Container]:
    yield from boot(tmp_path, exit_code=65)


@pytest.fixture
def disabled(tmp_path: Path) -> Iterator[Container]:
    yield from boot(tmp_path, exit_code=0, disabled=True)


def test_status_reaches_systemd_and_exit_75_is_restarted(temporary_failure: Container) -> None:
    running = temporary_failure.wait_unit({"start", "auto-restart"})
    status = temporary_failure.run("systemctl", "status", "--no-pager", machineconfig.UNIT_NAME)
    after = temporary_failure.wait_unit({"auto-restart"})

    assert running.get("SubState") in {"start", "auto-restart"}, running
    assert "stub agent: applying the site network" in status
    assert (after.get("SubState"), after.get("ExecMainStatus")) == ("auto-restart", "75"), after


def test_exit_65_is_not_restarted(bad_site_config: Container) -> None:
    after = bad_site_config.wait_unit({"failed", "auto-restart"})

    assert (after.get("SubState"), after.get("ExecMainStatus")) == ("failed", "65"), after
    time.sleep(1)
    assert bad_site_config.unit().get("NRestarts") == "0"


def test_disabled_marker_keeps_the_unit_from_running(disabled: Container) -> None:
    deadline = time.monotonic() + BOOT_TIMEOUT
    shown = disabled.unit() if disabled.pid else {}
    while shown.get("ConditionTimestampMonotonic", "0") == "0":
        if time.monotonic() > deadline:
            pytest.fail(f"systemd never checked the unit's conditions: {shown}")
        time.sleep(0.5)
        shown = disabled.unit() if disabled.pid else {}

    assert shown.get("ConditionResult") == "no", shown
    assert not (disabled.state / "stub-ran").exists()


@pytest.fixture
def held_and_extending(tmp_path: Path) -> Iterator[Container]:
    yield from boot(tmp_path, exit_code=0, hold="4000000 6", start_timeout="6s")  # 13 s, each message 4 s more


@pytest.fixture
def held_without_extending(tmp_path: Path) -> Iterator[Container]:
    yield from boot(tmp_path, exit_code=0, hold="0 6", start_timeout="6s")


def test_a_hold_that_extends_the_start_timeout_outlives_it(held_and_extending: Container) -> None:
    """A node held by its fleet sends EXTEND_TIMEOUT_USEC while it waits (`engine.fleetgate`,
    `adapters.systemd.extend_timeout`): this oneshot unit's start then outlives its TimeoutStartSec."""
    after = held_and_extending.wait_unit({"exited", "failed", "auto-restart"})

    assert (after.get("SubState"), after.get("ExecMainStatus")) == ("exited", "0"), after


def test_a_hold_that_does_not_extend_is_ended_by_the_start_timeout(held_without_extending: Container) -> None:
    after = held_without_extending.wait_unit({"exited", "failed", "auto-restart"})

    assert after.get("SubState") in {"failed", "auto-restart"}, after
    result = held_without_extending.run("systemctl", "show", "-p", "Result", machineconfig.UNIT_NAME)
    assert result.strip() == "Result=timeout"

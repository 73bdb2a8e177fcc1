from __future__ import annotations

import logging
import sys

import pytest

from snoreloc import errors
from snoreloc.adapters import command


def test_fake_runner_answers_by_longest_prefix_and_records() -> None:
    fake = (
        command.FakeRunner()
        .on(["systemctl"], command.Result(0, "generic"))
        .on(["systemctl", "is-active"], command.Result(3, "inactive"))
    )
    assert fake.run(["systemctl", "start", "x"], timeout=5).stdout == "generic"
    assert fake.run(["systemctl", "is-active", "x"], timeout=5, check=False).returncode == 3
    assert fake.commands() == [("systemctl", "start", "x"), ("systemctl", "is-active", "x")]
    assert fake.calls[0].timeout == 5


def test_fake_runner_raises_on_unexpected_command() -> None:
    with pytest.raises(command.UnexpectedCommand, match="rm -rf /"):
        command.FakeRunner().run(["rm", "-rf", "/"], timeout=1)


def test_fake_runner_answers_in_turn_then_repeats_last() -> None:
    fake = command.FakeRunner().on(["blkid"], command.Result(2), command.Result(0, "/dev/sr0\n"))
    results = [fake.run(["blkid", "-L", "x"], timeout=1, check=False).returncode for _ in range(3)]
    assert results == [2, 0, 0]


def test_check_turns_nonzero_into_command_failed_with_stderr() -> None:
    fake = command.FakeRunner().on(["mount"], command.Result(32, "", "mount: wrong fs type"))
    with pytest.raises(command.CommandFailed, match="wrong fs type") as caught:
        fake.run(["mount", "/dev/sr0", "/mnt"], timeout=1)
    assert caught.value.result.returncode == 32


def test_guard_refuses_real_processes_without_the_marker() -> None:
    with pytest.raises(AssertionError, match="real process refused"):
        command.SubprocessRunner().run(["true"], timeout=5)


@pytest.mark.allow_subprocess
def test_subprocess_runner_runs_with_stdin_and_never_logs_it(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="snoreloc")
    code = "import sys; sys.stdout.write(sys.stdin.read().upper())"
    result = command.SubprocessRunner().run([sys.executable, "-c", code], input="hunter2-secret", timeout=30)
    assert result.stdout == "HUNTER2-SECRET"
    assert "hunter2" not in caplog.text


@pytest.mark.allow_subprocess
def test_subprocess_runner_kills_at_timeout() -> None:
    with pytest.raises(command.CommandTimeout) as caught:
        command.SubprocessRunner().run([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert isinstance(caught.value, errors.TemporaryError)


@pytest.mark.allow_subprocess
def test_missing_program_is_unavailable() -> None:
    with pytest.raises(errors.UnavailableError, match="not installed"):
        command.SubprocessRunner().run(["snoreloc-no-such-program"], timeout=5)


def test_enter_host_prefixes_nsenter(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def execute(argv: list[str], stdin: str | None, timeout: float, env: object) -> command.Result:
        seen.append(list(argv))
        return command.Result(0)

    monkeypatch.setattr(command, "_execute", execute)
    command.SubprocessRunner(enter_host=True).run(["systemctl", "start", "kubelet"], timeout=5)
    assert seen == [
        [
            "nsenter",
            "--target",
            "1",
            "--mount",
            "--uts",
            "--ipc",
            "--net",
            "--pid",
            "--",
            "systemctl",
            "start",
            "kubelet",
        ]
    ]

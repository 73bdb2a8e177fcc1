from __future__ import annotations

import logging
import os
import pathlib
import socket
import tempfile
from collections.abc import Iterator

import pytest

from snoreloc import errors, redact
from snoreloc.adapters import clock, command, console, fs, systemd
from snoreloc.host import kubelet


@pytest.fixture
def notify_socket() -> Iterator[tuple[str, socket.socket]]:
    directory = tempfile.mkdtemp(prefix="sd")  # short path: AF_UNIX paths are limited to 108 bytes
    path = os.path.join(directory, "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(2)
    yield path, sock
    sock.close()
    os.unlink(path)
    os.rmdir(directory)


def test_sd_notify_sends_a_status_datagram(notify_socket: tuple[str, socket.socket]) -> None:
    path, sock = notify_socket
    assert systemd.status("network:  probing\n gateway", environ={"NOTIFY_SOCKET": path})
    assert sock.recv(4096) == b"STATUS=network: probing gateway"


def test_a_hold_asks_systemd_for_more_start_time(notify_socket: tuple[str, socket.socket]) -> None:
    path, sock = notify_socket
    assert systemd.extend_timeout(3720.5, environ={"NOTIFY_SOCKET": path})
    assert sock.recv(4096) == b"EXTEND_TIMEOUT_USEC=3720500000"


def test_sd_notify_reaches_an_abstract_socket() -> None:
    name = f"snoreloc-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(2)
        assert systemd.notify("READY=1", environ={"NOTIFY_SOCKET": "@" + name})
        assert sock.recv(64) == b"READY=1"


def test_sd_notify_is_a_no_op_without_socket_and_masks_secrets(notify_socket: tuple[str, socket.socket]) -> None:
    assert not systemd.notify("STATUS=x", environ={})
    assert not systemd.notify("STATUS=x", environ={"NOTIFY_SOCKET": "/nonexistent/notify"})
    redact.register_secret("s3cr3t-token-value")
    path, sock = notify_socket
    systemd.status("using s3cr3t-token-value", environ={"NOTIFY_SOCKET": path})
    assert b"s3cr3t" not in sock.recv(4096)


def test_systemctl_verbs(runner: command.FakeRunner) -> None:
    runner.on(["systemctl", "is-active"], command.Result(3)).on(["systemctl", "start"]).on(["systemctl", "enable"])
    units = systemd.Systemd(runner)
    assert not units.is_active("kubelet.service")
    units.start("kubelet.service")
    units.enable("kubelet.service")
    assert runner.commands()[1:] == [
        ("systemctl", "start", "--no-block", "kubelet.service"),
        ("systemctl", "enable", "kubelet.service"),
    ]


def _issue(host: fs.HostFS) -> str:
    return host.read_text(console.ISSUE_FILE)


def test_banner_progress_done_and_failure(host: fs.HostFS, runner: command.FakeRunner) -> None:
    runner.on(["agetty", "--reload"])
    banner = console.Banner(host, runner)
    banner.progress("network", "probing gateway 10.0.0.1", index=3, total=8)
    assert "In progress (3/8): network: probing gateway 10.0.0.1" in _issue(host)
    assert "journalctl -u snoreloc -b" in _issue(host)
    banner.done("https://console-openshift-console.apps.store042.example.com", warnings=["route x kept its host"])
    text = _issue(host)
    assert "Web console: https://console-openshift-console.apps.store042.example.com" in text
    assert "Warning: route x kept its host" in text
    banner.failed("network", "the gateway 10.0.0.1 did not answer", "check the cable")
    assert "FAILED at step network" in _issue(host) and "Likely fix: check the cable" in _issue(host)
    assert host.mode(console.ISSUE_FILE) == 0o644
    assert runner.commands().count(("agetty", "--reload")) == 3


def test_banner_escapes_agetty_sequences_and_survives_missing_agetty(host: fs.HostFS) -> None:
    def missing(_argv: object, _input: object) -> command.Result:
        raise command.CommandNotFound("agetty is not installed")

    banner = console.Banner(host, command.FakeRunner().on(["agetty"], missing))
    banner.progress("network", "path C:\\n\x1b[31m")
    assert "C:\\\\n\\\\x1b[31m" in _issue(host) and "\x1b" not in _issue(host)  # the escape shown, not obeyed
    banner.clear()
    assert not host.exists(console.ISSUE_FILE)


def test_start_kubelet_only_when_not_running(runner: command.FakeRunner) -> None:
    runner.on(["systemctl", "is-active"], command.Result(3), command.Result(0)).on(["systemctl", "start"])
    units = systemd.Systemd(runner)
    assert kubelet.start_kubelet(units, progress=lambda _m: None)
    assert not kubelet.start_kubelet(units, progress=lambda _m: None)
    assert runner.commands().count(("systemctl", "start", "--no-block", "kubelet.service")) == 1


def test_wait_for_api_reports_progress_and_tolerates_errors(
    clk: clock.FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    answers = iter([ConnectionRefusedError("refused")] * 30 + [False] * 10 + [True])

    def api_ready() -> bool:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    with caplog.at_level(logging.INFO, logger="snoreloc.progress"):
        waited = kubelet.wait_for_api(api_ready, clk, budget=600, poll=5)
    assert waited == 200
    assert [r.getMessage() for r in caplog.records if "waiting" in r.getMessage()] == [
        "api: waiting for the API on the node-local kubeconfig: 0s of at most 10m 00s",
        "api: waiting for the API on the node-local kubeconfig: 1m 00s of at most 10m 00s",
        "api: waiting for the API on the node-local kubeconfig: 2m 00s of at most 10m 00s",
        "api: waiting for the API on the node-local kubeconfig: 3m 00s of at most 10m 00s",
    ]


def test_wait_for_api_is_bounded(clk: clock.FakeClock) -> None:
    with pytest.raises(errors.WaitTimeout) as caught:
        kubelet.wait_for_api(lambda: False, clk, budget=120)
    assert caught.value.step == "api" and "API" in caught.value.waited_for
    assert clk.monotonic() == 120


def test_finish_enables_kubelet_and_disarms(host: fs.HostFS, runner: command.FakeRunner) -> None:
    host.write_text(kubelet.SEAL_MARKER, "{}")
    runner.on(["systemctl", "enable", "kubelet.service"])
    kubelet.finish(systemd.Systemd(runner), host)
    assert not host.exists(kubelet.SEAL_MARKER)
    assert runner.ran("systemctl", "enable", "kubelet.service")


def test_unit_file_copy_is_the_packaged_one() -> None:
    repo = pathlib.Path(__file__).resolve().parents[2]
    packaged = repo / "src/snoreloc/factory/data/snoreloc.service"
    assert (repo / "systemd/snoreloc.service").read_text() == packaged.read_text()

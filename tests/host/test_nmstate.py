from __future__ import annotations

import json
import stat
import sys
import types
from collections.abc import Sequence
from typing import Any

import pytest

from snoreloc import errors
from snoreloc.adapters import clock, command, fs, nmstate, probe
from snoreloc.host import network

DESIRED = {"interfaces": [{"name": "eno1", "type": "ethernet", "state": "up"}]}


def test_nmstatectl_apply_without_commit_parses_the_checkpoint(host: fs.HostFS, runner: command.FakeRunner) -> None:
    written: list[tuple[dict[str, Any], int]] = []

    def apply(argv: Sequence[str], _input: str | None) -> command.Result:
        path = host.path(argv[-1])
        written.append((json.loads(path.read_text()), stat.S_IMODE(path.stat().st_mode)))
        log = "[INFO nmstate::nm::checkpoint] Checkpoint /org/freedesktop/NetworkManager/Checkpoint/12 created\n"
        return command.Result(0, "---\ninterfaces: []\n", log)

    runner.on(["nmstatectl", "apply"], apply)
    checkpoint = nmstate.NmstatectlBackend(runner, host).apply(DESIRED, commit=False, rollback_timeout=180)
    assert checkpoint == nmstate.Checkpoint("/org/freedesktop/NetworkManager/Checkpoint/12")
    assert runner.commands()[0][:5] == ("nmstatectl", "apply", "--no-commit", "--timeout", "180")
    assert written == [(DESIRED, 0o600)]
    assert not host.exists(nmstate.DESIRED_FILE), "the desired state (maybe with secrets) is not left behind"


def test_nmstatectl_commit_rollback_and_show(host: fs.HostFS, runner: command.FakeRunner) -> None:
    runner.on(["nmstatectl", "show", "--json"], command.Result(0, json.dumps(DESIRED)))
    runner.on(["nmstatectl", "commit"]).on(["nmstatectl", "rollback"])
    backend = nmstate.NmstatectlBackend(runner, host)
    assert backend.show() == DESIRED
    backend.commit(nmstate.Checkpoint("/cp/1"))
    backend.rollback(nmstate.Checkpoint())
    assert runner.commands()[1:] == [("nmstatectl", "commit", "/cp/1"), ("nmstatectl", "rollback")]


def test_nmstatectl_failure_carries_nmstates_text(host: fs.HostFS, runner: command.FakeRunner) -> None:
    runner.on(["nmstatectl", "apply"], command.Result(1, "", "NmstateError: VerificationError: ipv4 address mismatch"))
    with pytest.raises(nmstate.ApplyFailed, match="VerificationError: ipv4 address mismatch") as caught:
        nmstate.NmstatectlBackend(runner, host).apply(DESIRED, commit=False, rollback_timeout=60)
    assert caught.value.retryable


class NmstateValueError(Exception):
    pass


def _fake_libnmstate(calls: list[tuple[str, Any]], fail: Exception | None = None) -> types.ModuleType:
    module = types.ModuleType("libnmstate")

    def apply(desired: Any, **kwargs: Any) -> str:
        calls.append(("apply", kwargs))
        if fail:
            raise fail
        return "/org/freedesktop/NetworkManager/Checkpoint/3"

    module.apply = apply  # type: ignore[attr-defined]
    module.commit = lambda **kw: calls.append(("commit", kw))  # type: ignore[attr-defined]
    module.rollback = lambda **kw: calls.append(("rollback", kw))  # type: ignore[attr-defined]
    module.show = lambda: DESIRED  # type: ignore[attr-defined]
    return module


def test_libnmstate_backend_uses_the_transaction_api() -> None:
    calls: list[tuple[str, Any]] = []
    backend = nmstate.LibnmstateBackend(_fake_libnmstate(calls))
    checkpoint = backend.apply(DESIRED, commit=False, rollback_timeout=90)
    backend.commit(checkpoint or nmstate.Checkpoint())
    assert calls == [
        ("apply", {"verify_change": True, "commit": False, "rollback_timeout": 90}),
        ("commit", {"checkpoint": "/org/freedesktop/NetworkManager/Checkpoint/3"}),
    ]


def test_libnmstate_value_error_is_not_retryable() -> None:
    backend = nmstate.LibnmstateBackend(_fake_libnmstate([], fail=NmstateValueError("bad vlan id")))
    with pytest.raises(nmstate.ApplyFailed, match="bad vlan id") as caught:
        backend.apply(DESIRED, commit=False, rollback_timeout=90)
    assert not caught.value.retryable


class Error(Exception):
    """What GLib.Error is called when NetworkManager's verdict reaches libnmstate 0.3 unwrapped."""


def test_networkmanagers_own_rejection_under_libnmstate_is_not_retryable() -> None:
    rejected = Error("nm-connection-error-quark: Invalid IPv4 address prefix '33' (0)")
    backend = nmstate.LibnmstateBackend(_fake_libnmstate([], fail=rejected))
    with pytest.raises(nmstate.ApplyFailed, match="prefix '33'") as caught:
        backend.apply(DESIRED, commit=False, rollback_timeout=90)
    assert not caught.value.retryable


def test_other_glib_errors_under_libnmstate_are_retried() -> None:
    busy = Error("nm-manager-error-quark: Connection activation failed (3)")
    backend = nmstate.LibnmstateBackend(_fake_libnmstate([], fail=busy))
    with pytest.raises(nmstate.ApplyFailed) as caught:
        backend.apply(DESIRED, commit=False, rollback_timeout=90)
    assert caught.value.retryable


def test_select_prefers_libnmstate(
    monkeypatch: pytest.MonkeyPatch, host: fs.HostFS, runner: command.FakeRunner
) -> None:
    monkeypatch.setitem(sys.modules, "libnmstate", _fake_libnmstate([]))
    assert isinstance(nmstate.select_backend(runner, host), nmstate.LibnmstateBackend)
    assert runner.calls == []


def test_select_falls_back_to_nmstatectl_then_gives_up(
    monkeypatch: pytest.MonkeyPatch, host: fs.HostFS, runner: command.FakeRunner
) -> None:
    monkeypatch.setitem(sys.modules, "libnmstate", None)
    runner.on(["nmstatectl", "--version"], command.Result(0, "nmstatectl 2.2.21"), command.Result(127))
    assert isinstance(nmstate.select_backend(runner, host), nmstate.NmstatectlBackend)
    with pytest.raises(errors.UnavailableError, match="neither libnmstate nor nmstatectl"):
        nmstate.select_backend(runner, host)


@pytest.mark.parametrize(
    ("stderr", "retryable"),
    [
        ("[ERROR nmstatectl] NmstateError: InvalidArgument: Invalid VLAN ID 5000", False),
        ("NmstateError: NotSupportedError: OVS bridge is not supported", False),
        ("NmstateError: PluginFailure: NetworkManager daemon is not running", True),
        ("NmstateError: Bug: connection activation failed", True),
        ("libnmstate.error.NmstateValueError: Invalid VLAN ID 5000", False),
        ("libnmstate.error.NmstateLibnmError: Activation failed", True),
        ("Error: something nmstate never printed before", True),
    ],
)
def test_nmstatectl_failures_are_classified_by_nmstates_error_kind(
    host: fs.HostFS, runner: command.FakeRunner, stderr: str, retryable: bool
) -> None:
    runner.on(["nmstatectl", "apply"], command.Result(1, "", stderr))
    with pytest.raises(nmstate.ApplyFailed) as caught:
        nmstate.NmstatectlBackend(runner, host).apply(DESIRED, commit=False, rollback_timeout=60)
    assert caught.value.retryable is retryable
    assert stderr.rsplit(": ", maxsplit=1)[-1] in caught.value.detail


def test_invalid_argument_from_nmstatectl_is_exit_65_after_one_attempt(
    host: fs.HostFS, runner: command.FakeRunner
) -> None:
    runner.on(["nmstatectl", "show"], command.Result(0, json.dumps({"interfaces": []})))
    runner.on(["nmstatectl", "apply"], command.Result(1, "", "NmstateError: InvalidArgument: Invalid VLAN ID 5000"))
    backend = nmstate.NmstatectlBackend(runner, host)
    with pytest.raises(errors.ConfigError, match="Invalid VLAN ID 5000") as caught:
        network.converge(backend, probe.FakeProber(), clock.FakeClock(), DESIRED)
    assert caught.value.exit_code == 65
    assert len([c for c in runner.commands() if c[1] == "apply"]) == 1


def test_missing_rights_are_the_hosts_fault_not_the_site_configs(host: fs.HostFS, runner: command.FakeRunner) -> None:
    runner.on(["nmstatectl", "apply"], command.Result(1, "", "NmstateError: PermissionError: Access denied"))
    with pytest.raises(errors.UnavailableError, match="PermissionError"):
        nmstate.NmstatectlBackend(runner, host).apply(DESIRED, commit=False, rollback_timeout=60)


@pytest.mark.parametrize(
    "printed",
    [
        # nmstate 2.x logs the checkpoint it created on stderr
        "[2024-05-01T10:00:00Z INFO  nmstate::nm::checkpoint] Created checkpoint "
        "/org/freedesktop/NetworkManager/Checkpoint/21\n",
        # nmstate 1.x / 0.3 print it as a plain line
        "Checkpoint: /org/freedesktop/NetworkManager/Checkpoint/21\n",
        "checkpoint '/org/freedesktop/NetworkManager/Checkpoint/21' created\n",
    ],
)
def test_checkpoints_in_each_printed_form(host: fs.HostFS, runner: command.FakeRunner, printed: str) -> None:
    runner.on(["nmstatectl", "apply"], command.Result(0, "---\n", printed))
    checkpoint = nmstate.NmstatectlBackend(runner, host).apply(DESIRED, commit=False, rollback_timeout=60)
    assert checkpoint == nmstate.Checkpoint("/org/freedesktop/NetworkManager/Checkpoint/21")


def test_nmstate_03_checkpoint_keeps_its_plugin_prefix(host: fs.HostFS, runner: command.FakeRunner) -> None:
    """nmstate 0.3's commit/rollback refuse a bare path: the `NetworkManager|` prefix it printed is kept."""
    logged = "2026-11-23 14:00:00,000 root DEBUG Checkpoint /org/freedesktop/NetworkManager/Checkpoint/3 created\n"
    printed = "Checkpoint: NetworkManager|/org/freedesktop/NetworkManager/Checkpoint/3\n"
    runner.on(["nmstatectl", "apply"], command.Result(0, printed, logged))
    runner.on(["nmstatectl", "commit"])
    backend = nmstate.NmstatectlBackend(runner, host)

    checkpoint = backend.apply(DESIRED, commit=False, rollback_timeout=60)
    backend.commit(checkpoint or nmstate.Checkpoint())

    assert checkpoint == nmstate.Checkpoint("NetworkManager|/org/freedesktop/NetworkManager/Checkpoint/3")
    assert runner.commands()[-1] == (
        "nmstatectl",
        "commit",
        "NetworkManager|/org/freedesktop/NetworkManager/Checkpoint/3",
    )


def test_checkpoint_in_an_unknown_form_is_rolled_back_and_refused(host: fs.HostFS, runner: command.FakeRunner) -> None:
    runner.on(["nmstatectl", "apply"], command.Result(0, "Checkpoint: 7f3a-somewhere-else\n", ""))
    runner.on(["nmstatectl", "rollback"])
    with pytest.raises(errors.UnavailableError, match="7f3a-somewhere-else"):
        nmstate.NmstatectlBackend(runner, host).apply(DESIRED, commit=False, rollback_timeout=60)
    assert runner.commands()[-1] == ("nmstatectl", "rollback")


def test_checkpoint_not_printed_is_asked_of_networkmanager(host: fs.HostFS, runner: command.FakeRunner) -> None:
    runner.on(["nmstatectl", "apply"], command.Result(0, "---\n", ""))
    runner.on(["busctl"], command.Result(0, 'ao 1 "/org/freedesktop/NetworkManager/Checkpoint/4"\n'))
    checkpoint = nmstate.NmstatectlBackend(runner, host).apply(DESIRED, commit=False, rollback_timeout=60)
    assert checkpoint == nmstate.Checkpoint("/org/freedesktop/NetworkManager/Checkpoint/4")


def test_no_nameable_checkpoint_is_rolled_back_and_refused(host: fs.HostFS, runner: command.FakeRunner) -> None:
    runner.on(["nmstatectl", "apply"], command.Result(0, "---\n", ""))
    runner.on(["busctl"], command.Result(0, "ao 0\n"))
    runner.on(["nmstatectl", "rollback"])
    with pytest.raises(errors.UnavailableError, match="printed no checkpoint"):
        nmstate.NmstatectlBackend(runner, host).apply(DESIRED, commit=False, rollback_timeout=60)
    assert runner.commands()[-1] == ("nmstatectl", "rollback")

"""The single choke point through which snoreloc runs any other program.

Everything the agent does to the host that is not a file write (systemctl, blkid, mount, nmstatectl, crictl,
podman, journalctl) is a process, and every process goes through a `Runner`. That gives one place that always sets
a timeout, never logs what is passed on stdin (it may be a secret), optionally enters the host's namespaces when
the agent itself runs in a container, and one seam the tests replace: `FakeRunner` answers scripted commands and
raises on anything it was not told about, and the test suite's guard makes `SubprocessRunner` refuse to spawn
unless a test opts in.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from snoreloc import errors, redact

LOG = logging.getLogger(__name__)

NSENTER_PREFIX: tuple[str, ...] = ("nsenter", "--target", "1", "--mount", "--uts", "--ipc", "--net", "--pid", "--")
CONTAINER_MARKERS: tuple[str, ...] = ("/run/.containerenv", "/.dockerenv")


@dataclass(frozen=True)
class Result:
    """What a finished process left behind."""

    returncode: int
    stdout: str = ""
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class CommandFailed(errors.SnorelocError):
    """A command exited non-zero where success was required; the message carries its (redacted) stderr."""

    def __init__(self, argv: Sequence[str], result: Result, *, hint: str | None = None) -> None:
        detail = (result.stderr or result.stdout).strip()
        tail = f": {redact.redact(detail[-2000:])}" if detail else ""
        super().__init__(f"`{render(argv)}` exited with status {result.returncode}{tail}", hint=hint)
        self.argv = tuple(argv)
        self.result = result


class CommandTimeout(errors.TemporaryError):
    """A command ran past its timeout and was killed."""

    def __init__(self, argv: Sequence[str], seconds: float) -> None:
        super().__init__(f"`{render(argv)}` did not finish within {seconds:g}s and was killed")
        self.argv = tuple(argv)


class CommandNotFound(errors.UnavailableError):
    """The program is not installed on this host (or not on PATH)."""


class Runner(Protocol):
    """Runs one command to completion; `check=True` turns a non-zero exit into `CommandFailed`."""

    def run(self, argv: Sequence[str], *, input: str | None = None, timeout: float, check: bool = True) -> Result: ...


def render(argv: Sequence[str]) -> str:
    """The command as a shell would show it, with secrets masked."""
    return redact.redact(shlex.join(argv))


def checked(argv: Sequence[str], result: Result, check: bool) -> Result:
    if check and not result.ok:
        raise CommandFailed(argv, result)
    return result


def in_container(markers: Sequence[str] = CONTAINER_MARKERS) -> bool:
    """True when this process runs inside a podman/docker container (commands must then enter the host)."""
    return any(os.path.exists(marker) for marker in markers)


def _execute(argv: Sequence[str], stdin: str | None, timeout: float, env: Mapping[str, str] | None) -> Result:
    """The only call to `subprocess` in snoreloc. The test guard replaces this function."""
    completed = subprocess.run(
        list(argv),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=dict(env) if env is not None else None,
    )
    return Result(completed.returncode, completed.stdout, completed.stderr)


class SubprocessRunner:
    """Runs real processes, with a timeout always, optionally inside PID 1's namespaces (`nsenter`)."""

    def __init__(self, *, enter_host: bool = False, env: Mapping[str, str] | None = None) -> None:
        self.enter_host = enter_host
        self.env = env

    def run(self, argv: Sequence[str], *, input: str | None = None, timeout: float, check: bool = True) -> Result:
        full = [*NSENTER_PREFIX, *argv] if self.enter_host else list(argv)
        LOG.debug("run: %s (timeout %gs%s)", render(full), timeout, ", with stdin" if input is not None else "")
        try:
            result = _execute(full, input, timeout, self.env)
        except subprocess.TimeoutExpired as exc:
            raise CommandTimeout(argv, timeout) from exc
        except FileNotFoundError as exc:
            raise CommandNotFound(f"`{full[0]}` is not installed on this host") from exc
        LOG.debug("exit %d: %s", result.returncode, render(argv))
        return checked(argv, result, check)


Responder = Callable[[Sequence[str], str | None], Result]


class UnexpectedCommand(AssertionError):
    """A test's FakeRunner was asked to run something it was not scripted for."""


@dataclass(frozen=True)
class Call:
    """One command a FakeRunner was asked to run."""

    argv: tuple[str, ...]
    input: str | None
    timeout: float


@dataclass
class _Rule:
    prefix: tuple[str, ...]
    answers: list[Result | Responder]
    repeat: bool


@dataclass
class FakeRunner:
    """Scripted commands for tests: the longest matching argv prefix answers (the latest of equals); others raise."""

    calls: list[Call] = field(default_factory=list)
    _rules: list[_Rule] = field(default_factory=list)

    def on(self, prefix: Sequence[str], *answers: Result | Responder, repeat: bool = True) -> FakeRunner:
        """Answer commands starting with `prefix` with `answers` in turn (the last one repeats unless told not)."""
        self._rules.append(_Rule(tuple(prefix), list(answers) or [Result(0)], repeat))
        return self

    def run(self, argv: Sequence[str], *, input: str | None = None, timeout: float, check: bool = True) -> Result:
        self.calls.append(Call(tuple(argv), input, timeout))
        answer = self._take(tuple(argv))
        result = answer if isinstance(answer, Result) else answer(argv, input)
        return checked(argv, result, check)

    def commands(self) -> list[tuple[str, ...]]:
        return [call.argv for call in self.calls]

    def ran(self, *prefix: str) -> bool:
        return any(call.argv[: len(prefix)] == prefix for call in self.calls)

    def _take(self, argv: tuple[str, ...]) -> Result | Responder:
        matching = [rule for rule in self._rules if argv[: len(rule.prefix)] == rule.prefix and rule.answers]
        if not matching:
            raise UnexpectedCommand(f"unexpected command: {shlex.join(argv)}")
        rule = max(reversed(matching), key=lambda candidate: len(candidate.prefix))  # ties: the latest rule wins
        if len(rule.answers) > 1 or not rule.repeat:
            return rule.answers.pop(0)
        return rule.answers[0]

"""NetworkManager through nmstate, with its checkpoint: apply without commit, then commit or roll back.

nmstate's transaction is what makes a remote network change safe: `apply(commit=False, rollback_timeout=N)` takes a
NetworkManager checkpoint first, and NetworkManager itself restores the checkpoint after N seconds unless someone
commits. Two backends speak it: libnmstate (the Python binding, in our container image) and the `nmstatectl` CLI
(on RHCOS hosts). `select_backend` takes the library when it imports, else the CLI when it answers.
"""

from __future__ import annotations

import importlib
import json
import logging
import re
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from snoreloc import errors, redact
from snoreloc.adapters import command, fs

LOG = logging.getLogger(__name__)

CHECKPOINT_PATTERN = re.compile(r"/org/freedesktop/NetworkManager/Checkpoint/\d+")
DESIRED_FILE = "/run/snoreloc/nmstate-desired.json"
CLI_TIMEOUT_MARGIN = 60.0
SHORT_TIMEOUT = 60.0


@dataclass(frozen=True)
class Checkpoint:
    """A NetworkManager checkpoint; an empty id means "the one pending" (nmstatectl's own default)."""

    id: str = ""


class ApplyFailed(errors.SnorelocError):
    """nmstate refused or failed to apply; `detail` is nmstate's own text, `retryable` says whether to try again."""

    def __init__(self, detail: str, *, retryable: bool) -> None:
        super().__init__(f"nmstate could not apply the network: {redact.redact(detail)}")
        self.detail = redact.redact(detail)
        self.retryable = retryable


class NmstateBackend(Protocol):
    """nmstate's transaction, whichever way we reach it."""

    def show(self) -> dict[str, Any]: ...

    def apply(self, desired: dict[str, Any], *, commit: bool, rollback_timeout: int) -> Checkpoint | None: ...

    def commit(self, checkpoint: Checkpoint) -> None: ...

    def rollback(self, checkpoint: Checkpoint) -> None: ...


_NOT_RETRYABLE = ("NmstateValueError", "NmstateNotSupportedError", "NmstateKernelIntegerRoundedError")


class LibnmstateBackend:
    """The libnmstate Python API (imported lazily: it is only in the container image)."""

    def __init__(self, library: ModuleType) -> None:
        self.lib = library

    def show(self) -> dict[str, Any]:
        return dict(self.lib.show())

    def apply(self, desired: dict[str, Any], *, commit: bool, rollback_timeout: int) -> Checkpoint | None:
        try:
            checkpoint = self.lib.apply(desired, verify_change=True, commit=commit, rollback_timeout=rollback_timeout)
        except Exception as exc:
            raise ApplyFailed(str(exc), retryable=type(exc).__name__ not in _NOT_RETRYABLE) from exc
        return None if commit else Checkpoint(str(checkpoint or ""))

    def commit(self, checkpoint: Checkpoint) -> None:
        self.lib.commit(checkpoint=checkpoint.id or None)

    def rollback(self, checkpoint: Checkpoint) -> None:
        self.lib.rollback(checkpoint=checkpoint.id or None)


class NmstatectlBackend:
    """The `nmstatectl` CLI through the command runner; the desired state goes through a 0600 file on the host."""

    def __init__(self, runner: command.Runner, host: fs.HostFS) -> None:
        self.runner = runner
        self.host = host

    def show(self) -> dict[str, Any]:
        shown = self.runner.run(["nmstatectl", "show", "--json"], timeout=SHORT_TIMEOUT)
        state: dict[str, Any] = json.loads(shown.stdout)
        return state

    def apply(self, desired: dict[str, Any], *, commit: bool, rollback_timeout: int) -> Checkpoint | None:
        self.host.write_text(DESIRED_FILE, json.dumps(desired, indent=2), mode=0o600)
        argv = ["nmstatectl", "apply"] + ([] if commit else ["--no-commit", "--timeout", str(rollback_timeout)])
        try:
            result = self.runner.run([*argv, DESIRED_FILE], timeout=rollback_timeout + CLI_TIMEOUT_MARGIN, check=False)
        finally:
            self.host.remove(DESIRED_FILE)
        if not result.ok:
            raise ApplyFailed((result.stderr or result.stdout).strip()[-4000:], retryable=True)
        return None if commit else parse_checkpoint(result.stdout + "\n" + result.stderr)

    def commit(self, checkpoint: Checkpoint) -> None:
        self.runner.run(["nmstatectl", "commit", *_id(checkpoint)], timeout=SHORT_TIMEOUT)

    def rollback(self, checkpoint: Checkpoint) -> None:
        self.runner.run(["nmstatectl", "rollback", *_id(checkpoint)], timeout=SHORT_TIMEOUT)


def _id(checkpoint: Checkpoint) -> list[str]:
    return [checkpoint.id] if checkpoint.id else []


def parse_checkpoint(output: str) -> Checkpoint:
    """The last checkpoint path nmstatectl printed (it logs the one it created); empty when none was printed."""
    found = CHECKPOINT_PATTERN.findall(output)
    return Checkpoint(found[-1] if found else "")


def select_backend(runner: command.Runner, host: fs.HostFS) -> NmstateBackend:
    """libnmstate if it imports, else nmstatectl if it runs; otherwise there is no way to change the network."""
    try:
        return LibnmstateBackend(importlib.import_module("libnmstate"))
    except ImportError:
        LOG.debug("libnmstate is not importable; trying nmstatectl")
    try:
        probe = runner.run(["nmstatectl", "--version"], timeout=SHORT_TIMEOUT, check=False)
    except errors.SnorelocError:
        probe = command.Result(127)
    if probe.ok:
        return NmstatectlBackend(runner, host)
    raise errors.UnavailableError(
        "neither libnmstate nor nmstatectl is available to configure the network",
        hint="Run snoreloc from its container image, or install nmstate on the host.",
    )

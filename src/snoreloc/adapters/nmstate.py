"""NetworkManager through nmstate, with its checkpoint: apply without commit, then commit or roll back.

nmstate's transaction is what makes a remote network change safe: `apply(commit=False, rollback_timeout=N)` takes a
NetworkManager checkpoint first, and NetworkManager itself restores the checkpoint after N seconds unless someone
commits. Two backends speak it: libnmstate (the Python binding, in our container image) and the `nmstatectl` CLI
(on RHCOS hosts). `select_backend` takes the library when it imports, else the CLI when it answers.

Whose fault a failure is decides what happens next. nmstate names its error kind: nmstate 2.x (RHCOS 4.12-4.16)
prints `NmstateError: <Kind>: <message>` (kinds from nmstate/nmstate rust/src/lib/error.rs; the prefix from
rust/src/cli/error.rs), nmstate 0.3/1.x raises `Nmstate<Kind>Error` classes. An invalid desired state is the
site-config's (not retried: exit 65), missing rights or dependencies are the host's (exit 69), anything else
(NetworkManager busy, a plugin failure, a verification race at first boot) is retried. nmstate 0.3/1.x pass
NetworkManager's own verdict on a profile through as a GLib error of the `nm-connection-error-quark` domain (for
example "Invalid IPv4 address prefix '33'"): that domain holds only NMConnectionError, the errors of verifying a
connection's settings (NetworkManager src/libnm-core-public/nm-errors.h), so it is an invalid desired state too.

The checkpoint `apply --no-commit` created is read from what nmstatectl printed, in the form its own `commit` and
`rollback` take back: nmstate 0.3/1.x print `Checkpoint: NetworkManager|/org/freedesktop/NetworkManager/Checkpoint/N`
(plugin and path, joined with `|`; libnmstate/nmstate.py `create_checkpoints`, and its `_parse_checkpoints` refuses
a bare path), nmstate 2.x logs the bare D-Bus path and takes it back as it is (nmstate/nmstate rust/src/lib/nm/
checkpoint.rs). A `Checkpoint:` line in any other form is refused. When nothing was printed, NetworkManager's own
`Checkpoints` property is asked. If that does not name exactly one, the pending change is rolled back and the run
refuses, rather than commit or roll back a checkpoint it cannot name.
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
_CHECKPOINT_LINE = re.compile(r"^Checkpoint: (\S*)\s*$", re.MULTILINE)
_PLUGIN_CHECKPOINTS = re.compile(r"[\w-]+\|[^|\s]+(?:\|[\w-]+\|[^|\s]+)*")  # nmstate 0.3/1.x: plugin|id[|plugin|id]
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


NM_CONNECTION_ERROR = "nm-connection-error-quark"
_INVALID_KINDS = frozenset(
    {
        "InvalidArgument",
        "NotImplementedError",
        "NotSupportedError",
        "KernelIntegerRoundedError",
        "PolicyError",
        "SrIovOperatorOverlap",
        "NmstateValueError",
        "NmstateNotSupportedError",
        "NmstateNotImplementedError",
        "NmstateKernelIntegerRoundedError",
        NM_CONNECTION_ERROR,
    }
)
_HOST_KINDS = frozenset({"PermissionError", "DependencyError", "NmstatePermissionError", "NmstateDependencyError"})
_KIND_2X = re.compile(r"NmstateError: (\w+):")
_KIND_1X = re.compile(r"\b(Nmstate\w*Error)\b")
_KIND_NM = re.compile(rf"\b({NM_CONNECTION_ERROR})\b")
NM_CHECKPOINTS = [
    "busctl",
    "get-property",
    "org.freedesktop.NetworkManager",
    "/org/freedesktop/NetworkManager",
    "org.freedesktop.NetworkManager",
    "Checkpoints",
]


def error_kind(text: str) -> str:
    """nmstate's error kind named in `text` (2.x `NmstateError: Kind:` first, then 1.x class names, then
    NetworkManager's connection-error domain); "" if none."""
    found = _KIND_2X.search(text) or _KIND_1X.search(text) or _KIND_NM.search(text)
    return found.group(1) if found else ""


def failure(kind: str, detail: str) -> errors.SnorelocError:
    """The error for an nmstate failure of `kind`: retryable ApplyFailed, invalid ApplyFailed, or the host's fault."""
    if kind in _HOST_KINDS:
        return errors.UnavailableError(
            f"nmstate cannot change the network on this host ({kind}): {redact.redact(detail)}",
            hint="Run snoreloc as root with access to NetworkManager's D-Bus socket (the unit does).",
        )
    return ApplyFailed(detail, retryable=kind not in _INVALID_KINDS)


def _library_kind(exc: Exception) -> str:
    """The kind of a libnmstate exception: its class when that is a known kind, else what its message names."""
    kind = type(exc).__name__
    if kind in _INVALID_KINDS or kind in _HOST_KINDS:
        return kind
    return error_kind(str(exc)) or kind


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
            raise failure(_library_kind(exc), f"{type(exc).__name__}: {exc}") from exc
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
            text = (result.stderr or result.stdout).strip()
            raise failure(error_kind(text), text[-4000:])
        if commit:
            return None
        try:
            printed = parse_checkpoint(result.stdout + "\n" + result.stderr)
        except errors.UnavailableError:
            self.runner.run(["nmstatectl", "rollback"], timeout=SHORT_TIMEOUT, check=False)
            raise
        return printed or self._pending_checkpoint()

    def _pending_checkpoint(self) -> Checkpoint:
        """NetworkManager's one checkpoint, when nmstatectl printed none; refuses (after a rollback) otherwise."""
        shown = self.runner.run(NM_CHECKPOINTS, timeout=SHORT_TIMEOUT, check=False)
        found = CHECKPOINT_PATTERN.findall(shown.stdout) if shown.ok else []
        if len(found) == 1:
            return Checkpoint(found[0])
        self.runner.run(["nmstatectl", "rollback"], timeout=SHORT_TIMEOUT, check=False)
        raise errors.UnavailableError(
            "nmstatectl applied the network but printed no checkpoint, and NetworkManager lists "
            f"{len(found) or 'no'} checkpoints; the change was rolled back",
            hint="Use an nmstate version that snoreloc supports (0.3, 1.x or 2.x; RHCOS ships 2.x).",
        )

    def commit(self, checkpoint: Checkpoint) -> None:
        self.runner.run(["nmstatectl", "commit", *_id(checkpoint)], timeout=SHORT_TIMEOUT)

    def rollback(self, checkpoint: Checkpoint) -> None:
        self.runner.run(["nmstatectl", "rollback", *_id(checkpoint)], timeout=SHORT_TIMEOUT)


def _id(checkpoint: Checkpoint) -> list[str]:
    return [checkpoint.id] if checkpoint.id else []


def parse_checkpoint(output: str) -> Checkpoint | None:
    """The checkpoint nmstatectl printed, as its commit/rollback take it; None when none was printed.

    A `Checkpoint: ID` line wins (0.3/1.x, ID either `plugin|path` pairs or a path); else the last D-Bus path logged
    (2.x). A `Checkpoint:` line of any other form raises UnavailableError: committing a guess could commit nothing.
    """
    lines = _CHECKPOINT_LINE.findall(output)
    if lines:
        printed = lines[-1]
        if CHECKPOINT_PATTERN.fullmatch(printed) or (
            _PLUGIN_CHECKPOINTS.fullmatch(printed) and CHECKPOINT_PATTERN.search(printed)
        ):
            return Checkpoint(printed)
        raise errors.UnavailableError(
            f"nmstatectl printed a checkpoint in a form snoreloc does not know ({printed!r}); it is rolled back",
            hint="Use an nmstate version that snoreloc supports (0.3, 1.x or 2.x; RHCOS ships 2.x).",
        )
    found = CHECKPOINT_PATTERN.findall(output)
    return Checkpoint(found[-1]) if found else None


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

"""One exception root for everything snoreloc reports to a person, with the exit code and the fix.

A technician at a far-edge site cannot read a traceback, so every failure we expect is one of these classes, and
each carries the process exit code (sysexits, as nmstatectl uses them) and a hint that says what to do next.
Anything else that escapes is a bug and exits 70.

The tree::

    SnorelocError                     exit 70   root; carries exit_code and hint
    ├── UsageError                    exit 64   the command line is wrong
    ├── ConfigError (ValueError)      exit 65   the site-config is wrong; carries every Problem found
    ├── UnavailableError              exit 69   something we need is not there (API, device, file)
    │   └── LockedError               exit 69   another snoreloc run holds the lock
    ├── InternalError                 exit 70   a bug in snoreloc: please report it
    ├── TemporaryError                exit 75   try again: the cluster or the network was not ready
    │   └── WaitTimeout               exit 75   a bounded wait ran out; names the step and what it waited for
    ├── PermanentStepError            exit 70   a step failed in a way a re-run will not fix without a change
    └── PermissionDenied              exit 77   we lack the rights to read or change something

Whose fault, in the nmstate manner: ConfigError is the site-config author's, UsageError the caller's,
TemporaryError the environment's (re-run), InternalError ours.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass


class ExitCode(enum.IntEnum):
    """Process exit codes, shared by every command and listed in `snoreloc --help`."""

    OK = 0
    DONE_WITH_WARNINGS = 2
    USAGE = 64
    BAD_CONFIG = 65
    UNAVAILABLE = 69
    INTERNAL = 70
    TEMPORARY = 75
    NO_PERMISSION = 77


EXIT_CODE_HELP: tuple[tuple[ExitCode, str], ...] = (
    (ExitCode.OK, "success"),
    (ExitCode.DONE_WITH_WARNINGS, "done, with warnings (see `snoreloc status --long`)"),
    (ExitCode.USAGE, "the command line is wrong"),
    (ExitCode.BAD_CONFIG, "the site-config is invalid; the error says what a run had changed"),
    (ExitCode.UNAVAILABLE, "something needed is unavailable, or another run holds the lock"),
    (ExitCode.INTERNAL, "a bug or a permanent step failure; run `snoreloc collect-logs`"),
    (ExitCode.TEMPORARY, "a temporary failure or a wait ran out; re-run to resume"),
    (ExitCode.NO_PERMISSION, "permission denied"),
)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input, located in the user's file."""

    path: str
    message: str
    line: int | None = None
    column: int | None = None
    severity: str = "error"

    def render(self) -> str:
        where = ""
        if self.line is not None:
            where = f" (line {self.line}" + (f", column {self.column})" if self.column is not None else ")")
        return f"{self.path or '<document>'}: {self.message}{where}"


class SnorelocError(Exception):
    """Root of every error snoreloc reports; subclasses set the exit code."""

    exit_code: ExitCode = ExitCode.INTERNAL
    default_hint = "Run `snoreloc collect-logs` and report the problem."

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint

    def extend(self, text: str) -> None:
        """Add a sentence to the message (the run's account of what it changed, added where the error is judged)."""
        end = "" if self.message.rstrip().endswith((".", "!", "?", ")")) else "."
        self.message = f"{self.message.rstrip()}{end} {text}"
        self.args = (self.message,)


class UsageError(SnorelocError):
    """The command line is wrong: fix the arguments (see `snoreloc --help`)."""

    exit_code = ExitCode.USAGE
    default_hint = "See `snoreloc --help`."


class ConfigError(SnorelocError, ValueError):
    """The site-config is wrong: its author must amend it. Validation refuses before any change; a refusal later in a
    run (an extra manifest the cluster will not take) says what the run had changed (`engine.journal.what_changed`)."""

    exit_code = ExitCode.BAD_CONFIG
    default_hint = "Fix the site-config and run again; `snoreloc validate --annotate FILE` marks each line."

    def __init__(self, message: str, *, problems: Sequence[Problem] = (), hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.problems: tuple[Problem, ...] = tuple(problems)


class UnavailableError(SnorelocError):
    """Something snoreloc needs is not there: a device, a file, the API."""

    exit_code = ExitCode.UNAVAILABLE
    default_hint = "Check that the resource is present and reachable, then run again."


class LockedError(UnavailableError):
    """Another snoreloc run holds the lock: wait for it to finish."""

    default_hint = "Another snoreloc run is in progress; watch it with `snoreloc status --wait`."


class InternalError(SnorelocError):
    """A bug in snoreloc."""


class TemporaryError(SnorelocError):
    """The environment was not ready; running again resumes where this run stopped."""

    exit_code = ExitCode.TEMPORARY
    default_hint = "Run `snoreloc run` again: it resumes where it stopped."

    def __init__(self, message: str, *, hint: str | None = None, delay: float = 0.0) -> None:
        super().__init__(message, hint=hint)
        self.delay = delay


class WaitTimeout(TemporaryError):
    """A bounded wait ran out. The message names the step and what it waited for."""

    def __init__(self, step: str, waited_for: str, seconds: float, *, hint: str | None = None) -> None:
        super().__init__(f"{step}: timed out after {seconds:.0f}s waiting for {waited_for}", hint=hint)
        self.step = step
        self.waited_for = waited_for
        self.seconds = seconds


class PermanentStepError(SnorelocError):
    """A step failed in a way that re-running alone will not fix."""


class PermissionDenied(SnorelocError):
    """snoreloc lacks the rights it needs: run it as root, or fix the file's permissions."""

    exit_code = ExitCode.NO_PERMISSION
    default_hint = "Run snoreloc as root, or check the ownership and mode of the file."

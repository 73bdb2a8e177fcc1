"""Logging set-up for every command: redaction always on, a format that suits where the output goes.

On a terminal people get short human lines; under systemd each line starts with a `<N>` priority prefix so that
journald records its level (SyslogLevelPrefix=). The redaction filter sits on the handler, so no module can log
a secret by accident, whichever logger it uses. At the default verbosity people see warnings and errors, and the
`snoreloc.progress` lines (what a wait waits for, for how long, of what budget): a twenty-minute wait must not be
silent on the console or in the journal.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from snoreloc import errors, redact, sanitize

PROGRESS_LOGGER = "snoreloc.progress"  # `snoreloc.waits.PROGRESS`; named here, since logs sits below waits

_SYSLOG_PRIORITY = {
    logging.CRITICAL: 2,
    logging.ERROR: 3,
    logging.WARNING: 4,
    logging.INFO: 6,
    logging.DEBUG: 7,
}


class RedactingFilter(logging.Filter):
    """Renders the record's message once, masks secrets in it and in any traceback, shows its control characters
    as escapes (a name from the cluster may carry a terminal escape; the journal and the log file are read on a
    terminal), and freezes the result."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = sanitize.visible(redact.redact(record.getMessage()))
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact.redact(record.exc_text)
        return True


class LevelOrProgress(logging.Filter):
    """Passes records at `level` and above, and the progress logger's at INFO and above."""

    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= self.level:
            return True
        return record.levelno >= logging.INFO and record.name.startswith(PROGRESS_LOGGER)


class JournalFormatter(logging.Formatter):
    """`<priority>logger: message`, the form journald turns into a prioritised entry."""

    def format(self, record: logging.LogRecord) -> str:
        priority = _SYSLOG_PRIORITY.get(record.levelno, 6)
        return f"<{priority}>{super().format(record)}"


def under_systemd() -> bool:
    return bool(os.environ.get("INVOCATION_ID") or os.environ.get("JOURNAL_STREAM"))


class CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler that writes to whatever `sys.stderr` is when a record comes (as the logging module's own
    last-resort handler does), not to the stream it was made with. `cli.main` wraps stderr for the length of one
    verb and puts it back after; a handler holding the wrapper would, once that stream is closed (a test's
    captured stderr), fail every later record with "Logging error: I/O operation on closed file" (issue 35)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        """Ignored: the stream is always the current stderr."""


def make_handler(stream: TextIO | None = None) -> logging.Handler:
    """A redacting handler for `stream`, or for the current stderr at each record when `stream` is None."""
    handler = CurrentStderr() if stream is None else logging.StreamHandler(stream)
    stream = stream or sys.stderr
    handler.addFilter(RedactingFilter())
    if under_systemd():
        handler.setFormatter(JournalFormatter("%(name)s: %(message)s"))
    elif stream.isatty():
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(message)s", "%H:%M:%S"))
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    return handler


def setup(verbosity: int = 0, stream: TextIO | None = None) -> None:
    """Configure the `snoreloc` logger tree; 0 = warnings and progress, 1 = info, 2+ = debug."""
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    root = logging.getLogger("snoreloc")
    for old in list(root.handlers):
        root.removeHandler(old)
    handler = make_handler(stream)
    handler.addFilter(LevelOrProgress(level))
    root.addHandler(handler)
    root.setLevel(level)
    root.propagate = False
    logging.getLogger(PROGRESS_LOGGER).setLevel(min(level, logging.INFO))


def _open_private(path: Path) -> TextIO:
    """`path` opened for appending, created 0600, refused when it is a symlink or not a regular file we own."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)
        raise errors.PermissionDenied(f"refusing the log file {path}: not a regular file of ours")
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "a", encoding="utf-8")


@contextlib.contextmanager
def file_log(path: Path) -> Iterator[None]:
    """Log at debug level to `path` for the duration of the block, still redacted. The file is 0600 (debug detail
    stays root's) and opened without following a symlink, so a planted link cannot aim our writes elsewhere."""
    try:
        stream = _open_private(path)
    except OSError as exc:
        raise errors.PermissionDenied(f"refusing the log file {path}: {exc.strerror}") from None
    root = logging.getLogger("snoreloc")
    level = root.level
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.DEBUG)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        handler.close()
        stream.close()

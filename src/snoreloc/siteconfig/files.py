"""Files a site-config refers to (certificates, keys, pull secret, network state), read safely.

The site-config arrives on a USB stick or an ISO that anyone could have prepared, and the agent runs as root. So a
reference may only name a regular file inside the site-config's own directory: no absolute paths, no `..`, no
symlink that resolves outside, no device or FIFO (opened non-blocking, checked with fstat), at most 1 MiB.
"""

from __future__ import annotations

import errno
import json
import os
import pathlib
import stat
from dataclasses import dataclass, field

MAX_FILE_BYTES = 1024 * 1024
_LOOSE_BITS = stat.S_IRGRP | stat.S_IROTH | stat.S_IWGRP | stat.S_IWOTH


class RefError(Exception):
    """A file reference cannot be used; the message says why (and never contains the file's content)."""


@dataclass(frozen=True)
class FileData:
    """The bytes of a referenced file and its permission bits."""

    content: bytes = field(repr=False)
    mode: int


def _check_shape(ref: str) -> pathlib.PurePosixPath:
    if not ref or "\x00" in ref:
        raise RefError("the file name is empty or contains a NUL byte")
    path = pathlib.PurePosixPath(ref)
    if path.is_absolute():
        raise RefError(f"'{ref}' is absolute; give a path relative to the site-config's directory")
    if ".." in path.parts:
        raise RefError(f"'{ref}' contains '..'; referenced files must be inside the site-config's directory")
    return path


def resolve(base_dir: str, ref: str) -> str:
    """The real path of `ref` under `base_dir`, after proving it stays inside (symlinks resolved)."""
    relative = _check_shape(ref)
    base = os.path.realpath(base_dir)
    real = os.path.realpath(os.path.join(base, *relative.parts))
    if os.path.commonpath([base, real]) != base:
        raise RefError(f"'{ref}' resolves outside the site-config's directory (a symlink?)")
    return real


def _open(real: str, ref: str) -> int:
    try:
        return os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise RefError(f"'{ref}' does not exist") from None
    except PermissionError:
        raise RefError(f"'{ref}' cannot be read: permission denied") from None
    except OSError as exc:
        raise RefError(f"'{ref}' cannot be opened: {exc.strerror}") from None


def _read_all(fd: int, ref: str) -> bytes:
    try:
        return _read_up_to(fd, MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise RefError(f"'{ref}' cannot be read: {exc.strerror}") from None


def _read_regular(fd: int, ref: str) -> FileData:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise RefError(f"'{ref}' is not a regular file")
    if info.st_size > MAX_FILE_BYTES:
        raise RefError(f"'{ref}' is larger than {MAX_FILE_BYTES // 1024} KiB")
    content = _read_all(fd, ref)
    if len(content) > MAX_FILE_BYTES:
        raise RefError(f"'{ref}' is larger than {MAX_FILE_BYTES // 1024} KiB")
    return FileData(content, stat.S_IMODE(info.st_mode))


def read(base_dir: str, ref: str) -> FileData:
    """Read the file `ref` names, relative to `base_dir`; raises RefError saying what is wrong with it."""
    fd = _open(resolve(base_dir, ref), ref)
    try:
        return _read_regular(fd, ref)
    finally:
        os.close(fd)


def json_problem(exc: ValueError | RecursionError) -> str:
    """What `json.loads` refused, in words for the person who wrote the file (never quoting it).

    Besides syntax errors, the parser raises RecursionError on arrays nested thousands deep and ValueError on an
    integer of more than 4,300 digits (CPython's limit on converting text to int).
    """
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return "a number is too long"


def read_top(path: str, limit: int) -> bytes:
    """The site-config file itself: opened non-blocking and refused unless regular, so a FIFO, device or socket
    given as the site-config fails at once instead of hanging; at most `limit` + 1 bytes (the caller judges size).

    Raises OSError, with a strerror that says what is wrong.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, device or socket?)")
        return _read_up_to(fd, limit + 1)
    finally:
        os.close(fd)


def _read_up_to(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while total < size:
        chunk = os.read(fd, size - total)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def too_open(mode: int) -> bool:
    """Whether group or others may read or write the file (a warning for files that hold secrets)."""
    return bool(mode & _LOOSE_BITS)

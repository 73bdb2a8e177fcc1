"""Files a site-config refers to (certificates, keys, pull secret, network state), read safely.

The site-config arrives on a USB stick or an ISO that anyone could have prepared, and the agent runs as root. So a
reference may only name a regular file inside the site-config's own directory: no absolute paths, no `..`, no
symlink that resolves outside, no device or FIFO (`snoreloc.safefile.read`: judged before opening, opened
non-blocking, checked again with fstat), at most 1 MiB.
"""

from __future__ import annotations

import errno
import json
import os
import pathlib
import stat
from dataclasses import dataclass, field

from snoreloc import safefile

MAX_FILE_BYTES = safefile.SITE_FILE.limit
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


def read(base_dir: str, ref: str) -> FileData:
    """Read the file `ref` names, relative to `base_dir`; raises RefError saying what is wrong with it."""
    real = resolve(base_dir, ref)
    try:
        content = safefile.read(real, safefile.SITE_FILE)
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        raise RefError(f"'{ref}' does not exist") from None
    except PermissionError:
        raise RefError(f"'{ref}' cannot be read: permission denied") from None
    except OSError as exc:
        raise RefError(f"'{ref}' cannot be read: {exc.strerror}") from None
    except safefile.Unfit as exc:
        raise RefError(f"'{ref}': {exc}") from None
    return FileData(content, stat.S_IMODE(mode))


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
    """The site-config file itself (`safefile.read_head`): a FIFO, device or socket given as the site-config fails
    at once instead of hanging; at most `limit` + 1 bytes (the caller judges size).

    Raises OSError, with a strerror that says what is wrong.
    """
    try:
        return safefile.read_head(path, limit + 1, follow=True)
    except safefile.Unfit as exc:
        raise OSError(errno.EINVAL, str(exc).removeprefix("it ")) from None


def too_open(mode: int) -> bool:
    """Whether group or others may read or write the file (a warning for files that hold secrets)."""
    return bool(mode & _LOOSE_BITS)

"""The one way snoreloc writes a file and the one way it reads back a file a person or a past run controls.

The agent runs as root, and several verbs write where a person points them (`--output`, `--svg`, `--iso`) or read
what a person or an earlier run left (the state directory, a kubeconfig, a CA file). Root writing through a
planted symlink, over its own input, or into a directory anyone may write, and root reading a FIFO (which hangs),
a link to `/dev/zero` (which never ends) or a 100 GiB log, are the classes of defect this module closes, once:

* `write` / `open_atomic`: the final component is never followed (a symlink, a directory, a FIFO or a device at the
  path is refused); the file is never the same inode as one of the verb's inputs (`inputs=`); it is created with
  `mode` (0600 unless the caller passes a mode the docs name) before any byte is written; it appears atomically
  (a temporary file in the same directory, fsync, rename, fsync of the directory); and a directory group or others
  may write is refused, unless the caller says why (`shared_dir=`, a path the person named) and it is sticky (like
  /tmp) or it is the caller's own directory that only its group may also write (a CI workspace made with umask 002).
* `read`: regular files only, judged by `lstat` (or `stat` when the caller follows links, e.g. a kubeconfig) before
  opening, opened non-blocking and checked again with `fstat` (the same inode, still regular); a size limit per
  `Kind` with a clear message.

Refusals of a write are `errors.PermissionDenied` (exit 77) or `errors.UsageError` (exit 64, the output is one of
the inputs); a read that is not fit raises `Unfit` (a ValueError saying why), which each caller words for its verb.
The rules are listed in docs/reliability.md ("Files").
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from snoreloc import errors

__all__ = [
    "BACKUP",
    "CA_BUNDLE",
    "CREDENTIAL",
    "HOST_FILE",
    "IMAGE",
    "KUBECONFIG",
    "LOG",
    "NAMED_OUTPUT",
    "NOTE",
    "SITE_FILE",
    "STATE",
    "TABLE",
    "Kind",
    "Unfit",
    "check",
    "check_directory",
    "create",
    "open_atomic",
    "read",
    "read_head",
    "read_tail",
    "read_text",
    "write",
]

_MIB = 1024 * 1024
_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH
# The reason a verb may write a path a person named on its command line into a sticky directory others may write
# (/tmp): the person chose it; the file is created 0600 under a fresh name and renamed, and in a sticky directory
# nobody else may rename or remove it.
NAMED_OUTPUT = "the person running the command named this path"
_PRIVATE_HINT = "Write to a directory only you can write (e.g. your home directory), or remove what is at the path."


@dataclass(frozen=True)
class Kind:
    """A kind of file read back, and the most bytes a file of that kind may have (with why, for the message)."""

    name: str
    limit: int


# Each limit is far above the largest file of its kind measured (docs/reliability.md, "Files").
STATE = Kind("state file", 64 * _MIB)  # status.json of the largest run measured is under 1 MiB
BACKUP = Kind("backup", 64 * _MIB)  # the saved originals of one run; the largest is the route table
TABLE = Kind("step table", 64 * _MIB)  # 20,000 routes are about 6 MiB of JSON lines
# The bundle sends at most the last 4 MiB of snoreloc.log: every byte is redacted, at 1.4-2.4 s per MiB on the
# loaded 2-core machine (measured), so a larger tail would stall `collect-logs` (docs/reliability.md).
LOG = Kind("log", 4 * _MIB)
KUBECONFIG = Kind("kubeconfig", 16 * _MIB)  # a kubeconfig with its embedded CAs is tens of KiB
CREDENTIAL = Kind("credential file", _MIB)  # a client certificate or key a kubeconfig names (a few KiB)
CA_BUNDLE = Kind("CA bundle", 4 * _MIB)  # a distribution's whole trust store is about 250 KiB
SITE_FILE = Kind("site-config file", _MIB)  # the site-config and each file it references (site-config.md)
HOST_FILE = Kind("host file", 16 * _MIB)  # node configuration files the agent reads (/etc, the seal marker)
NOTE = Kind("note", 64 * 1024)  # one-line notes in the state directory (the page's address)
IMAGE = Kind("media image", 1024 * _MIB)  # an ISO or FAT image of a site-config (at most a few MiB of files)


class Unfit(ValueError):
    """The file is not fit to read: the message says why ("is a FIFO", "is 3 GiB, more than ...")."""


# --- reading --------------------------------------------------------------------------------------------------------


def _what(mode: int) -> str:
    for test, name in (
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _size(count: int) -> str:
    return f"{count / _MIB:.1f} MiB" if count >= _MIB else f"{count} bytes"


def _judge(info: os.stat_result, kind: Kind | None) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise Unfit(f"it is {_what(info.st_mode)}, not a regular file")
    if kind is not None and info.st_size > kind.limit:
        raise Unfit(f"it is {_size(info.st_size)}, more than the {_size(kind.limit)} a {kind.name} may have")


class _Replaced(Unfit):
    """The path named another file between the check and the open: a writer's atomic rename (our own journal, read
    by the page while the run writes it) or a swap; the next attempt judges the new file."""


# Attempts to open a file that keeps being replaced between the check and the open: an atomic writer replaces a
# file in one rename, so a second attempt normally sees a settled file; a path swapped on every attempt is refused.
_OPEN_ATTEMPTS = 5


def _open_checked(path: Path, kind: Kind | None, follow: bool) -> int:
    """An fd of `path` after proving, before and after opening, that it is a regular file (within `kind`'s limit
    when one is given); a file replaced while being opened is judged again, a few times at most."""
    for _attempt in range(_OPEN_ATTEMPTS - 1):
        try:
            return _open_once(path, kind, follow)
        except _Replaced:
            continue
    return _open_once(path, kind, follow)


def _open_once(path: Path, kind: Kind | None, follow: bool) -> int:
    before = os.stat(path) if follow else os.lstat(path)  # FileNotFoundError passes through to the caller
    _judge(before, kind)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise Unfit(f"it cannot be opened ({exc.strerror})") from None
    try:
        after = os.fstat(fd)
        if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
            raise _Replaced("it was replaced while being opened")
        _judge(after, kind)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_up_to(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    try:
        while total < size:
            chunk = os.read(fd, size - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise Unfit(f"it cannot be read ({exc.strerror})") from None
    return b"".join(chunks)


def read(path: str | os.PathLike[str], kind: Kind, *, follow: bool = False) -> bytes:
    """The bytes of a regular file of at most `kind.limit` bytes. A symlink is refused unless `follow` (then its
    target is judged). Raises FileNotFoundError when it is missing, `Unfit` when it is not fit to read."""
    fd = _open_checked(Path(path), kind, follow)
    try:
        data = _read_up_to(fd, kind.limit + 1)
    finally:
        os.close(fd)
    if len(data) > kind.limit:
        raise Unfit(f"it grew past the {_size(kind.limit)} a {kind.name} may have while being read")
    return data


def read_head(path: str | os.PathLike[str], size: int, *, follow: bool = False) -> bytes:
    """At most the first `size` bytes of a regular file of any size, judged as by `read` (for a caller that words
    its own size limit: the site-config loader reads one byte past its limit and says so with the line)."""
    fd = _open_checked(Path(path), None, follow)
    try:
        return _read_up_to(fd, size)
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike[str], kind: Kind, *, follow: bool = False) -> str:
    """`read`, decoded as UTF-8 (undecodable bytes replaced: a log line is still worth reading)."""
    return read(path, kind, follow=follow).decode("utf-8", "replace")


def read_tail(path: str | os.PathLike[str], kind: Kind) -> tuple[bytes, int]:
    """The last `kind.limit` bytes of a regular file however large, and how many bytes were left out before them
    (for logs that are worth sending even when huge). Symlinks and special files are refused as by `read`."""
    fd = _open_checked(Path(path), None, follow=False)
    try:
        skipped = max(os.fstat(fd).st_size - kind.limit, 0)
        os.lseek(fd, skipped, os.SEEK_SET)
        return _read_up_to(fd, kind.limit), skipped
    finally:
        os.close(fd)


# --- writing --------------------------------------------------------------------------------------------------------


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _check_target(path: Path, inputs: Iterable[str | os.PathLike[str]]) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode):
        raise errors.PermissionDenied(
            f"refusing to write {path}: it is {_what(info.st_mode)} (snoreloc never writes through one)",
            hint=_PRIVATE_HINT,
        )
    mine = (info.st_dev, info.st_ino)
    for source in inputs:
        if _identity(Path(source)) == mine:
            raise errors.UsageError(
                f"refusing to write {path}: it is the same file as the input {source}",
                hint="Give an output path that is not one of the command's inputs.",
            )


def _check_directory(directory: Path, shared_dir: str | None) -> None:
    try:
        info = os.stat(directory)
    except FileNotFoundError:
        raise errors.UsageError(f"cannot write into {directory}: no such directory") from None
    if not stat.S_ISDIR(info.st_mode):
        raise errors.UsageError(f"cannot write into {directory}: it is not a directory")
    if not info.st_mode & _WRITABLE_BY_OTHERS:
        return
    sticky = bool(info.st_mode & stat.S_ISVTX)
    if sticky and shared_dir:
        return  # the caller said why (docs/reliability.md): in a sticky directory nobody else can replace our file
    if shared_dir and _group_workspace(info):
        return  # a CI workspace (umask 002): the caller's own directory, which only its group may also write
    mode = f"{stat.S_IMODE(info.st_mode):04o}"
    raise errors.PermissionDenied(
        f"refusing to write into {directory}: group or others may write it (mode {mode})"
        + (", and it is not sticky" if not sticky else ""),
        hint=_PRIVATE_HINT,
    )


def _group_workspace(info: os.stat_result) -> bool:
    """A directory the caller owns that its group may write but others may not (a CI runner's workspace, made with
    umask 002): a path the person named is written there (docs/reliability.md, "Reliability IV"). The group could
    replace the file afterwards, as it could any file of that workspace; it cannot make us write through a link
    (the file is created under a fresh name, O_EXCL, and renamed over whatever is at the path)."""
    return not info.st_mode & stat.S_IWOTH and info.st_uid == os.geteuid()


def check_directory(directory: str | os.PathLike[str], *, shared_dir: str | None = None) -> None:
    """Refuse a directory `open_atomic` would refuse to write into (for a verb that writes a directory of files the
    person named, e.g. `fleet render --out`: that directory and its parent are both judged)."""
    _check_directory(Path(directory), shared_dir)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check(
    path: str | os.PathLike[str], *, inputs: Iterable[str | os.PathLike[str]] = (), shared_dir: str | None = None
) -> None:
    """Refuse now, before a verb does any work, what `open_atomic` would refuse at the end (it checks again)."""
    target = Path(path)
    _check_directory(target.parent, shared_dir)
    _check_target(target, tuple(inputs))


@contextlib.contextmanager
def open_atomic(
    path: str | os.PathLike[str],
    *,
    mode: int = 0o600,
    inputs: Iterable[str | os.PathLike[str]] = (),
    shared_dir: str | None = None,
    make_parents: bool = False,
    sync: bool = True,
) -> Iterator[BinaryIO]:
    """A binary handle whose bytes become `path` when the block ends without an exception (else nothing changes).

    `inputs` are the files the verb read: `path` may not be one of them (by device and inode, so a hard link or a
    second name is caught). `shared_dir` is the documented reason a sticky directory others may write (like /tmp)
    is acceptable; without one such a directory is refused. `make_parents` creates missing parents with mode 0700.
    `sync=False` skips both fsyncs, for a file in a private directory the caller made and renames whole afterwards
    (`fleet render` writes 80,000 files for 10,000 sites: 1.4 ms of fsync each, measured, would add two minutes).
    """
    import tempfile  # noqa: PLC0415 (lazy: `--version` and `--help` write nothing, and tempfile costs ~4 ms)

    target = Path(path)
    inputs = tuple(inputs)
    if make_parents:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _check_directory(target.parent, shared_dir)
    _check_target(target, inputs)
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            if sync:
                os.fsync(handle.fileno())
        _check_target(target, inputs)  # what sits at the path now (a link planted meanwhile is replaced, not followed)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    if sync:
        _fsync_dir(target.parent)


def create(path: str | os.PathLike[str], data: bytes | str, *, mode: int = 0o600) -> None:
    """Create `path`, which must not exist, with `data` (text is UTF-8) and `mode` from its first byte: for a file
    in a private directory the caller has just made (`mkdtemp`) and renames whole afterwards, where the temporary
    file, the rename and the fsyncs of `open_atomic` buy nothing (`fleet render` writes 80,000 such files for
    10,000 sites). Anything already at the path, a link included, is refused (exit 77), never followed."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, mode)
    except FileExistsError:
        raise errors.PermissionDenied(f"refusing to create {path}: something is already there") from None
    try:
        os.fchmod(fd, mode)  # the umask may have taken bits `mode` asks for
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        Path(path).unlink(missing_ok=True)
        raise
    os.close(fd)


def write(
    path: str | os.PathLike[str],
    data: bytes | str,
    *,
    mode: int = 0o600,
    inputs: Iterable[str | os.PathLike[str]] = (),
    shared_dir: str | None = None,
    make_parents: bool = False,
    sync: bool = True,
) -> None:
    """Replace `path` with `data` (text is UTF-8) by the rules of `open_atomic`."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with open_atomic(
        path, mode=mode, inputs=inputs, shared_dir=shared_dir, make_parents=make_parents, sync=sync
    ) as handle:
        handle.write(payload)

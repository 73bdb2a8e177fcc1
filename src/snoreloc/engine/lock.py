"""One run at a time per state directory: an flock on `<state dir>/lock`. A second run is refused at once (exit 69),
never queued. The lock sits with the state it guards, so runs against two clusters with two state directories
(`--state-dir`) proceed side by side, and `--root` moves it with everything else.

The kernel drops an flock when its holder dies, so a `kill -9` leaves no stale lock behind.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path
from types import TracebackType

from snoreloc import errors


def _open_lock(path: Path, flags: int) -> int:
    """Open the lock file without following a symlink: a planted link must not get its target truncated."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            raise
        raise errors.PermissionDenied(f"refusing the lock file {path}: it is a symlink or not a regular file") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise errors.PermissionDenied(f"refusing the lock file {path}: it is not a regular file")
    return fd


class RunLock:
    """Context manager holding an exclusive, non-blocking flock; the holder's pid is written into the file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = _open_lock(self.path, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise errors.LockedError(
                f"another snoreloc run (pid {holder}) is in progress; not starting a second one"
            ) from exc
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.release()


def held(path: Path) -> bool:
    """Whether some process holds the lock now (for `status`: a "running" journal with a free lock was cut off)."""
    if not path.exists():
        return False
    fd = _open_lock(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False

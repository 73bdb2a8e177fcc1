"""The host's filesystem, seen through a root prefix.

The agent touches host files from three places: the host itself (root `/`), a container with the host mounted at
`/host`, and tests with a temporary directory. Every host path therefore goes through `HostFS`, which joins it to
the root and refuses paths that climb out of it. Writes are atomic (temporary file, fsync, rename, fsync of the
directory) so a power cut never leaves a half-written file, and they take an explicit mode so key files are 0600
from the first byte.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import tempfile

from snoreloc import errors


class HostFS:
    """Host paths (absolute like `/etc/x` or relative like `etc/x`) resolved under `root`."""

    def __init__(self, root: str | os.PathLike[str] = "/") -> None:
        self.root = pathlib.Path(root)

    def path(self, host_path: str) -> pathlib.Path:
        parts = pathlib.PurePosixPath(host_path.lstrip("/")).parts
        if ".." in parts:
            raise errors.InternalError(f"host path {host_path!r} climbs out of the root")
        return self.root.joinpath(*parts)

    def host_path(self, local: pathlib.Path) -> str:
        """The inverse of `path`: the absolute path on the host of a file under the root."""
        relative = local.relative_to(self.root).as_posix()
        return "/" if relative == "." else f"/{relative}"

    def exists(self, host_path: str) -> bool:
        return self.path(host_path).exists()

    def is_dir(self, host_path: str) -> bool:
        return self.path(host_path).is_dir()

    def read_bytes(self, host_path: str) -> bytes:
        return self.path(host_path).read_bytes()

    def read_text(self, host_path: str) -> str:
        return self.path(host_path).read_text(encoding="utf-8")

    def mode(self, host_path: str) -> int:
        return self.path(host_path).stat().st_mode & 0o7777

    def listdir(self, host_path: str) -> list[str]:
        return sorted(os.listdir(self.path(host_path)))

    def mkdir(self, host_path: str, mode: int = 0o755) -> pathlib.Path:
        """Create the directory (and missing parents); the leaf gets exactly `mode`."""
        target = self.path(host_path)
        target.mkdir(parents=True, exist_ok=True, mode=mode)
        os.chmod(target, mode)
        return target

    def chmod(self, host_path: str, mode: int) -> None:
        os.chmod(self.path(host_path), mode)

    def remove(self, host_path: str, *, missing_ok: bool = True) -> None:
        self.path(host_path).unlink(missing_ok=missing_ok)

    def remove_tree(self, host_path: str) -> None:
        """Remove a directory and everything in it; nothing happens when it is absent."""
        shutil.rmtree(self.path(host_path), ignore_errors=True)

    def write_text(self, host_path: str, text: str, mode: int = 0o644) -> None:
        self.write_bytes(host_path, text.encode("utf-8"), mode)

    def write_bytes(self, host_path: str, data: bytes, mode: int = 0o644) -> None:
        """Atomically replace the file with `data`; it has `mode` before any byte is written."""
        target = self.path(host_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        try:
            os.fchmod(fd, mode)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, target)
        except BaseException:
            pathlib.Path(temp).unlink(missing_ok=True)
            raise
        _fsync_dir(target.parent)


def _fsync_dir(directory: pathlib.Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

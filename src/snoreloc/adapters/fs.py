"""The host's filesystem, seen through a root prefix.

The agent touches host files from three places: the host itself (root `/`), a container with the host mounted at
`/host`, and tests with a temporary directory. Every host path therefore goes through `HostFS`, which joins it to
the root and refuses paths that climb out of it. Writes go through `snoreloc.safefile`: atomic (temporary file,
fsync, rename, fsync of the directory) so a power cut never leaves a half-written file, never through a symlink,
and 0600 from the first byte unless the caller names a mode (the console banner and the seal marker are public,
0644). Reads go through `safefile.read` too: a node file that is a FIFO, a device or larger than 16 MiB is refused
(symlinks are followed: kubelet's current certificate is one).
"""

from __future__ import annotations

import os
import pathlib
import shutil

from snoreloc import errors, safefile


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
        """The file's bytes; FileNotFoundError when missing, UnavailableError (69) when not a fit regular file."""
        try:
            return safefile.read(self.path(host_path), safefile.HOST_FILE, follow=True)
        except safefile.Unfit as exc:
            raise errors.UnavailableError(f"cannot read {host_path}: {exc}") from None

    def read_text(self, host_path: str) -> str:
        return self.read_bytes(host_path).decode("utf-8")

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

    def write_text(self, host_path: str, text: str, mode: int = 0o600) -> None:
        self.write_bytes(host_path, text.encode("utf-8"), mode)

    def write_bytes(self, host_path: str, data: bytes, mode: int = 0o600) -> None:
        """Atomically replace the file with `data` (`safefile.write`); it has `mode` before any byte is written."""
        target = self.path(host_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        safefile.write(target, data, mode=mode)

"""Where snoreloc keeps its state on the node (layout.md), always under a root prefix so tests use a temp dir.

The agent runs as root and writes the state directory, so it must be ours before we use it: a directory another
user owns or may write, or a symlink to one, would let that user point our writes (the lock, the log, backups)
at any file on the node. `ensure` refuses such a directory with exit 77 and the reason; state files are read with
`snoreloc.safefile.read` (no symlinks, regular files only, a size limit).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from snoreloc import errors

_TRUST_HINT = "Remove it, or give --state-dir a directory owned by root with mode 0700, and re-run."


@dataclass(frozen=True)
class Paths:
    """The state directory and the lock file. `state_dir` may be given directly (`--state-dir`)."""

    root: Path
    state_dir: Path

    @classmethod
    def under(cls, root: str | os.PathLike[str] = "/", state_dir: str | os.PathLike[str] | None = None) -> Paths:
        base = Path(root)
        state = Path(state_dir) if state_dir else base / "var/lib/snoreloc"
        return cls(root=base, state_dir=state)

    @property
    def status(self) -> Path:
        return self.state_dir / "status.json"

    @property
    def report(self) -> Path:
        return self.state_dir / "report.json"

    @property
    def backups(self) -> Path:
        return self.state_dir / "backups"

    @property
    def log(self) -> Path:
        return self.state_dir / "snoreloc.log"

    @property
    def lock(self) -> Path:
        """Beside the state it guards: two state directories (two clusters from one workstation) never share it."""
        return self.state_dir / "lock"

    def ensure(self) -> None:
        """Create the state directory (0700) and the backups directory (0700), after proving each is ours."""
        for directory in (self.state_dir, self.backups):
            directory.mkdir(parents=True, exist_ok=True)
            trust_directory(directory)
            os.chmod(directory, 0o700, follow_symlinks=False)


def untrusted_reason(info: os.stat_result) -> str | None:
    """Why a state directory with this `lstat` must not be used, or None."""
    if stat.S_ISLNK(info.st_mode):
        return "is a symlink"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if info.st_uid != os.geteuid():
        return f"is owned by uid {info.st_uid}, not by us (uid {os.geteuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by group or others (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def trust_directory(directory: Path) -> None:
    """Raise PermissionDenied (exit 77) unless `directory` is a real directory, ours, writable by us alone."""
    reason = untrusted_reason(os.lstat(directory))
    if reason is not None:
        raise errors.PermissionDenied(f"refusing to use the state directory {directory}: it {reason}", hint=_TRUST_HINT)

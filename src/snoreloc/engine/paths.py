"""Where snoreloc keeps its state on the node (layout.md), always under a root prefix so tests use a temp dir."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


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
        """Create the state directory (0700) and the backups directory (0700)."""
        for directory in (self.state_dir, self.backups):
            directory.mkdir(parents=True, exist_ok=True)
            directory.chmod(0o700)

"""The common currency of every site-config check: a finding at a document path, before it gets a line number.

Schema errors, semantic checks and file references all speak in paths (`("spec", "network", "interfaces", 0)`);
only the loader knows where each path sits in the user's file. Keeping findings free of positions lets the checks
run on plain data (and on referenced files that have their own positions).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

Path = tuple[str | int, ...]


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class Finding:
    """One thing wrong (or worth a warning) at `path`. Messages never contain secret values."""

    path: Path
    message: str
    severity: Severity = Severity.ERROR


def error(path: Path, message: str) -> Finding:
    return Finding(path, message, Severity.ERROR)


def warning(path: Path, message: str) -> Finding:
    return Finding(path, message, Severity.WARNING)


def render_path(path: Path) -> str:
    """`spec.network.interfaces[0].name`: dots between keys, brackets for list indexes."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def is_under(path: Path, prefix: Path) -> bool:
    return path[: len(prefix)] == prefix

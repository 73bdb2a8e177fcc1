"""The rendered fleet on disk: one directory per site (its site-config and the files it names) and a trace file.

`DIR/<site>/site-config.yaml` plus copies of the files it references is exactly what `snoreloc make-media` and the
agent read (a reference may only name a file inside the site-config's own directory), so each site directory is a
stick's content as it stands. `DIR/inventory-trace.json` keeps, for every site, which inventory cell each field
came from, so `snoreloc fleet validate DIR` can name the line and column to fix long after rendering.

Nothing is half-written: every site is checked first (a directory we did not render is never replaced), each site
is written beside its final place and renamed over it, and copied files are 0600 (keys and pull secrets among them).
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

from snoreloc import errors
from snoreloc_fleet.ops import agent, template

TRACE = "inventory-trace.json"
_SECRET_MODE = 0o600


def _ours(site_dir: pathlib.Path) -> bool:
    config = site_dir / agent.SITE_CONFIG_NAME
    try:
        with config.open("rb") as handle:
            return handle.read(len(template.HEADER)).decode("utf-8", "replace") == template.HEADER
    except OSError:
        return False


def check_targets(out_dir: pathlib.Path, names: Sequence[str]) -> None:
    """Refuse, before writing anything, to replace a site directory that `fleet render` did not write."""
    foreign = [n for n in names if (out_dir / n).exists() and not _ours(out_dir / n)]
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise errors.UsageError(
            f"{out_dir}: {shown} exist{'s' if len(foreign) == 1 else ''} and {'was' if len(foreign) == 1 else 'were'} "
            "not rendered by `snoreloc fleet render`; nothing was written",
            hint="Choose another --out directory, or move those directories away.",
        )


def _copy(source: pathlib.Path, target: pathlib.Path) -> None:
    if source.is_dir():
        shutil.copytree(source, target, dirs_exist_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with source.open("rb") as reader:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, _SECRET_MODE)
        with os.fdopen(fd, "wb") as writer:
            shutil.copyfileobj(reader, writer)


def write_private(path: pathlib.Path, text: str) -> None:
    """Write `text` to `path` with mode 0600 from the first byte (it holds secrets), atomically, never through a
    link planted at `path` (the agent's one writer, `snoreloc.safefile`; refused with exit 77)."""
    from snoreloc import safefile  # noqa: PLC0415

    safefile.write(path, text, mode=_SECRET_MODE)


def write_site(out_dir: pathlib.Path, site: template.Rendered, tpl: template.Template) -> pathlib.Path:
    """Write one site's directory atomically (beside it, then renamed over it); the directory's path."""
    final = out_dir / site.row.name
    staging = out_dir / f".{site.row.name}.rendering"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for ref in site.files:
        _copy(ref.origin, staging / ref.ref)
    (staging / agent.SITE_CONFIG_NAME).write_text(site.text(tpl), encoding="utf-8")
    if final.exists():
        shutil.rmtree(final)
    staging.rename(final)
    return final


def write_trace(out_dir: pathlib.Path, tpl: template.Template, sites: Sequence[template.Rendered]) -> None:
    document = {
        "template": tpl.source,
        "sites": {s.row.name: {"row": s.row.where(), "fields": s.trace} for s in sites},
    }
    temporary = out_dir / f".{TRACE}.tmp"
    temporary.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    temporary.replace(out_dir / TRACE)


def read_trace(directory: pathlib.Path) -> Mapping[str, Any]:
    """The trace of a rendered directory by site name; empty when the directory was not rendered by us."""
    try:
        sites = json.loads((directory / TRACE).read_text(encoding="utf-8")).get("sites", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return sites if isinstance(sites, dict) else {}

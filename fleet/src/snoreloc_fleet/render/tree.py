"""The rendered fleet on disk: one directory per site (its site-config and the files it names) and a trace file.

`DIR/<site>/site-config.yaml` plus copies of the files it references is exactly what `snoreloc make-media` and the
agent read (a reference may only name a file inside the site-config's own directory), so each site directory is a
stick's content as it stands. `DIR/inventory-trace.json` keeps, for every site, which inventory cell each field
came from, so `snoreloc fleet validate DIR` can name the line and column to fix long after rendering.

Nothing is half-written and nothing is written outside `--out`: every site is checked first (a directory we did not
render, or a link or file at a site's place, is never replaced); each site is written into a fresh private
directory beside its final place (`mkdtemp`: 0700, a name nobody could have planted) by the agent's writer
(`snoreloc.safefile`: files 0600 from their first byte, never through a link) and renamed over it. Files hold what
render read (`template.FileRef.contents`), never a copy made by following a link.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import stat
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from snoreloc.siblings import errors, safefile
from snoreloc_fleet import agent
from snoreloc_fleet.render import template

TRACE = "inventory-trace.json"
TRACE_KIND = safefile.Kind("inventory trace", 256 * 1024 * 1024)  # 10,000 sites' trace is about 20 MiB
_SECRET_MODE = 0o600


def _ours(site_dir: pathlib.Path) -> bool:
    try:
        head = safefile.read_head(site_dir / agent.SITE_CONFIG_NAME, len(template.HEADER))
    except (OSError, safefile.Unfit):
        return False
    return head.decode("utf-8", "replace") == template.HEADER


def prepare_out(out_dir: pathlib.Path, inputs: Iterable[pathlib.Path]) -> None:
    """Make `--out` (0700) or accept it as it is: it and its parent each a directory only the caller may write, or
    the caller's CI workspace, or sticky like /tmp (safefile's rule for a path the person named: nobody else may
    rename it away and put theirs in its place); a file or a dangling link there is refused."""
    if out_dir.parent.is_dir():
        safefile.check_directory(out_dir.parent, shared_dir=safefile.NAMED_OUTPUT)
    try:
        info = os.stat(out_dir)
    except FileNotFoundError:
        if os.path.islink(out_dir):
            raise errors.PermissionDenied(f"refusing to render into {out_dir}: it is a dangling symlink") from None
        out_dir.mkdir(mode=0o700, parents=True)
        info = os.stat(out_dir)
    if not stat.S_ISDIR(info.st_mode):
        raise errors.UsageError(
            f"--out {out_dir} is a file, not a directory; nothing was written",
            hint="Give a directory (it is created when missing).",
        )
    safefile.check(out_dir / TRACE, inputs=tuple(inputs), shared_dir=safefile.NAMED_OUTPUT)


def check_targets(out_dir: pathlib.Path, names: Sequence[str]) -> None:
    """Refuse, before writing anything, to replace a site directory that `fleet render` did not write."""
    for name in names:
        try:
            info = os.lstat(out_dir / name)
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(info.st_mode):
            kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "not a directory"
            raise errors.PermissionDenied(
                f"refusing to render site {name} into {out_dir / name}: it is {kind}; nothing was written",
                hint="Remove what is at that path, or choose another --out directory.",
            )
    foreign = [n for n in names if (out_dir / n).exists() and not _ours(out_dir / n)]
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise errors.UsageError(
            f"{out_dir}: {shown} exist{'s' if len(foreign) == 1 else ''} and {'was' if len(foreign) == 1 else 'were'} "
            "not rendered by `snoreloc fleet render`; nothing was written",
            hint="Choose another --out directory, or move those directories away.",
        )


def write_private(path: pathlib.Path, text: str) -> None:
    """Write `text` to `path` with mode 0600 from the first byte (it holds secrets), atomically, never through a
    link planted at `path` (the agent's one writer, `snoreloc.safefile`; refused with exit 77)."""
    safefile.write(path, text, mode=_SECRET_MODE, shared_dir=safefile.NAMED_OUTPUT)


def replace(staging: pathlib.Path, final: pathlib.Path) -> None:
    """Rename the staged site over its place; an earlier render's directory is moved aside first, then removed."""
    if not os.path.isdir(final) or os.path.islink(final):
        os.rename(staging, final)  # nothing there (checked): a link planted since is refused by rename (ENOTDIR)
        return
    aside = pathlib.Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.old."))
    os.rename(final, aside / "site")
    os.rename(staging, final)
    shutil.rmtree(aside)


def write_site(out_dir: pathlib.Path, site: template.Rendered, tpl: template.Template) -> pathlib.Path:
    """Write one site's directory (0700, files 0600) beside its place, then rename it over it; the directory."""
    final = out_dir / site.row.name
    staging = pathlib.Path(tempfile.mkdtemp(dir=out_dir, prefix=f".{site.row.name}.rendering."))
    try:
        written = {name: data for ref in site.files for name, data in ref.contents}
        written[agent.SITE_CONFIG_NAME] = site.text(tpl).encode("utf-8")
        for parent in sorted({(staging / name).parent for name in written} - {staging}):
            parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # inside our own fresh directory
        for name, data in written.items():
            # A private directory renamed whole afterwards: created O_EXCL, no temporary file, no fsync per file.
            safefile.create(staging / name, data, mode=_SECRET_MODE)
        replace(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


def write_trace(out_dir: pathlib.Path, tpl: template.Template, sites: Sequence[template.Rendered]) -> None:
    document = {
        "template": tpl.source,
        "sites": {s.row.name: {"row": s.row.where(), "fields": s.trace} for s in sites},
    }
    text = json.dumps(document, indent=1, sort_keys=True) + "\n"
    safefile.write(out_dir / TRACE, text, mode=0o644, shared_dir=safefile.NAMED_OUTPUT)  # syncs the directory too


def read_trace(directory: pathlib.Path) -> Mapping[str, Any]:
    """The trace of a rendered directory by site name; empty when the directory was not rendered by us (or the
    trace is not a bounded regular file)."""
    try:
        sites = json.loads(safefile.read(directory / TRACE, TRACE_KIND)).get("sites", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return sites if isinstance(sites, dict) else {}

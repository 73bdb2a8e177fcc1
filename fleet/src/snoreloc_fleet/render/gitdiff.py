"""What a change to a fleet tree (`fleet render --git`) does to the sites: `fleet diff BASE HEAD`'s comparison.

Each side is a directory holding the tree, or a Git revision of the repository it lives in (`git archive` of the
tree's path at that revision into a private file, read as a tar stream: nothing is checked out or extracted). A site
is a `<site>/site.yaml` holding a Site. For each site the medium (what its stick, or its BMC delivery, carries) is
named by its digest, by the controller's one definition (`hub.sitemedium.digest`):

- with the hub's identity (`--identity`), computed from the Site and its sealed files, opened with age; a Site whose
  recorded digest differs from it was edited by hand after rendering, and is named so;
- without it, the digest `render --git` recorded on the Site (`fleet.snoreloc.io/medium-digest`), plus the Site's
  own text: a Site whose site-config or file list changed has a new medium whatever its annotation says.

A site whose medium changed needs a new stick (or a new BMC delivery); added and removed sites are listed too. Which
of them the hub is already relocating is the hub's to say (`hub.inflight`).
"""

from __future__ import annotations

import io
import os
import pathlib
import shutil
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from snoreloc.siblings import command, errors, redact, safefile
from snoreloc_fleet.hub import sitemedium
from snoreloc_fleet.render import gitops, sealing
from snoreloc_fleet.resource import site

SITE_KIND = safefile.Kind("fleet tree Site", 4 * 1024 * 1024)  # a Site's siteConfig is at most 1 MiB
SEALED_KIND = safefile.Kind("sealed Secret", 64 * 1024 * 1024)  # a site's files, base64 and armored
ARCHIVE_LIMIT = 2 * 1024 * 1024 * 1024  # a revision's tree: 10,000 sites are a few hundred MiB at most
GIT_TIMEOUT = 300.0


@dataclass(frozen=True)
class Side:
    """One side of the comparison: its label and the tree's files that matter, by path in the tree."""

    label: str
    files: Mapping[str, bytes]


@dataclass(frozen=True)
class Medium:
    """A site as one side has it: its Site, the site-config text and file list, and its medium's digest."""

    namespace: str
    name: str
    site_config: bytes
    file_refs: str
    digest: str  # "" when unknown (no recorded digest and no identity)
    source: bytes = b""  # the Site's file as the tree holds it
    stale_record: bool = False  # the recorded digest is not the one computed from the files


@dataclass
class Changes:
    added: list[Medium] = field(default_factory=list)
    removed: list[Medium] = field(default_factory=list)
    medium: list[tuple[Medium, Medium]] = field(default_factory=list)  # (base, head): a new stick
    other: list[Medium] = field(default_factory=list)  # the Site changed, its medium did not
    unchanged: int = 0
    stale: list[Medium] = field(default_factory=list)  # recorded digests that lie (render again)
    unknown: list[Medium] = field(default_factory=list)  # no digest: its files could not be compared

    def touched(self) -> list[Medium]:
        """Every site this change does something to, by name."""
        return sorted([*self.added, *self.removed, *(h for _, h in self.medium)], key=lambda m: (m.namespace, m.name))


def _wanted(path: str) -> bool:
    parts = path.split("/")
    return len(parts) == 2 and parts[1] in (gitops.SITE_FILE, gitops.SEALED)


def read_directory(directory: pathlib.Path) -> Side:
    """The tree's Sites and sealed files from a directory (each a bounded regular file, never through a link)."""
    found: dict[str, bytes] = {}
    for entry in sorted(os.listdir(directory)):
        for name in (gitops.SITE_FILE, gitops.SEALED):
            path = directory / entry / name
            if not path.is_file():
                continue
            kind = SITE_KIND if name == gitops.SITE_FILE else SEALED_KIND
            try:
                found[f"{entry}/{name}"] = safefile.read(path, kind)
            except (OSError, safefile.Unfit) as exc:
                raise errors.ConfigError(f"{path}: cannot be read: {exc}") from None
    return Side(str(directory), found)


def _git(argv: list[str], cwd: str) -> command.Result:
    if shutil.which("git") is None:
        raise errors.UnavailableError("`git` is not installed on this machine", hint="apt-get install git")
    return command.SubprocessRunner().run(["git", "-C", cwd, *argv], timeout=GIT_TIMEOUT, check=False)


def _tree_path(tree: pathlib.Path) -> tuple[str, str]:
    """(the repository's top directory, the tree's path in it) for a tree directory of the working copy."""
    start = tree if tree.is_dir() else pathlib.Path.cwd()
    found = _git(["rev-parse", "--show-toplevel"], str(start))
    if not found.ok:
        raise errors.UsageError(
            f"{start} is in no Git repository: {redact.redact(found.stderr.strip())}",
            hint="Run fleet diff inside the repository, or give two directories.",
        )
    top = found.stdout.strip()
    relative = os.path.relpath(tree.resolve(), top)
    if relative.startswith(".."):
        raise errors.UsageError(f"--tree {tree} is outside the repository {top}")
    return top, "" if relative == "." else relative


def _members(archive: tarfile.TarFile) -> Iterator[tuple[str, bytes]]:
    for member in archive:
        if not member.isfile() or not _wanted(member.name):
            continue
        limit = SITE_KIND.limit if member.name.endswith(gitops.SITE_FILE) else SEALED_KIND.limit
        if member.size > limit:
            raise errors.ConfigError(f"{member.name} is {member.size} bytes, over the {limit} a tree file may hold")
        handle = archive.extractfile(member)
        if handle is not None:
            yield member.name, handle.read()


def read_revision(revision: str, tree: pathlib.Path) -> Side:
    """The tree's Sites and sealed files at a Git revision of the repository `tree` lives in."""
    top, path = _tree_path(tree)
    with tempfile.TemporaryDirectory(prefix="snoreloc-fleet-diff.") as scratch:
        out = os.path.join(scratch, "tree.tar")
        made = _git(["archive", "--format=tar", "-o", out, f"{revision}:{path}"], top)
        if not made.ok:
            raise errors.UsageError(
                f"{revision} is neither a directory nor a revision holding {path or 'the tree'} in {top}: "
                f"{redact.redact(made.stderr.strip())[:300]}",
                hint="Name a commit, branch or tag (e.g. origin/main), or a directory; --tree names the tree's path.",
            )
        size = os.path.getsize(out)
        if size > ARCHIVE_LIMIT:
            raise errors.ConfigError(f"the tree at {revision} is {size} bytes, over {ARCHIVE_LIMIT}")
        with tarfile.open(out, mode="r:") as archive:
            files = dict(_members(archive))
    return Side(f"{revision}:{path}" if path else revision, files)


def read_side(given: str, tree: pathlib.Path) -> Side:
    """A directory when `given` is one, else a revision of the repository holding `tree`."""
    candidate = pathlib.Path(given)
    if candidate.is_dir():
        return read_directory(candidate)
    return read_revision(given, tree)


# --- the sites and their media ---------------------------------------------------------------------------------------


def _load(where: str, data: bytes) -> Any:
    try:
        return yaml.safe_load(io.BytesIO(data))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise errors.ConfigError(f"{where}{line}: not YAML: {getattr(exc, 'problem', exc)}") from None


def _secrets(side: Side, identity: str | None) -> dict[str, dict[str, bytes]]:
    """The sealed Secrets' files by Secret name (opened with `identity`), or nothing without one."""
    if identity is None:
        return {}
    import base64  # noqa: PLC0415

    held: dict[str, dict[str, bytes]] = {}
    for path, data in sorted(side.files.items()):
        if not path.endswith(gitops.SEALED):
            continue
        where = f"{side.label} {path}"
        secret = _load(where, sealing.unseal(data.decode("ascii", "replace"), identity, where).encode())
        if not isinstance(secret, dict) or secret.get("kind") != "Secret":
            raise errors.ConfigError(f"{where}: holds no Secret")
        name = str((secret.get("metadata") or {}).get("name", ""))
        held[name] = {str(k): base64.b64decode(str(v)) for k, v in (secret.get("data") or {}).items()}
    return held


def _files(view: site.View, secrets: Mapping[str, Mapping[str, bytes]]) -> dict[str, bytes] | None:
    """The Site's files from the opened Secrets; None when one is not there (a ConfigMap, another Secret)."""
    found = {}
    for name, source in view.files.items():
        ref = (source or {}).get("secretKeyRef") if isinstance(source, dict) else None
        data = (secrets.get(str((ref or {}).get("name"))) or {}).get(str((ref or {}).get("key")))
        if data is None:
            return None
        found[str(name)] = data
    return found


def media(side: Side, identity: str | None) -> dict[tuple[str, str], Medium]:
    """Every Site of a side by (namespace, name), with its medium."""
    secrets = _secrets(side, identity)
    found: dict[tuple[str, str], Medium] = {}
    for path, data in sorted(side.files.items()):
        if not path.endswith(gitops.SITE_FILE):
            continue
        obj = _load(f"{side.label} {path}", data)
        if not isinstance(obj, dict) or obj.get("kind") != site.KIND or not site.view(obj).name:
            raise errors.ConfigError(f"{side.label} {path}: holds no Site (kind {site.KIND} with a metadata.name)")
        view = site.view(obj)
        recorded = str(view.annotations.get(gitops.DIGEST_ANNOTATION) or "")
        files = _files(view, secrets) if identity is not None else None
        computed = sitemedium.digest(obj, files) if files is not None else ""
        found[(view.namespace, view.name)] = Medium(
            namespace=view.namespace,
            name=view.name,
            site_config=sitemedium.site_config_text(obj),
            file_refs=yaml.safe_dump(dict(view.files), sort_keys=True),
            digest=computed or recorded,
            source=data,
            stale_record=bool(computed and recorded and computed != recorded),
        )
    return found


def _new_medium(base: Medium, head: Medium) -> bool:
    return base.digest != head.digest or base.site_config != head.site_config or base.file_refs != head.file_refs


def compare(base: Side, head: Side, identity: str | None = None) -> Changes:
    """What changes from `base` to `head`, site by site."""
    before, after = media(base, identity), media(head, identity)
    changes = Changes()
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if new is not None and new.stale_record:
            changes.stale.append(new)
        if new is not None and not new.digest:
            changes.unknown.append(new)
        if old is None and new is not None:
            changes.added.append(new)
        elif new is None and old is not None:
            changes.removed.append(old)
        elif old is not None and new is not None:
            if _new_medium(old, new):
                changes.medium.append((old, new))
            elif old.source != new.source:
                changes.other.append(new)
            else:
                changes.unchanged += 1
    return changes

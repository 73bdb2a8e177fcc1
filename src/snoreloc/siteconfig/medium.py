"""What a site-config medium carries, and its digest: one definition for the stick, the node and the hub.

A medium holds `site-config.yaml` and every file it references (extra manifests too) at the same relative paths.
The fleet hub computes the digest of the medium it will have written; the node computes the digest of the copy it
actually runs from and reports it, so a stick edited in the field shows on the hub as a mismatch. The hub's
reporting kubeconfig (`HUB_FILE`) travels on the same medium but is not part of the digest: it is the credential,
not the configuration, and it names the digest itself.

Nothing on a medium runs (issue 30). The kubernetes client acts on what a kubeconfig says, as root on the node: a
user's `exec` plugin is a command it runs, an `auth-provider` one it calls (and whose refreshed tokens it writes back
to the file), and `client-certificate`, `client-key`, `tokenFile` and a cluster's `certificate-authority` are files
it reads from wherever they point (kubernetes-client/python, config/kube_config.py: `ExecProvider(...).run()`,
`FileOrData(..., file_base_path=<the kubeconfig's directory>)`). `hub_kubeconfig` is the one rule, used by the node
before it reports (`engine.hubreport`), by `validate` beside a site-config, and by every medium writer
(`factory.media`, so `snoreloc make-media --hub-report` and `snoreloc fleet make-media`): only inline credentials,
and file references that are relative and resolve inside the medium's directory to a file the medium carries.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any

from snoreloc import errors, safefile
from snoreloc.siteconfig import discovery, files, findings, yamlpos

SITE_CONFIG_NAME = discovery.FILE_NAMES[0]
HUB_FILE = discovery.HUB_FILE
ISO_LABEL = discovery.LABEL  # the volume label discovery looks for: an image built elsewhere (the hub) uses it
DIGEST_PREFIX = "sha256:"

# A file's name on a medium: a relative path of segments made of `[-._a-zA-Z0-9]`, none of them `.` or `..` (so no
# empty segment, no leading `/`, no NUL), at most `MAX_FILE_NAME` characters. Stricter than what the node reads
# (`files`: not empty, no NUL, not absolute, no `..`), which it includes; the hub lays a Site's files out by these
# names (`snoreloc_fleet.hub.sitemedium`), so a name it refuses never reaches a path.
MAX_FILE_NAME = 253
FILE_SEGMENT = r"(?:[-_a-zA-Z0-9][-._a-zA-Z0-9]*|\.[-_a-zA-Z0-9][-._a-zA-Z0-9]*|\.\.[-._a-zA-Z0-9]+)"
FILE_NAME = rf"^{FILE_SEGMENT}(?:/{FILE_SEGMENT})*$"


def contents(site_config: pathlib.Path) -> dict[str, bytes]:
    """The site-config (named `site-config.yaml`, whatever its file's name) and every file it references, read
    safely from its directory. Unreadable references are left out: validation reports them with their line."""
    try:
        data = safefile.read(site_config, safefile.SITE_FILE, follow=True)
    except (OSError, safefile.Unfit) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise errors.UsageError(f"cannot read {site_config}: {reason}") from None
    found = {SITE_CONFIG_NAME: data}
    base = site_config.resolve().parent
    for reference in discovery.references(data, base):
        try:
            found[reference] = files.read(str(base), reference).content
        except files.RefError:
            continue
    return found


def digest(tree: Mapping[str, bytes]) -> str:
    """`sha256:<hex>` over the medium's files in name order (name, length and bytes of each, so no two different
    trees share a stream); the hub's reporting kubeconfig is left out."""
    hasher = hashlib.sha256()
    for name in sorted(tree):
        if name == HUB_FILE:
            continue
        data = tree[name]
        hasher.update(f"{name}\0{len(data)}\0".encode())
        hasher.update(data)
    return DIGEST_PREFIX + hasher.hexdigest()


def digest_of(site_config: pathlib.Path) -> str:
    """The digest of the medium a site-config file and its files make."""
    return digest(contents(site_config))


def file_name_problem(name: str) -> str | None:
    """Why `name` cannot name a file of a medium (None: it can). Never quotes the name (it may be anything)."""
    if len(name) > MAX_FILE_NAME:
        return f"a file's name is at most {MAX_FILE_NAME} characters (this one has {len(name)})"
    if not re.fullmatch(FILE_NAME, name):
        return (
            "a file's name is a relative path of parts made of letters, digits, '-', '_' and '.', none of them "
            "'.' or '..' (no leading or doubled '/', no control character): rename it, e.g. certs/api.crt"
        )
    return None


def name_clashes(names: Iterable[str]) -> list[tuple[str, str]]:
    """Pairs (file, other) where `other` would be a file inside `file` (`a` and `a/b`): both cannot be laid out."""
    given = set(names)
    found = []
    for name in sorted(given):
        parts = name.split("/")
        for depth in range(1, len(parts)):
            prefix = "/".join(parts[:depth])
            if prefix in given:
                found.append((prefix, name))
    return found


# --- the reporting kubeconfig: nothing on a medium runs ------------------------------------------------------------

INLINE = ("token", "client-certificate-data", "client-key-data", "certificate-authority-data")
RUNS = ("exec", "auth-provider")  # a command the client runs, a provider it calls and writes tokens back for
FILE_FIELDS: Mapping[str, tuple[str, ...]] = {
    "users": ("client-certificate", "client-key", "tokenFile"),
    "clusters": ("certificate-authority",),
}
_ONLY = f"only inline credentials ({', '.join(INLINE)}) are accepted"


def _entries(config: Mapping[str, Any], section: str) -> Iterator[tuple[findings.Path, Mapping[str, Any]]]:
    """Each `users[i].user` or `clusters[i].cluster` mapping, with its path."""
    inner = section[:-1]
    listed = config.get(section)
    for index, entry in enumerate(listed if isinstance(listed, list) else []):
        body = entry.get(inner) if isinstance(entry, Mapping) else None
        if isinstance(body, Mapping):
            yield (section, index, inner), body


def _outside(value: object, medium_dir: pathlib.Path, carried: Collection[str] | None) -> str:
    """Why a file reference is not a file of the medium ("" when it is one)."""
    if not isinstance(value, str) or not value or "\0" in value:
        return "not a file name"
    if os.path.isabs(value):
        return f"an absolute path ({value}): a file anywhere on the node"
    relative = os.path.normpath(value)
    if relative == ".." or relative.startswith("../"):
        return f"{value} leaves the medium's directory"
    if carried is not None:
        return "" if relative in carried else f"{value} is not a file this medium carries"
    base = medium_dir.resolve()
    if not (base / relative).resolve().is_relative_to(base):
        return f"{value} leads out of the medium's directory through a link"
    return ""


def _refusals(
    config: Mapping[str, Any], medium_dir: pathlib.Path, carried: Collection[str] | None
) -> Iterator[tuple[findings.Path, str]]:
    for path, user in _entries(config, "users"):
        for key in RUNS:
            if key in user:
                yield (*path, key), f"a command or plugin the kubernetes client would run as root on the node; {_ONLY}"
    for section, keys in FILE_FIELDS.items():
        for path, body in _entries(config, section):
            for key in keys:
                why = _outside(body[key], medium_dir, carried) if key in body else ""
                if why:
                    yield (*path, key), f"{why}; {_ONLY}, or a file reference inside the medium"


def hub_kubeconfig(
    raw: bytes, medium_dir: pathlib.Path, carried: Collection[str] | None = None, *, source: str = HUB_FILE
) -> Mapping[str, Any]:
    """The reporting kubeconfig `raw` as data, once it is proven to run nothing and read no file outside
    `medium_dir` (with `carried`, the names of the files the medium being written will carry: a reference must
    name one). ConfigError listing every refused field with its line (in `source`, the file as the reader knows
    it), never quoting a value."""
    try:
        doc = yamlpos.load(raw)
    except yamlpos.YamlError as exc:
        problem = errors.Problem("", exc.message, exc.line, exc.column)
        raise errors.ConfigError(f"{source}: not a kubeconfig", problems=(problem,)) from None
    if not isinstance(doc.data, Mapping):
        raise errors.ConfigError(f"{source}: not a kubeconfig (not a mapping)")
    problems = []
    for path, why in _refusals(doc.data, medium_dir, carried):
        mark = doc.locate(path)
        problems.append(errors.Problem(findings.render_path(path), why, mark.line if mark else None))
    if problems:
        first, more = problems[0], f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        where = f" (line {first.line})" if first.line is not None else ""
        raise errors.ConfigError(
            f"{source}: {first.path}{where} refused{more}: {first.message}",
            problems=problems,
            hint="Use the reporting kubeconfig the fleet hub issued (`snoreloc fleet make-media`), which carries its "
            "token and CA inline.",
        )
    return doc.data

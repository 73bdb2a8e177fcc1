"""What a site-config medium carries, and its digest: one definition for the stick, the node and the hub.

A medium holds `site-config.yaml` and every file it references (extra manifests too) at the same relative paths.
The fleet hub computes the digest of the medium it will have written; the node computes the digest of the copy it
actually runs from and reports it, so a stick edited in the field shows on the hub as a mismatch. The hub's
reporting kubeconfig (`HUB_FILE`) travels on the same medium but is not part of the digest: it is the credential,
not the configuration, and it names the digest itself.
"""

from __future__ import annotations

import hashlib
import pathlib
import re
from collections.abc import Iterable, Mapping

from snoreloc import errors, safefile
from snoreloc.siteconfig import discovery, files

SITE_CONFIG_NAME = discovery.FILE_NAMES[0]
HUB_FILE = discovery.HUB_FILE
DIGEST_PREFIX = "sha256:"

# A file's name on a medium: a relative path of segments made of `[-._a-zA-Z0-9]`, none of them `.` or `..` (so no
# empty segment, no leading `/`, no NUL), at most `MAX_FILE_NAME` characters. Stricter than what the node reads
# (`files`: not empty, no NUL, not absolute, no `..`), which it includes; the hub lays a Site's files out by these
# names (`snoreloc_fleet.sitemedium`), so a name it refuses never reaches a path.
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

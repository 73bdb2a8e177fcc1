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
from collections.abc import Mapping

from snoreloc import errors, safefile
from snoreloc.siteconfig import discovery, files

SITE_CONFIG_NAME = discovery.FILE_NAMES[0]
HUB_FILE = discovery.HUB_FILE
DIGEST_PREFIX = "sha256:"


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

"""The site's configuration image: the medium `fleet make-media` writes to a stick, as an ISO the hub serves.

The BMC attaches it as virtual media, and the node's discovery finds it as it finds a stick: the volume is labelled
with the agent's own label (`medium.ISO_LABEL`), `site-config.yaml` and the files it references sit at the same
relative paths, and the hub's reporting kubeconfig beside them. Names keep their case and length through Rock Ridge,
which the node's Linux reads. No Joliet tree: its volume label holds 16 characters, one fewer than the agent's label,
and blkid would then report the shorter one (util-linux libblkid `superblocks/iso9660.c` prefers the Joliet label).

Built in memory with `pycdlib`, a pure-Python ISO9660 writer: the controller runs no image tool and needs no scratch
directory where another Site's files could be read. Its content is fixed by the tree (the Site's medium digest
names it); the volume's own timestamps are pycdlib's build time, so two builds of one tree differ in those bytes
only (`same_files` compares what the node reads).
"""

from __future__ import annotations

import io
import posixpath
from collections.abc import Mapping

import pycdlib

from snoreloc.siblings import medium

MAX_IMAGE_BYTES = 64 * 1024 * 1024  # a site-config, its certificates and manifests: far below this
_ISO_LEVEL = 3  # ISO9660 level 3: files of any size; names come from Rock Ridge and Joliet anyway


def _iso_name(path: str, index: int, directory: bool) -> str:
    """A unique ISO9660 8.3 name for a path segment (readers use the Rock Ridge or Joliet name)."""
    stem = f"D{index:07d}" if directory else f"F{index:07d}"
    return stem if directory else f"{stem}.;1"


def build(tree: Mapping[str, bytes]) -> bytes:
    """The ISO image holding `tree` (relative path -> bytes) under the agent's volume label."""
    iso = pycdlib.PyCdlib()
    iso.new(interchange_level=_ISO_LEVEL, vol_ident=medium.ISO_LABEL, rock_ridge="1.09")
    made: dict[str, str] = {"": "/"}
    counter = 0
    for name in sorted(tree):
        parts = name.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent in made:
                continue
            counter += 1
            iso_path = posixpath.join(made["/".join(parts[: depth - 1])], _iso_name(parent, counter, True))
            iso.add_directory(iso_path, rr_name=parts[depth - 1])
            made[parent] = iso_path
        counter += 1
        iso_path = posixpath.join(made["/".join(parts[:-1])], _iso_name(name, counter, False))
        data = tree[name]
        iso.add_fp(io.BytesIO(data), len(data), iso_path, rr_name=parts[-1])
    out = io.BytesIO()
    iso.write_fp(out)
    iso.close()
    image = out.getvalue()
    if len(image) > MAX_IMAGE_BYTES:
        raise ValueError(f"the image would be {len(image)} bytes, more than {MAX_IMAGE_BYTES}")
    return image


def files(image: bytes) -> dict[str, bytes]:
    """What a reader of the image sees (Rock Ridge names): relative path -> bytes."""
    iso = pycdlib.PyCdlib()
    iso.open_fp(io.BytesIO(image))
    try:
        found: dict[str, bytes] = {}
        for dirpath, _dirs, names in iso.walk(rr_path="/"):
            for name in names:
                path = posixpath.join(dirpath, name)
                data = io.BytesIO()
                iso.get_file_from_iso_fp(data, rr_path=path)
                found[path.lstrip("/")] = data.getvalue()
        return found
    finally:
        iso.close()


def label(image: bytes) -> str:
    """The volume label of the image, as blkid reports it for an ISO9660 volume."""
    iso = pycdlib.PyCdlib()
    iso.open_fp(io.BytesIO(image))
    try:
        return bytes(iso.pvd.volume_identifier).decode("ascii").rstrip()
    finally:
        iso.close()


def same_files(image: bytes, tree: Mapping[str, bytes]) -> bool:
    return files(image) == dict(tree)

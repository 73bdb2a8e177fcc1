"""Finding the site-config at the edge, where the technician may know nothing but "plug in the stick".

Order of precedence: an explicit `--site-config PATH`; a file the technician copied to
`/etc/snoreloc/site-config.yaml`; a block device labelled `relocation-config` (or `cluster-config`, the label
image-based installs use), found through udev links or `blkid`. A device is mounted read-only, without device files
or exec, in a private (0700) temporary directory; the YAML and only the files it references are copied into the
state directory (0700 directory, 0600 files) so a later resume does not need the stick, and the device is always
unmounted, also when copying fails. The wait for a device is bounded and reminds the console what to insert.
"""

from __future__ import annotations

import enum
import logging
import os
import pathlib
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from snoreloc import errors
from snoreloc.adapters import blockdev, clock, fs
from snoreloc.siteconfig import yamlpos

LOG = logging.getLogger(__name__)

LABELS: tuple[str, ...] = ("relocation-config", "cluster-config")
HOST_FILE = "/etc/snoreloc/site-config.yaml"
STATE_DIR = "/var/lib/snoreloc"
COPY_DIR = f"{STATE_DIR}/site-config"
MOUNT_PARENT = "/run/snoreloc"
FILE_NAMES: tuple[str, ...] = ("site-config.yaml", "site-config.yml")
MAX_FILE_BYTES = 1024 * 1024

INSERT_MESSAGE = (
    "Insert the USB stick or ISO labelled relocation-config (it holds site-config.yaml), "
    f"or copy the file to {HOST_FILE}. Waiting {{minutes}} more minute(s)."
)
TIMEOUT_HINT = (
    "Insert the USB stick or ISO labelled relocation-config with site-config.yaml at its top level "
    f"(or copy the file to {HOST_FILE}), then run `snoreloc run` again or restart snoreloc.service."
)

Progress = Callable[[str], None]


class Source(enum.Enum):
    ARGUMENT = "argument"
    HOST_FILE = "host-file"
    DEVICE = "device"


@dataclass(frozen=True)
class Discovered:
    """Where the site-config was found and the local path to load it from."""

    path: pathlib.Path
    source: Source
    device: str | None = None
    copied: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()


@dataclass(frozen=True)
class WaitPolicy:
    """How long to wait for the site-config to appear, how often to look, how often to remind the console."""

    timeout: float = 600.0
    poll: float = 5.0
    remind_every: float = 60.0


def discover(
    host: fs.HostFS,
    devices: blockdev.BlockDevices,
    clk: clock.Clock,
    *,
    explicit: str | None = None,
    policy: WaitPolicy = WaitPolicy(),
    progress: Progress = LOG.warning,
) -> Discovered:
    """Find the site-config, waiting (bounded) for a labelled device when there is no file."""
    if explicit is not None:
        return _explicit(explicit)
    deadline = clk.monotonic() + policy.timeout
    remind_at = clk.monotonic()
    while True:
        found = _look(host, devices)
        if found is not None:
            return found
        now = clk.monotonic()
        if now >= deadline:
            waited_for = "the site-config (a device labelled relocation-config)"
            raise errors.WaitTimeout("discover", waited_for, policy.timeout, hint=TIMEOUT_HINT)
        if now >= remind_at:
            progress(INSERT_MESSAGE.format(minutes=max(1, round((deadline - now) / 60))))
            remind_at = now + policy.remind_every
        clk.sleep(min(policy.poll, deadline - now))


def _explicit(path: str) -> Discovered:
    local = pathlib.Path(path)
    if not local.is_file():
        raise errors.UsageError(f"--site-config {path}: no such file", hint="Give the path of the site-config YAML.")
    return Discovered(local, Source.ARGUMENT)


def _look(host: fs.HostFS, devices: blockdev.BlockDevices) -> Discovered | None:
    if host.exists(HOST_FILE):
        return Discovered(host.path(HOST_FILE), Source.HOST_FILE)
    device = devices.find_by_label(LABELS)
    if device is None:
        return None
    LOG.info("site-config device found: %s", device)
    return copy_from_device(host, devices, device)


def copy_from_device(host: fs.HostFS, devices: blockdev.BlockDevices, device: str) -> Discovered:
    """Mount `device` read-only in a private directory, copy the site-config out, always unmount."""
    host.mkdir(MOUNT_PARENT, 0o700)
    local = pathlib.Path(tempfile.mkdtemp(prefix="site-config.", dir=host.path(MOUNT_PARENT)))
    try:
        with devices.mounted(device, host.host_path(local)):
            return _copy_out(host, local, device)
    finally:
        _remove_mountpoint(local)


def _remove_mountpoint(local: pathlib.Path) -> None:
    try:
        local.rmdir()
    except OSError as exc:  # still mounted or not empty: leave it rather than delete what is in it
        LOG.warning("could not remove mount point %s: %s", local, exc)


def _copy_out(host: fs.HostFS, mount: pathlib.Path, device: str) -> Discovered:
    name = _site_config_name(mount, device)
    data = _read_safe(mount, name)
    if data is None:
        raise errors.ConfigError(f"{device}: {name} is not a regular file of at most {MAX_FILE_BYTES} bytes")
    _fresh_copy_dir(host)
    host.write_bytes(f"{COPY_DIR}/{name}", data, 0o600)
    copied, skipped = [name], []
    for reference in _references(data):
        content = _read_safe(mount, reference)
        if content is None:
            skipped.append(reference)
            continue
        _write_copy(host, reference, content)
        copied.append(reference)
    if skipped:
        LOG.warning("not copied from %s (missing, unsafe or too large): %s", device, ", ".join(skipped))
    return Discovered(host.path(f"{COPY_DIR}/{name}"), Source.DEVICE, device, tuple(copied), tuple(skipped))


def _site_config_name(mount: pathlib.Path, device: str) -> str:
    for name in FILE_NAMES:
        if (mount / name).is_file():
            return name
    present = ", ".join(sorted(os.listdir(mount))[:20]) or "nothing"
    raise errors.ConfigError(
        f"{device} (labelled for relocation) has no {FILE_NAMES[0]} at its top level; it holds: {present}",
        hint=f"Put the site-config at the top level of the device as {FILE_NAMES[0]}.",
    )


def _fresh_copy_dir(host: fs.HostFS) -> None:
    host.mkdir(STATE_DIR, 0o700)
    host.remove_tree(COPY_DIR)
    host.mkdir(COPY_DIR, 0o700)


def _write_copy(host: fs.HostFS, reference: str, content: bytes) -> None:
    parts = pathlib.PurePosixPath(reference).parts
    for depth in range(1, len(parts)):
        host.mkdir(f"{COPY_DIR}/{'/'.join(parts[:depth])}", 0o700)
    host.write_bytes(f"{COPY_DIR}/{reference}", content, 0o600)


def _read_safe(mount: pathlib.Path, reference: str) -> bytes | None:
    """The file's bytes if `reference` is relative, stays inside the mount, is regular and small enough."""
    relative = pathlib.PurePosixPath(reference)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        return None
    candidate = (mount / relative).resolve()
    if not candidate.is_relative_to(mount.resolve()) or not candidate.is_file():
        return None
    if candidate.stat().st_size > MAX_FILE_BYTES:
        return None
    return candidate.read_bytes()


def _references(data: bytes) -> list[str]:
    """Every `file:` reference in the document, in order, without duplicates; nothing if it does not parse."""
    try:
        document = yamlpos.load(data).data  # bounded: a stick's file is hostile until validated
    except yamlpos.YamlError:
        return []  # the loader reports the parse error with its line
    return list(dict.fromkeys(_walk_files(document, set())))


def _walk_files(node: object, seen: set[int]) -> Iterator[str]:
    if id(node) in seen:  # YAML aliases share objects: visit each once so an alias bomb stays cheap
        return
    if isinstance(node, dict):
        seen.add(id(node))
        for key, value in node.items():
            if key == "file" and isinstance(value, str):
                yield value
            else:
                yield from _walk_files(value, seen)
    elif isinstance(node, list):
        seen.add(id(node))
        for item in node:
            yield from _walk_files(item, seen)

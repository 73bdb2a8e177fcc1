"""Finding the site-config at the edge, where the technician may know nothing but "plug in the stick".

Order of precedence: an explicit `--site-config PATH`; a file the technician copied to
`/etc/snoreloc/site-config.yaml`; a block device labelled `relocation-config` (ISO9660, ext4 cuts labels at 16 and
FAT at 11 characters, hence also `RELOCCONFIG`; or `cluster-config`, the label image-based installs use), labels
matched in any case; then the copy a previous run saved. A device is mounted read-only, without device files or
exec, in a private (0700) temporary directory; the YAML and only the files it references (the manifest files of
`spec.extraManifests` too, its directory listed) are copied into a staging directory, validated there, and only then
replace the saved copy in the state directory (0700 directory, 0600 files): a bad stick never overwrites a good
saved copy, and a re-run without the stick uses the saved one, saying so. The device is always unmounted, also when
copying fails. The wait for a device is bounded and visible (`snoreloc.waits`), and tells the console what to
insert.
"""

from __future__ import annotations

import enum
import logging
import os
import pathlib
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from snoreloc import errors, safefile, waits
from snoreloc.adapters import blockdev, clock, fs
from snoreloc.siteconfig import loader, manifests, yamlpos
from snoreloc.siteconfig.settings import extra_manifests

LOG = logging.getLogger(__name__)

LABEL = "relocation-config"  # ISO9660 (and any filesystem that holds 17 characters)
FAT_LABEL = "RELOCCONFIG"  # FAT labels hold 11 characters
LABELS: tuple[str, ...] = (LABEL, FAT_LABEL, "cluster-config")
HOST_FILE = "/etc/snoreloc/site-config.yaml"
STATE_DIR = "/var/lib/snoreloc"
COPY_DIR = f"{STATE_DIR}/site-config"
STAGING_DIR = f"{STATE_DIR}/site-config.new"
MOUNT_PARENT = "/run/snoreloc"
FILE_NAMES: tuple[str, ...] = ("site-config.yaml", "site-config.yml")
HUB_FILE = "hub-report.kubeconfig"  # optional: the fleet hub's reporting credential, copied beside the site-config
MAX_FILE_BYTES = safefile.SITE_FILE.limit

INSERT_MESSAGE = (
    f"Insert the USB stick or ISO labelled {LABEL} or {FAT_LABEL} (it holds site-config.yaml), "
    f"or copy the file to {HOST_FILE}. Waiting {{minutes}} more minute(s)."
)
WAITED_FOR = f"the site-config (a USB stick or ISO labelled {LABEL} or {FAT_LABEL}, or {HOST_FILE})"
TIMEOUT_HINT = (
    f"Insert the USB stick or ISO labelled {LABEL} or {FAT_LABEL} with site-config.yaml at its top level "
    f"(`snoreloc make-media` writes one; or copy the file to {HOST_FILE}), then run `snoreloc run` again or "
    "restart snoreloc.service."
)

Progress = Callable[[str], None]


class Source(enum.Enum):
    ARGUMENT = "argument"
    HOST_FILE = "host-file"
    DEVICE = "device"
    SAVED = "saved-copy"


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
    """Find the site-config: a file or a medium, else the saved copy, else wait (bounded) for a medium."""
    if explicit is not None:
        return _explicit(explicit)
    found = _look(host, devices, progress)
    if found is not None:
        return found
    saved = saved_copy(host)
    if saved is not None:
        progress(f"no site-config medium is present: using the copy saved by an earlier run, {saved.path}")
        return saved
    progress(INSERT_MESSAGE.format(minutes=max(1, round(policy.timeout / 60))))
    wait = waits.Wait(
        "discover",
        WAITED_FOR,
        policy.timeout,
        interval=policy.poll,
        report_every=policy.remind_every,
        hint=TIMEOUT_HINT,
    )
    return waits.until(lambda: _look(host, devices, progress), wait, clk)


def saved_copy(host: fs.HostFS) -> Discovered | None:
    """The site-config an earlier run copied from a medium, if there is one."""
    for name in FILE_NAMES:
        if host.exists(f"{COPY_DIR}/{name}"):
            return Discovered(host.path(f"{COPY_DIR}/{name}"), Source.SAVED)
    return None


def _explicit(path: str) -> Discovered:
    local = pathlib.Path(path)
    if not local.is_file():
        raise errors.UsageError(f"--site-config {path}: no such file", hint="Give the path of the site-config YAML.")
    return Discovered(local, Source.ARGUMENT)


def _look(host: fs.HostFS, devices: blockdev.BlockDevices, progress: Progress) -> Discovered | None:
    if host.exists(HOST_FILE):
        return Discovered(host.path(HOST_FILE), Source.HOST_FILE)
    device = devices.find_by_label(LABELS)
    if device is None:
        return None
    LOG.info("site-config device found: %s", device)
    return copy_from_device(host, devices, device, progress=progress)


def copy_from_device(
    host: fs.HostFS, devices: blockdev.BlockDevices, device: str, *, progress: Progress = LOG.warning
) -> Discovered:
    """Mount `device` read-only in a private directory, copy the site-config out, always unmount; then validate
    the copy and only then let it replace the saved one."""
    host.mkdir(MOUNT_PARENT, 0o700)
    local = pathlib.Path(tempfile.mkdtemp(prefix="site-config.", dir=host.path(MOUNT_PARENT)))
    try:
        with devices.mounted(device, host.host_path(local)):
            staged = _copy_out(host, local, device)
    finally:
        _remove_mountpoint(local)
    return _replace_saved(host, staged, progress)


def _replace_saved(host: fs.HostFS, staged: Discovered, progress: Progress) -> Discovered:
    report = loader.validate(str(staged.path))
    previous = saved_copy(host)
    if not report.valid:
        host.remove_tree(STAGING_DIR)
        kept = f"; the saved copy {previous.path} is kept" if previous else ""
        raise errors.ConfigError(
            f"{staged.device}: the site-config on the medium is not valid{kept}", problems=report.problems
        )
    if previous is not None and not _same_tree(host.path(COPY_DIR), host.path(STAGING_DIR)):
        progress(f"the site-config on {staged.device} differs from the saved copy: the medium's replaces it")
    host.remove_tree(COPY_DIR)
    host.path(STAGING_DIR).rename(host.path(COPY_DIR))
    name = staged.path.name
    return Discovered(host.path(f"{COPY_DIR}/{name}"), Source.DEVICE, staged.device, staged.copied, staged.skipped)


def _same_tree(left: pathlib.Path, right: pathlib.Path) -> bool:
    def contents(root: pathlib.Path) -> dict[str, bytes]:
        return {
            str(p.relative_to(root)): safefile.read(p, safefile.SITE_FILE)
            for p in root.rglob("*")
            if p.is_file() and not p.is_symlink()
        }

    return contents(left) == contents(right)


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
    host.write_bytes(f"{STAGING_DIR}/{name}", data, 0o600)
    copied, skipped = [name], []
    for reference in references(data, mount):
        content = _read_safe(mount, reference)
        if content is None:
            skipped.append(reference)
            continue
        _write_copy(host, reference, content)
        copied.append(reference)
    hub = _read_safe(mount, HUB_FILE)
    if hub is not None:
        _write_copy(host, HUB_FILE, hub)
        copied.append(HUB_FILE)
    if skipped:
        LOG.warning("not copied from %s (missing, unsafe or too large): %s", device, ", ".join(skipped))
    return Discovered(host.path(f"{STAGING_DIR}/{name}"), Source.DEVICE, device, tuple(copied), tuple(skipped))


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
    host.remove_tree(STAGING_DIR)
    host.mkdir(STAGING_DIR, 0o700)


def _write_copy(host: fs.HostFS, reference: str, content: bytes) -> None:
    parts = pathlib.PurePosixPath(reference).parts
    for depth in range(1, len(parts)):
        host.mkdir(f"{STAGING_DIR}/{'/'.join(parts[:depth])}", 0o700)
    host.write_bytes(f"{STAGING_DIR}/{reference}", content, 0o600)


def _read_safe(mount: pathlib.Path, reference: str) -> bytes | None:
    """The file's bytes if `reference` is relative, stays inside the mount, is regular and small enough."""
    relative = pathlib.PurePosixPath(reference)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        return None
    candidate = (mount / relative).resolve()
    if not candidate.is_relative_to(mount.resolve()):
        return None
    try:
        return safefile.read(candidate, safefile.SITE_FILE)
    except (OSError, safefile.Unfit):
        return None


def references(data: bytes, base: pathlib.Path | None = None) -> list[str]:
    """Every `file:` reference in the document, in order, without duplicates; nothing if it does not parse. With
    `base` (where the site-config's files are: a mount, a directory), also the manifest files `spec.extraManifests`
    names there, its directory listed, so that a copy of the site-config carries them too."""
    try:
        document = yamlpos.load(data).data  # bounded: a stick's file is hostile until validated
    except yamlpos.YamlError:
        return []  # the loader reports the parse error with its line
    found = list(dict.fromkeys(_walk_files(document, set())))
    if base is not None:
        spec = document.get("spec") if isinstance(document, dict) else None
        found += manifests.references(spec.get(extra_manifests.KEY) if isinstance(spec, dict) else None, str(base))
    return found


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

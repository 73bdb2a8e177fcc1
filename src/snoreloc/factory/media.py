"""The site-config medium, written for the SRE so nobody hand-builds one.

A technician at the site plugs in what the SRE sent: a USB stick or a virtual-media ISO. Discovery looks for the
label `relocation-config` (ISO9660 carries it; FAT labels hold 11 characters, so a FAT image is labelled
`RELOCCONFIG`), finds `site-config.yaml` at the top level and copies it with the files it references. This module
writes exactly that: the site-config is validated first (nothing is written for a bad one), then it and each file it
references are laid out at the same relative paths, and the image is made by the standard tools: `genisoimage`
(or `xorriso -as mkisofs`, or `mkisofs`) with Joliet and Rock Ridge names for the ISO, `mkfs.vfat` and `mcopy`
(mtools, no mount needed) for the FAT image, which `dd` writes to a stick as it is. The tools write into a private
temporary directory; each image then reaches its path through `safefile.write`: 0600 (it holds the pull secret),
never through a symlink, never over the site-config or a file it references. A hub reporting kubeconfig given to
put on the medium must run nothing and read only files the medium carries (`medium.hub_kubeconfig`).
"""

from __future__ import annotations

import pathlib
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

from snoreloc import errors, safefile
from snoreloc.adapters import command
from snoreloc.siteconfig import discovery, loader, medium

TOOL_TIMEOUT = 120.0
SITE_CONFIG_NAME = medium.SITE_CONFIG_NAME
ISO_TOOLS: tuple[tuple[str, ...], ...] = (("genisoimage",), ("xorriso", "-as", "mkisofs"), ("mkisofs",))
FAT_MIN_KIB = 2048


@dataclass(frozen=True)
class Written:
    """The images written and the files each holds (relative paths, the site-config first)."""

    paths: tuple[pathlib.Path, ...]
    contents: tuple[str, ...]


def gather(site_config: pathlib.Path) -> dict[str, bytes]:
    """The site-config (as `site-config.yaml`) and every file it references (extra manifests too); ConfigError when
    it is not valid."""
    report = loader.validate(str(site_config))
    if not report.valid:
        count = len(report.problems)
        raise errors.ConfigError(
            f"{site_config}: {count} problem{'s' if count != 1 else ''}; no medium written", problems=report.problems
        )
    return medium.contents(site_config)


def write(
    runner: command.Runner,
    site_config: pathlib.Path,
    *,
    iso: pathlib.Path | None,
    fat: pathlib.Path | None,
    hub_report: bytes | None = None,
    hub_report_source: str = medium.HUB_FILE,
) -> Written:
    """Validate `site-config`, then write the ISO and/or FAT image; nothing is written when it is not valid.
    `hub_report`: the fleet hub's reporting kubeconfig for this site, written as `medium.HUB_FILE` (0600);
    `hub_report_source` names where it came from in a refusal."""
    contents = gather(site_config)
    inputs = _inputs(site_config, contents)
    if hub_report is not None:  # nothing on a medium runs: refused (exit 65, with the field) before anything is made
        medium.hub_kubeconfig(hub_report, site_config.resolve().parent, set(contents), source=hub_report_source)
        contents[medium.HUB_FILE] = hub_report
    written = []
    with tempfile.TemporaryDirectory(prefix="snoreloc-media.") as tmp:
        tree = _lay_out(pathlib.Path(tmp) / "tree", contents)
        made = pathlib.Path(tmp) / "image"
        if iso is not None:
            write_iso(runner, tree, made)
            _place(made, iso, inputs)
            written.append(iso)
        if fat is not None:
            write_fat(runner, tree, made, sum(map(len, contents.values())))
            _place(made, fat, inputs)
            written.append(fat)
    return Written(tuple(written), tuple(contents))


def _inputs(site_config: pathlib.Path, contents: dict[str, bytes]) -> list[pathlib.Path]:
    """The files an image may not be written over: the site-config and every file it references."""
    base = site_config.resolve().parent
    return [site_config, *(base / name for name in contents if name != SITE_CONFIG_NAME)]


def _place(made: pathlib.Path, out: pathlib.Path, inputs: list[pathlib.Path]) -> None:
    """The image the tool made in the private directory, written to `out` by the safe writer (0600)."""
    safefile.write(out, safefile.read(made, safefile.IMAGE), inputs=inputs, shared_dir=safefile.NAMED_OUTPUT)


def _lay_out(tree: pathlib.Path, contents: dict[str, bytes]) -> pathlib.Path:
    for name, data in contents.items():
        safefile.write(tree / name, data, make_parents=True)
    return tree


def iso_tool() -> Sequence[str]:
    """The first ISO9660 writer on PATH."""
    for tool in ISO_TOOLS:
        if shutil.which(tool[0]):
            return tool
    raise errors.UnavailableError(
        "no ISO9660 writer found (genisoimage, xorriso or mkisofs)",
        hint="Install genisoimage or xorriso (e.g. `dnf install xorriso`), or write only the FAT image with --fat.",
    )


def write_iso(runner: command.Runner, tree: pathlib.Path, out: pathlib.Path) -> None:
    """An ISO9660 image with Joliet and Rock Ridge names, volume id `relocation-config`."""
    out.unlink(missing_ok=True)
    argv = [*iso_tool(), "-quiet", "-V", discovery.LABEL, "-J", "-R", "-o", str(out), str(tree)]
    runner.run(argv, timeout=TOOL_TIMEOUT)


def write_fat(runner: command.Runner, tree: pathlib.Path, out: pathlib.Path, size: int) -> None:
    """A FAT image labelled `RELOCCONFIG`, filled with mtools (no mount); `dd` it to a stick as it is."""
    out.unlink(missing_ok=True)
    kib = max(FAT_MIN_KIB, 2 * size // 1024 + 1024)
    runner.run(["mkfs.vfat", "-C", "-n", discovery.FAT_LABEL, str(out), str(kib)], timeout=TOOL_TIMEOUT)
    for entry in sorted(tree.iterdir()):
        runner.run(["mcopy", "-i", str(out), "-s", "-Q", str(entry), f"::/{entry.name}"], timeout=TOOL_TIMEOUT)

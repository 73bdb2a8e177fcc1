"""`snoreloc make-media`: write the site-config medium (an ISO9660 image and/or a FAT image) from a site-config."""

from __future__ import annotations

import argparse
import pathlib
import sys

from snoreloc import errors, safefile

HELP = "validate a site-config and write it, with the files it references, as a labelled ISO and/or FAT image"
OUTPUTS = ("iso", "fat")  # argument names of the files this verb writes (checked before it runs: cli.main)
INPUTS = ("site_config", "hub_report")  # argument names of the files it reads, which no output may be


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("site_config", metavar="SITE_CONFIG", help="the site-config YAML (its files beside it)")
    parser.add_argument(
        "--iso", metavar="PATH", help="write an ISO9660 image labelled relocation-config (virtual media)"
    )
    parser.add_argument("--fat", metavar="PATH", help="write a FAT image labelled RELOCCONFIG (dd it to a USB stick)")
    parser.add_argument(
        "--hub-report",
        metavar="KUBECONFIG",
        help="the fleet hub's reporting kubeconfig for this site (`snoreloc fleet make-media` passes it); carried "
        "as hub-report.kubeconfig, never logged",
    )


def _read_hub_report(path: str) -> bytes:
    """The hub's reporting kubeconfig, through the bounded reader (it is a credential: read as one, never shown)."""
    try:
        return safefile.read(path, safefile.KUBECONFIG, follow=True)
    except (OSError, safefile.Unfit) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise errors.UsageError(f"--hub-report {path}: {reason}") from None


def run(args: argparse.Namespace) -> int:
    from snoreloc.adapters import command  # noqa: PLC0415
    from snoreloc.factory import media  # noqa: PLC0415

    if not (args.iso or args.fat):
        raise errors.UsageError("give --iso PATH, --fat PATH, or both")
    written = media.write(
        command.SubprocessRunner(),
        pathlib.Path(args.site_config),
        iso=pathlib.Path(args.iso) if args.iso else None,
        fat=pathlib.Path(args.fat) if args.fat else None,
        hub_report=_read_hub_report(args.hub_report) if args.hub_report else None,
        hub_report_source=f"--hub-report {args.hub_report}",
    )
    for path in written.paths:
        sys.stderr.write(f"wrote {path}: {', '.join(written.contents)}\n")
    return 0

"""`snoreloc fleet make-media SITE`: the stick for one Site, made from the hub: its site-config, its files, and
its reporting kubeconfig.

The Site must be valid on the hub (its Validated condition True for its current generation) and its credential
issued. The medium is rebuilt here from the Site and the Secrets and ConfigMaps it names, checked again with the
agent's rules, and its digest compared with the one the controller put in `status.media`: a difference means the
Site or an input changed since the controller last saw it, and nothing is written (exit 75: run it again once the
controller has caught up). The images are written by the agent's own media maker (`snoreloc make-media`), with
`hub-report.kubeconfig` (0600 in the tree) beside the site-config; `--out-dir` writes the same files to a directory
instead (0700, files 0600), to copy onto a stick by hand. The token is never printed or logged.
"""

from __future__ import annotations

import argparse
import base64
import pathlib
import sys
from typing import Any

from snoreloc import errors
from snoreloc.adapters import kube

HELP = "write the stick (ISO, FAT image or a directory) for one Site, with its hub reporting kubeconfig"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from snoreloc_fleet import hubaccess  # noqa: PLC0415 (lazy: `snoreloc --help` builds this parser)

    parser.add_argument("site", metavar="SITE", help="the Site's name")
    hubaccess.add_arguments(parser)
    parser.add_argument("--iso", metavar="PATH", help="write an ISO9660 image labelled relocation-config")
    parser.add_argument("--fat", metavar="PATH", help="write a FAT image labelled RELOCCONFIG (dd it to a stick)")
    parser.add_argument("--out-dir", metavar="DIR", help="write the medium's files into DIR (created, 0700)")


def _ready(obj: dict[str, Any]) -> str:
    """The digest the controller issued, once the Site is valid and its credential issued; else exit 75."""
    from snoreloc_fleet import site  # noqa: PLC0415

    status = obj.get("status") or {}
    generation = obj["metadata"].get("generation")
    media = {c.get("type"): c for c in status.get(site.STATUS_CONDITIONS) or []}.get(site.Condition.MEDIA_READY)
    name = obj["metadata"]["name"]
    if not media or media.get("status") != "True" or media.get("observedGeneration") != generation:
        why = media.get("message") if media else "the controller has not reconciled it yet"
        raise errors.TemporaryError(
            f"site {name}: no medium can be made yet: {why}", hint=f"See `kubectl get site {name} -o yaml` (status)."
        )
    return str((status.get(site.STATUS_MEDIA) or {}).get("digest", ""))


def hub_report(client: kube.Client, obj: dict[str, Any]) -> bytes | None:
    """The site's reporting kubeconfig (None when the Site does not report)."""
    from snoreloc_fleet import credentials  # noqa: PLC0415

    if ((obj.get("spec") or {}).get("report") or {}).get("enabled", True) is False:
        return None
    ref = kube.Ref(kube.SECRETS, credentials.report_secret_name(obj["metadata"]["name"]), obj["metadata"]["namespace"])
    secret = client.get(ref)
    return base64.b64decode(secret["data"][credentials.KUBECONFIG_KEY])


def write_dir(out: pathlib.Path, tree: dict[str, bytes]) -> None:
    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    for name, data in tree.items():
        target = out / name
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o600)


def make(client: kube.Client, namespace: str, name: str) -> dict[str, bytes]:
    """The medium's files for a Site (the hub's reporting kubeconfig included), proven equal to what the
    controller validated."""
    from snoreloc.siteconfig import medium  # noqa: PLC0415
    from snoreloc_fleet import sitemedium  # noqa: PLC0415
    from snoreloc_fleet.controller import reconcile  # noqa: PLC0415

    obj = client.get(reconcile.site_ref(namespace, name))
    issued = _ready(obj)
    files, missing = sitemedium.resolve_files(client, obj)
    checked = sitemedium.check(obj, files, missing)
    if not checked.valid:
        raise errors.ConfigError(
            f"site {name}: not valid", problems=(*checked.inline, *checked.missing, *checked.problems)
        )
    if checked.digest != issued:
        raise errors.TemporaryError(
            f"site {name}: the Site or its inputs changed since the controller checked it ({checked.digest} here, "
            f"{issued} in its status); nothing was written",
            hint="Wait for the controller to reconcile it (its status.media.digest changes), then run this again.",
        )
    tree = dict(checked.tree)
    report = hub_report(client, obj)
    if report is not None:
        tree[medium.HUB_FILE] = report
    return tree


def run(args: argparse.Namespace) -> int:
    import tempfile  # noqa: PLC0415

    from snoreloc.adapters import command  # noqa: PLC0415
    from snoreloc.factory import media  # noqa: PLC0415
    from snoreloc.siteconfig import medium  # noqa: PLC0415
    from snoreloc_fleet import hubaccess  # noqa: PLC0415

    if not (args.iso or args.fat or args.out_dir):
        raise errors.UsageError("give --iso PATH, --fat PATH, --out-dir DIR, or several")
    client = hubaccess.client(args)
    try:
        tree = make(client, args.namespace, args.site)
    finally:
        client.close()
    if args.out_dir:
        write_dir(pathlib.Path(args.out_dir), tree)
        sys.stderr.write(f"wrote {args.out_dir}: {', '.join(tree)}\n")
    if args.iso or args.fat:
        with tempfile.TemporaryDirectory(prefix="snoreloc-fleet-media.") as tmp:
            write_dir(pathlib.Path(tmp) / "tree", tree)
            written = media.write(
                command.SubprocessRunner(),
                pathlib.Path(tmp) / "tree" / medium.SITE_CONFIG_NAME,
                iso=pathlib.Path(args.iso) if args.iso else None,
                fat=pathlib.Path(args.fat) if args.fat else None,
                hub_report=tree.get(medium.HUB_FILE),
            )
        for path in written.paths:
            sys.stderr.write(f"wrote {path}: {', '.join(written.contents)}\n")
    return 0

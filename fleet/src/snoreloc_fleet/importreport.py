"""`snoreloc fleet import-report FILE`: a report carried back by hand from a site that could not reach its hub.

FILE is the output of `snoreloc status --output json` on the node. Its `hub` block names the Site and holds the
report the node would have sent, signed with the site's report key (HMAC-SHA256, `snoreloc.engine.hubreport`).
Before anything is written it proves that the report belongs to that Site (the signature verifies with the key the
hub issued for it, read from the Site's report Secret) and to that site-config (the report's digest is the one in
`status.media`), and that it is not older than the report the Site already holds. Then it writes the report into
`status.agent` with `source: imported`; the controller derives the phase from it as from a live report.

Exit codes: 0 applied, 65 the file is not such a report (a FIFO, a device, a directory or more than 4 MiB is refused
at once by the agent's bounded reader), 77 the signature or the digest does not match, 69 the Site or its key is not
there, or the file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from typing import TYPE_CHECKING, Any

from snoreloc import errors, safefile

if TYPE_CHECKING:
    from snoreloc.adapters import kube

HELP = "apply a node's `snoreloc status --output json`, carried back by hand, to its Site (signature checked)"
MAX_BYTES = 4 * 1024 * 1024
KIND = safefile.Kind("status report", MAX_BYTES)  # `snoreloc status --output json`: a few KiB


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from snoreloc_fleet import hubaccess  # noqa: PLC0415 (lazy: `snoreloc --help` builds this parser)

    parser.add_argument("files", metavar="FILE", nargs="+", help="`snoreloc status --output json` of a node")
    hubaccess.add_arguments(parser, namespace=False)


def _hub_block(path: pathlib.Path) -> dict[str, Any]:
    try:
        raw = safefile.read(path, KIND, follow=True)
    except safefile.Unfit as exc:
        raise errors.ConfigError(
            f"{path}: not a status report: {exc}", hint="Give the output of `snoreloc status --output json`."
        ) from None
    except OSError as exc:
        raise errors.UnavailableError(f"cannot read {path}: {exc.strerror}") from None
    try:
        document = json.loads(raw)
    except ValueError as exc:
        raise errors.ConfigError(
            f"{path}: not JSON ({exc})", hint="Give the output of `snoreloc status --output json`."
        ) from None
    hub = document.get("hub") if isinstance(document, dict) else None
    needed = ("namespace", "name", "report", "signature")
    if not isinstance(hub, dict) or not all(hub.get(key) for key in needed) or not isinstance(hub["report"], dict):
        raise errors.ConfigError(
            f"{path}: no signed hub report in it",
            hint="The node writes one only when its stick carried a hub reporting kubeconfig (`fleet make-media`).",
        )
    return hub


def apply(client: kube.Client, path: pathlib.Path) -> str:
    """Prove and apply one report; returns a line saying what was done."""
    from snoreloc.adapters import kube  # noqa: PLC0415
    from snoreloc.engine import hubreport  # noqa: PLC0415
    from snoreloc_fleet import credentials, site  # noqa: PLC0415
    from snoreloc_fleet.controller import reconcile  # noqa: PLC0415

    hub = _hub_block(path)
    namespace, name, report = str(hub["namespace"]), str(hub["name"]), dict(hub["report"])
    secret = client.find(kube.Ref(kube.SECRETS, credentials.report_secret_name(name), namespace))
    key = credentials.report_key(secret)
    obj = client.find(reconcile.site_ref(namespace, name))
    if obj is None or key is None:
        raise errors.UnavailableError(f"{path}: site {namespace}/{name} or its report key is not on this hub")
    if not hubreport.verify(key, namespace, name, report, str(hub["signature"])):
        raise errors.PermissionDenied(
            f"{path}: the signature does not verify with the key issued for site {namespace}/{name}; nothing applied",
            hint="The report was changed, or comes from another site's stick or an older key.",
        )
    status = obj.get("status") or {}
    issued = (status.get(site.STATUS_MEDIA) or {}).get("digest")
    if report.get("siteConfigDigest") != issued:
        raise errors.PermissionDenied(
            f"{path}: the node ran site-config {report.get('siteConfigDigest')}, the Site describes {issued}; "
            "nothing applied",
            hint="The stick was made from an earlier version of the Site (or edited): make a new one.",
        )
    held = status.get(site.STATUS_AGENT) or {}
    if str(held.get("reportedAt", "")) > str(report.get("reportedAt", "")):
        return f"{namespace}/{name}: the Site holds a newer report ({held.get('reportedAt')}); nothing applied"
    report["source"] = hubreport.Source.IMPORTED
    ref = reconcile.site_ref(namespace, name)
    client.request(
        "PATCH", ref.path("status"), body={"status": {site.STATUS_AGENT: report}}, content_type=kube.MERGE_PATCH
    )
    return f"{namespace}/{name}: report of {report.get('reportedAt')} applied ({report.get('runState')})"


def run(args: argparse.Namespace) -> int:
    from snoreloc_fleet import hubaccess  # noqa: PLC0415

    client = hubaccess.client(args)
    try:
        for file in args.files:
            sys.stdout.write(apply(client, pathlib.Path(file)) + "\n")
    finally:
        client.close()
    return 0

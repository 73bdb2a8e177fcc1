"""`snoreloc fleet import-report FILE`: a report carried back by hand from a site that could not reach its hub.

FILE is the output of `snoreloc status --output json` on the node. Its `hub` block names the Site and holds the
report the node would have sent, signed with the site's report key (HMAC-SHA256, `snoreloc.engine.hubreport`).
Before anything is written it proves that the report belongs to that Site (the signature verifies with the key the
hub issued for it, read from the Site's report Secret) and to that site-config (the report's digest is the one in
`status.media`), and that it is not older than the report the Site already holds. Then it writes the report into
`status.agent` with `source: imported`; the controller derives the phase from it as from a live report.

A signature proves where a report came from, not that its values make sense: the report is read as the fleet's
readers read it (`fleetstate.report`), and one with an implausible value (seconds out of range, a list where a
mapping belongs, a time later than this machine's clock plus `fleetstate.SKEW`...) is refused with the field, before
anything is written. "Newer" compares times, not strings, and a held report dated past that same bound counts as
no report: a node whose clock once ran ahead can no longer freeze its Site against every real report after it.

Exit codes: 0 applied, 65 the file is not such a report or holds an implausible value (a FIFO, a device, a
directory or more than 4 MiB is refused at once by the agent's bounded reader), 77 the signature or the digest does
not match, 69 the Site or its key is not there, or the file cannot be read.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import pathlib
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from snoreloc.siblings import errors, safefile
from snoreloc_fleet.state import fleetstate

if TYPE_CHECKING:
    from snoreloc.siblings import kube

HELP = "apply a node's `snoreloc status --output json`, carried back by hand, to its Site (signature checked)"
MAX_BYTES = 4 * 1024 * 1024
KIND = safefile.Kind("status report", MAX_BYTES)  # `snoreloc status --output json`: a few KiB


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from snoreloc_fleet.hub import hubaccess  # noqa: PLC0415 (lazy: `snoreloc --help` builds this parser)

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
    except (ValueError, RecursionError) as exc:
        reason = "nested too deep" if isinstance(exc, RecursionError) else str(exc)
        raise errors.ConfigError(
            f"{path}: not JSON ({reason})", hint="Give the output of `snoreloc status --output json`."
        ) from None
    hub = document.get("hub") if isinstance(document, dict) else None
    if not isinstance(hub, dict):
        raise errors.ConfigError(
            f"{path}: no signed hub report in it (no `hub` mapping)",
            hint="The node writes one only when its stick carried a hub reporting kubeconfig (`fleet make-media`).",
        )
    for key in ("namespace", "name", "report", "signature"):
        if not hub.get(key) or not isinstance(hub[key], dict if key == "report" else str):
            raise errors.ConfigError(
                f"{path}: hub.{key} is missing or not a {'mapping' if key == 'report' else 'string'}; nothing applied",
                hint="Give the output of `snoreloc status --output json` of the node, unchanged.",
            )
    return hub


# kube-apiserver's object names: a namespace is a DNS-1123 label, a custom resource's name a DNS-1123 subdomain
# (k8s.io/apimachinery/pkg/util/validation: IsDNS1123Label, IsDNS1123Subdomain; 63 and 253 characters).
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _names(path: pathlib.Path, hub: Mapping[str, Any]) -> tuple[str, str]:
    """The Site's namespace and name the report names, once they are Kubernetes names (they go into API paths)."""
    namespace, name = hub["namespace"], hub["name"]
    for field, value, pattern, limit in (("namespace", namespace, _LABEL, 63), ("name", name, _SUBDOMAIN, 253)):
        if not isinstance(value, str) or len(value) > limit or not pattern.fullmatch(value):
            raise errors.ConfigError(
                f"{path}: hub.{field} is not a Kubernetes name (lower-case letters, digits and '-', "
                f"at most {limit} characters); nothing applied",
                hint="Give the output of `snoreloc status --output json` of the node, unchanged.",
            )
    return namespace, name


@dataclass(frozen=True)
class _Carried:
    when: dt.datetime
    run_state: str


def _plausible(path: pathlib.Path, report: Mapping[str, Any], now: dt.datetime) -> _Carried:
    """The report's time and run state, once every value in it is plausible (`fleetstate.report`) and its text
    can be signed (UTF-8); ConfigError (65) naming the first field that is not."""
    from snoreloc.siblings import hubreport  # noqa: PLC0415

    try:
        hubreport.canonical(report)
    except (ValueError, RecursionError):  # a lone surrogate cannot be encoded, so no node signed it
        raise errors.ConfigError(
            f"{path}: hub.report holds text that is not UTF-8, or is nested too deep (no node wrote it); "
            "nothing applied",
            hint="Give the output of `snoreloc status --output json` of the node, unchanged.",
        ) from None
    read = fleetstate.report(report, now, where="hub.report")
    if read is None or read.reported_at is None:
        field = "hub.report.reportedAt"
        raise errors.ConfigError(
            f"{path}: {field} is missing, not a time, or later than this machine's clock "
            f"(more than {fleetstate.SKEW:.0f} s ahead); nothing applied",
            hint="Check the node's clock and this machine's (timedatectl), then carry a new report back.",
        )
    if read.implausible:
        more = f" (and {len(read.implausible) - 1} more)" if len(read.implausible) > 1 else ""
        raise errors.ConfigError(
            f"{path}: {read.implausible[0]}{more} holds an implausible value; nothing applied",
            hint="The node's report is damaged: run `snoreloc status --output json` on the node again.",
        )
    return _Carried(read.reported_at, read.run_state)


def apply(client: kube.Client, path: pathlib.Path) -> str:
    """Prove and apply one report; returns a line saying what was done."""
    from snoreloc.siblings import (  # noqa: PLC0415
        hubreport,
        kube,
    )
    from snoreloc_fleet.controller import reconcile  # noqa: PLC0415
    from snoreloc_fleet.hub import credentials  # noqa: PLC0415
    from snoreloc_fleet.resource import site  # noqa: PLC0415

    hub = _hub_block(path)
    (namespace, name), report = _names(path, hub), dict(hub["report"])
    now = dt.datetime.now(dt.UTC)
    carried = _plausible(path, report, now)
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
    status = fleetstate.mapping_of(obj.get("status"))
    issued = fleetstate.mapping_of(status.get(site.STATUS_MEDIA)).get("digest")
    if report.get("siteConfigDigest") != issued:
        raise errors.PermissionDenied(
            f"{path}: the node ran site-config {report.get('siteConfigDigest')}, the Site describes {issued}; "
            "nothing applied",
            hint="The stick was made from an earlier version of the Site (or edited): make a new one.",
        )
    held = fleetstate.report(status.get(site.STATUS_AGENT), now, steps=False)
    if held is not None and held.reported_at is not None and held.reported_at > carried.when:
        return f"{namespace}/{name}: the Site holds a newer report ({held.reported_at.isoformat()}); nothing applied"
    report["source"] = hubreport.Source.IMPORTED
    ref = reconcile.site_ref(namespace, name)
    client.request(
        "PATCH", ref.path("status"), body={"status": {site.STATUS_AGENT: report}}, content_type=kube.MERGE_PATCH
    )
    return f"{namespace}/{name}: report of {report.get('reportedAt')} applied ({carried.run_state})"


def run(args: argparse.Namespace) -> int:
    from snoreloc_fleet.hub import hubaccess  # noqa: PLC0415

    client = hubaccess.client(args)
    try:
        for file in args.files:
            sys.stdout.write(apply(client, pathlib.Path(file)) + "\n")
    finally:
        client.close()
    return 0

"""An older hub for the fleet readers' tests: the hub simulator (over HTTPS) with a Site CRD whose status schema
bounds nothing, as on a hub installed before the report's bounds. A node's report of any shape (numbers out of
range, a list where a mapping belongs, control characters, deep nesting) then reaches `fleet status`, `why`,
`report` and `import-report` as it would there; the readers must hold whatever a hub serves.

Reports are written the way a node writes them: a JSON merge patch of the Site's `status` subresource (the admin's
client stands in for the node's token, which may patch only that). A Site's report key is kept in its report Secret
as the controller keeps it, so `import-report` can be given signed reports without a controller running.
"""

from __future__ import annotations

import base64
import copy
import json
import pathlib
from collections.abc import Iterator, Mapping
from typing import Any

from snoreloc_fleet.controller import reconcile
from snoreloc_fleet.hub import credentials
from snoreloc_fleet.resource import site
from snoreloc_fleet.verbs import install

from hub.conftest import NS, site_object
from snoreloc.adapters import clock, kube
from snoreloc.cli import main
from snoreloc.engine import hubreport
from snoreloc_sim.hub.simulator import HubSimulator

DIGEST = "sha256:" + "0" * 64  # the site-config digest every Site here says its stick carries
KEY = b"older-hub-report-key-0123456789ab"


def open_crd() -> dict[str, Any]:
    """The Site CRD with `status` left open (x-kubernetes-preserve-unknown-fields): the hub keeps any status."""
    crd = copy.deepcopy(site.crd())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["status"] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return crd


def start() -> Iterator[tuple[HubSimulator, kube.Client]]:
    """The older hub with namespace `fleet`, and the admin's client (a generator for a fixture)."""
    with HubSimulator() as hub:
        admin = kube.Client.from_kubeconfig(str(hub.kubeconfig_path), clock=clock.SystemClock())
        try:
            crd = open_crd()
            admin.create(install.KINDS[(crd["apiVersion"], crd["kind"])], crd)
            admin.create(install.KINDS[("v1", "Namespace")], {"metadata": {"name": NS}})
            yield hub, admin
        finally:
            admin.close()


def put_site(admin: kube.Client, name: str, status: Mapping[str, Any]) -> None:
    """Site `name` (a valid spec) whose status is `status`, written through the status subresource."""
    admin.create(reconcile.SITES, site_object(name))
    write_status(admin, name, status)


def write_status(admin: kube.Client, name: str, status: Mapping[str, Any]) -> None:
    ref = reconcile.site_ref(NS, name)
    admin.request("PATCH", ref.path("status"), body={"status": dict(status)}, content_type=kube.MERGE_PATCH)


def keep_key(admin: kube.Client, name: str) -> None:
    """Site `name`'s report Secret holding `KEY`, as the controller issues it."""
    data = {credentials.REPORT_KEY: base64.b64encode(KEY).decode()}
    meta = {"name": credentials.report_secret_name(name), "namespace": NS}
    admin.create(kube.SECRETS, {"metadata": meta, "data": data})


def carried(path: pathlib.Path, name: str, report: Any, *, text: str | None = None) -> pathlib.Path:
    """What `snoreloc status --output json` carries back for Site `name`: `report`, signed with `KEY` (`text`, when
    given, is written instead of the JSON: for reports JSON cannot express, such as deep nesting)."""
    try:
        signature = hubreport.sign(KEY, NS, name, report)
    except (AttributeError, TypeError, ValueError, RecursionError):  # not a mapping, or text no node can sign
        signature = "hmac-sha256:0"
    hub = {"namespace": NS, "name": name, "report": report, "signature": signature}
    path.write_text(text if text is not None else json.dumps({"state": "done", "hub": hub}))
    return path


def fleet(hub: HubSimulator, *argv: str) -> int:
    """`snoreloc fleet ARGV... --kubeconfig HUB` as a person runs it; its exit code."""
    return main.main(["fleet", *argv, "--kubeconfig", str(hub.kubeconfig_path)])

"""Shelf life on the hub (issue 37), against the hub simulator over HTTPS with the real controller: a Site's horizon
from the depot's seal record (`spec.shelf`) before its node reports, the node's own report of it taking precedence,
both shown in `status.shelf` (what `kubectl get sites` prints), `fleet status --shelf` (soonest first, days left;
table and JSON) and `fleet report --html`; a report with an implausible horizon refused by the schema. The node's
reports are written as a node writes them: through each site's own reporting token."""

from __future__ import annotations

import datetime as dt
import json
import pathlib
from collections.abc import Callable
from typing import Any

import pytest
from snoreloc_fleet.resource import site

from hubsim.test_hub_kubectl import KUBECTL
from snoreloc.adapters import kube
from snoreloc.cli import main
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import (
    NS,
    SITES,
    Running,
    get_site,
    ready_site,
    report_kubeconfig,
    request_credential,
    site_client,
    site_object,
    wait_for,
)

SIGNER = "kube-apiserver-to-kubelet-signer"


def _stamp(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _in_days(days: float) -> str:
    return _stamp(dt.datetime.now(dt.UTC) + dt.timedelta(days=days, hours=1))


def _report(hub: HubSimulator, admin: kube.Client, name: str, shelf: dict[str, Any]) -> None:
    """Site `name`'s node reports a run in progress with its horizon, through its own token."""
    obj = request_credential(admin, name)
    agent = {
        "runState": "running", "source": "node", "agentVersion": "1.2.3", "step": "shelf",
        "siteConfigDigest": obj["status"]["media"]["digest"], "reportedAt": _stamp(dt.datetime.now(dt.UTC)),
        "shelf": shelf,
    }  # fmt: skip
    own = site_client(hub, report_kubeconfig(admin, name), f"{name}.kubeconfig")
    try:
        own.request("PATCH", kube.Ref(SITES, name, NS).path("status"), body={"status": {site.STATUS_AGENT: agent}},
                    content_type=kube.MERGE_PATCH, retry=False)  # fmt: skip
    finally:
        own.close()


def _shelf_status(admin: kube.Client, name: str, source: str) -> dict[str, Any]:
    found = wait_for(
        f"{name}'s status.shelf from {source}",
        lambda: (
            (s := (get_site(admin, name).get("status") or {}).get(site.STATUS_SHELF)) and s["source"] == source and s
        ),
        timeout=60.0,
    )
    return dict(found)


def test_the_hub_shows_each_sites_must_boot_by_date_soonest_first(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    start_controller()
    depot, reported = _in_days(40), _in_days(9)
    ready_site(admin, "store-201", shelf={"mustBootBy": depot})
    ready_site(admin, "store-202", shelf={"mustBootBy": _in_days(120), "setBy": SIGNER})
    ready_site(admin, "store-203")  # no seal record: its date is unknown
    assert _shelf_status(admin, "store-201", site.SHELF_INVENTORY) == {"mustBootBy": depot, "source": "inventory"}
    assert site.STATUS_SHELF not in get_site(admin, "store-203")["status"]

    sealed = _stamp(dt.datetime.now(dt.UTC) - dt.timedelta(days=200))
    _report(hub, admin, "store-202", {"mustBootBy": reported, "setBy": SIGNER, "sealedAt": sealed})
    assert _shelf_status(admin, "store-202", site.SHELF_REPORTED) == {
        "mustBootBy": reported, "setBy": SIGNER, "sealedAt": sealed, "source": "reported",
    }  # fmt: skip  # the node's own word beats the depot's

    hub_args = ["-n", NS, "--kubeconfig", str(hub.kubeconfig_path)]
    capsys.readouterr()
    assert main.main(["fleet", "status", "--shelf", *hub_args]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0] == "2 sites not yet relocated with a known must-boot-by date, soonest first"
    assert table[1].split()[:4] == ["store-202", "InProgress", reported[:10], "9"]
    assert SIGNER in table[1] and "(reported)" in table[1]
    assert table[2].split()[:4] == ["store-201", "Ready", depot[:10], "40"] and "(inventory)" in table[2]
    assert table[3] == "1 sites not yet relocated have no known must-boot-by date (spec.shelf, or a report)"

    assert main.main(["fleet", "status", "--shelf", "-o", "json", *hub_args]) == 0
    listed = json.loads(capsys.readouterr().out)["shelf"]
    assert [(s["name"], s["daysLeft"], s["source"]) for s in listed] == [
        ("store-202", 9, "reported"), ("store-201", 40, "inventory"),
    ]  # fmt: skip
    assert listed[0]["sealedAt"] == sealed.replace("Z", "+00:00")

    page = tmp_path / "fleet.html"
    assert main.main(["fleet", "report", "--html", str(page), *hub_args]) == 0
    html = page.read_text()
    assert '<h2 id="shelf">Shelf life: ship first</h2>' in html
    assert html.index("store-202</td>") < html.index("store-201</td>")
    assert '<td class="soon">9 days left</td>' in html and "<td>40 days left</td>" in html

    if KUBECTL is not None:
        import subprocess  # noqa: PLC0415

        printed = subprocess.run(
            [str(KUBECTL), "--kubeconfig", str(hub.kubeconfig_path), "get", "sites", "-n", NS],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert "MUST-BOOT-BY" in printed.splitlines()[0] and depot in printed


def test_an_implausible_horizon_is_refused_from_a_node_and_from_a_depot(
    hub: HubSimulator, admin: kube.Client, start_controller: Callable[..., Running]
) -> None:
    start_controller()
    ready_site(admin, "store-211")
    with pytest.raises(kube.Invalid, match="shelf"):
        _report(hub, admin, "store-211", {"mustBootBy": "next spring", "setBy": SIGNER})
    with pytest.raises(kube.Invalid, match="setBy"):
        _report(hub, admin, "store-211", {"mustBootBy": _in_days(3), "setBy": "signer\x1b[2J"})
    with pytest.raises(kube.Invalid, match="mustBootBy"):
        admin.create(SITES, site_object("store-212", shelf={"setBy": SIGNER}))
    assert site.STATUS_SHELF not in (get_site(admin, "store-211").get("status") or {})

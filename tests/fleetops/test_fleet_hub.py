"""The fleet readers and the controller's metrics over HTTPS against the hub simulator.

`fleet status`, `fleet why` and `fleet report` read Sites whose status was written through the status subresource
(as the controller and the nodes write it); the metrics test runs the real controller (kopf, in a thread) with
its metrics served, and checks what a scrape says about the Sites it validated, then evaluates the alerts on it.
"""

from __future__ import annotations

import datetime as dt
import gc
import json
import pathlib
import urllib.parse
from collections.abc import Callable
from typing import Any

import promrules
import pytest
from fleetsites import fleet
from snoreloc_fleet.controller import metrics
from snoreloc_fleet.resource import site

from hub.conftest import NS, SITES, Running, site_config, site_object, wait_for
from snoreloc.adapters import kube
from snoreloc.cli import main as cli
from snoreloc_sim.hub.simulator import HubSimulator


def _put(admin: kube.Client, obj: dict[str, Any]) -> None:
    """Create the Site, then write its status as the controller and the node do: the status subresource."""
    created = admin.create(SITES, {"metadata": {**obj["metadata"], "namespace": NS}, "spec": obj["spec"]})
    ref = kube.Ref(SITES, created["metadata"]["name"], NS)
    admin.request("PATCH", ref.path("status"), body={"status": obj["status"]}, content_type=kube.MERGE_PATCH)


@pytest.fixture
def reported(hub: HubSimulator, admin: kube.Client) -> HubSimulator:
    """The 12 sites of `fleetsites.fleet()`, reports shifted so they are as old now as they were at its NOW."""
    shift = dt.datetime.now(dt.UTC) - dt.datetime(2026, 11, 24, 22, 0, tzinfo=dt.UTC)
    for obj in fleet():
        agent = obj["status"].get(site.STATUS_AGENT)
        if agent:
            moment = dt.datetime.fromisoformat(agent["reportedAt"].replace("Z", "+00:00")) + shift
            agent["reportedAt"] = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
        _put(admin, obj)
    return hub


def _fleet(hub: HubSimulator, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main(["fleet", *argv, "--kubeconfig", str(hub.kubeconfig_path), "-n", NS])
    return code, capsys.readouterr().out


@pytest.mark.hubsimonly  # reads the requests the hub received (the pages)
def test_status_counts_the_hubs_sites_read_in_pages(reported: HubSimulator, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _fleet(reported, capsys, "status", "-o", "json")
    assert code == 0
    document = json.loads(out)
    assert document["total"] == 12
    assert document["byPhase"]["Relocated"] == 5 and document["byPhase"]["Failed"] == 3
    assert document["failureReasons"][0] == {"reason": "RunFailed at settle", "count": 2}
    assert [s["name"] for s in document["silent"]] == ["store-0010"]
    lists = [r.target for r in reported.requests if r.method == "GET" and f"/namespaces/{NS}/sites?" in r.target]
    assert lists and all("limit=500" in target for target in lists)
    assert gc.isenabled()  # off while the Sites were read and reduced (`verbs.common.no_cycle_collection`), then on


@pytest.mark.hubsimonly  # reads the requests the hub received (the selector)
def test_status_selects_a_phase_on_the_hub(reported: HubSimulator, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _fleet(reported, capsys, "status", "--phase", "Failed", "-o", "csv")
    assert code == 0
    assert [line.split(",")[1] for line in out.splitlines()[1:]] == ["store-0006", "store-0007", "store-0008"]
    selector = urllib.parse.quote(f"{site.PHASE_LABEL}=Failed", safe="")
    assert any(f"labelSelector={selector}" in r.target for r in reported.requests)  # selected on the hub


def test_why_reads_one_site(reported: HubSimulator, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _fleet(reported, capsys, "why", "store-0008")
    assert code == 0
    assert out.startswith(f"{NS}/store-0008: Failed (RunFailed)")
    assert "failed in api-wait: api-wait timed out" in out
    assert _fleet(reported, capsys, "why", "store-9999")[0] == 69


def test_report_writes_the_page_from_the_hub(
    reported: HubSimulator, capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    page = tmp_path / "fleet.html"
    code, out = _fleet(reported, capsys, "report", "--html", str(page), "--title", "hub fleet")
    assert code == 0 and "12 sites" in out
    html = page.read_text()
    assert "<title>hub fleet</title>" in html and "RunFailed at settle" in html
    assert f'<details id="t-{NS}-store-0006">' in html


def test_the_controller_serves_its_sites_by_phase_and_the_invalid_alert_fires(
    start_controller: Callable[..., Running], admin: kube.Client, tmp_path: pathlib.Path
) -> None:
    fleet_metrics = metrics.FleetMetrics()
    endpoint = metrics.serve(fleet_metrics, 0, "127.0.0.1")
    try:
        start_controller(metrics=fleet_metrics)
        admin.create(SITES, site_object("store-0001"))
        admin.create(SITES, site_object("store-0002", site_config("store-0002", domain="sno..bad.example.com")))
        url = f"http://127.0.0.1:{endpoint.port}/metrics"

        def phases() -> dict[str, float] | None:
            samples = promrules.scrape(url)
            got = {
                p: samples.get(f'snoreloc_fleet_sites{{namespace="{NS}",phase="{p}"}}', 0.0)
                for p in ("Ready", "Invalid")
            }
            return got if got == {"Ready": 1.0, "Invalid": 1.0} else None

        wait_for("the controller's metrics to show one Ready and one Invalid site", phases)
        samples = promrules.scrape(url)
    finally:
        endpoint.stop()
    assert samples['snoreloc_fleet_api_requests_total{code="2xx",verb="patch"}'] >= 2  # the two status writes
    namespace = {"namespace": NS}
    expected = [
        promrules.alert("SnorelocSiteConfigInvalid", "15m", [(namespace, "1")]),
        promrules.alert("SnorelocSiteFailed", "15m", []),
        promrules.alert("SnorelocSiteSilent", "15m", []),
    ]
    promrules.promtool_test(tmp_path, promrules.series(samples, samples, 10, 20), expected)

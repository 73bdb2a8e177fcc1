"""The controller's metrics, served over HTTP and scraped, and the PrometheusRule's alerts evaluated on them.

Every alert expression is evaluated by Prometheus' own engine (`promtool test rules`, Debian's `prometheus`
package; `.ci/run` installs it) on series made from two real scrapes of the served `/metrics`: one before a
relocation finishes over budget, one after. Without promtool the evaluation tests skip, saying why; the checks
that every metric an alert names is served with the labels it selects run everywhere.
"""

from __future__ import annotations

import datetime as dt
import pathlib
import re
from collections.abc import Iterator

import promrules
import pytest
import yaml
from fleetsites import NOW, fleet, report, site_obj
from snoreloc_fleet.controller import metrics
from snoreloc_fleet.resource import site


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> dt.datetime:
        return self.now


@pytest.fixture
def served() -> Iterator[tuple[metrics.FleetMetrics, Clock, str]]:
    clock = Clock()
    fleet_metrics = metrics.FleetMetrics(now=clock)
    endpoint = metrics.serve(fleet_metrics, 0, "127.0.0.1")
    try:
        yield fleet_metrics, clock, f"http://127.0.0.1:{endpoint.port}/metrics"
    finally:
        endpoint.stop()


def _running_then_done(fleet_metrics: metrics.FleetMetrics, clock: Clock) -> None:
    """The fleet, with store-0005 still running; ten minutes later it reports done after 25 minutes of steps."""
    sites = fleet()
    running = site_obj(
        "store-0005",
        site.Phase.IN_PROGRESS,
        reason=site.Reason.RUNNING,
        agent=report("running", reported=NOW - dt.timedelta(minutes=1), seconds=150.0, upto=6),
    )
    for obj in sites:
        fleet_metrics.observe(running if obj["metadata"]["name"] == "store-0005" else obj)


def test_sites_by_phase_ages_and_a_finished_relocation_are_served(
    served: tuple[metrics.FleetMetrics, Clock, str],
) -> None:
    fleet_metrics, clock, url = served
    _running_then_done(fleet_metrics, clock)
    first = promrules.scrape(url)
    assert first['snoreloc_fleet_sites{namespace="fleet-emea",phase="Failed"}'] == 3
    assert first['snoreloc_fleet_sites{namespace="fleet-emea",phase="InProgress"}'] == 2
    assert first['snoreloc_fleet_sites{namespace="fleet-emea",phase="Pending"}'] == 0
    # the relocations done 30 minutes before the controller first saw them are history, not counted
    assert first["snoreloc_fleet_relocation_duration_seconds_count{}"] == 0
    # running: store-0005 (1 min), store-0009 (2 min), store-0010 (47 min, stale)
    assert first['snoreloc_fleet_report_age_seconds_bucket{le="900.0",running="true"}'] == 2
    assert first['snoreloc_fleet_report_age_seconds_bucket{le="+Inf",running="true"}'] == 3
    clock.now = NOW + dt.timedelta(minutes=10)
    fleet_metrics.observe(fleet()[4] | {})  # store-0005, done (reported 5 minutes before NOW)
    second = promrules.scrape(url)
    assert second["snoreloc_fleet_relocation_duration_seconds_count{}"] == 1
    assert second['snoreloc_fleet_relocation_duration_seconds_bucket{le="1200.0"}'] == 0
    assert second['snoreloc_fleet_relocation_duration_seconds_bucket{le="1500.0"}'] == 1
    assert second['snoreloc_fleet_sites{namespace="fleet-emea",phase="Relocated"}'] == 5
    fleet_metrics.observe(fleet()[4])  # the same report again: not a second relocation
    assert promrules.scrape(url)["snoreloc_fleet_relocation_duration_seconds_count{}"] == 1


def test_reconcile_errors_and_api_requests_by_verb(served: tuple[metrics.FleetMetrics, Clock, str]) -> None:
    fleet_metrics, _, url = served
    path = f"/apis/{site.GROUP}/{site.VERSION}/namespaces/fleet-emea/{site.PLURAL}"
    fleet_metrics.request("GET", path, {"limit": "500"}, "2xx")
    fleet_metrics.request("GET", f"{path}/store-0001", None, "2xx")
    fleet_metrics.request("PATCH", f"{path}/store-0001/status", None, "2xx")
    fleet_metrics.request("PATCH", f"{path}/store-0002/status", None, "409")
    fleet_metrics.error(TimeoutError("slow"))
    samples = promrules.scrape(url)
    assert samples['snoreloc_fleet_api_requests_total{code="2xx",verb="list"}'] == 1
    assert samples['snoreloc_fleet_api_requests_total{code="2xx",verb="get"}'] == 1
    assert samples['snoreloc_fleet_api_requests_total{code="2xx",verb="patch"}'] == 1
    assert samples['snoreloc_fleet_api_requests_total{code="409",verb="patch"}'] == 1
    assert samples['snoreloc_fleet_reconcile_errors_total{reason="TimeoutError"}'] == 1


def test_the_rule_has_the_four_symptom_alerts_and_each_a_runbook() -> None:
    rules = [r for group in promrules.rule()["spec"]["groups"] for r in group["rules"]]
    names = [r["alert"] for r in rules]
    assert names == [
        "SnorelocSiteFailed",
        "SnorelocSiteSilent",
        "SnorelocRelocationOverBudget",
        "SnorelocSiteConfigInvalid",
        "SnorelocWaveHalted",
        "SnorelocShelfHorizonNear",
        "SnorelocBmcDeliveryStuck",
    ]
    docs = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "fleet.md").read_text()
    for rule in rules:
        assert f"#### {rule['alert']}" in docs, f"docs/fleet.md has no runbook paragraph for {rule['alert']}"
        assert rule["annotations"]["runbook_url"] == f"docs/fleet.md#{rule['alert'].lower()}"


def test_every_selector_of_every_alert_matches_a_served_series(served: tuple[metrics.FleetMetrics, Clock, str]) -> None:
    fleet_metrics, clock, url = served
    _running_then_done(fleet_metrics, clock)
    fleet_metrics.observe(fleet()[4])
    fleet_metrics.observe(_shelved("store-0100", days=10, wave="spring"))
    served_series = promrules.scrape(url)
    for group in promrules.rule()["spec"]["groups"]:
        for rule in group["rules"]:
            for name, selector in re.findall(r"(snoreloc_fleet_[a-z_]+)\{([^}]*)\}", rule["expr"]):
                wanted = dict(re.findall(r'(\w+)="([^"]*)"', selector))
                assert any(
                    served_one.startswith(name + "{") and all(f'{k}="{v}"' in served_one for k, v in wanted.items())
                    for served_one in served_series
                ), f"{rule['alert']}: nothing served matches {name}{{{selector}}}"


def test_each_alert_fires_on_what_the_controller_served(
    served: tuple[metrics.FleetMetrics, Clock, str], tmp_path: pathlib.Path
) -> None:
    fleet_metrics, clock, url = served
    _running_then_done(fleet_metrics, clock)
    first = promrules.scrape(url)
    clock.now = NOW + dt.timedelta(minutes=10)
    fleet_metrics.observe(fleet()[4])
    second = promrules.scrape(url)
    namespace = {"namespace": "fleet-emea"}
    expected = [
        promrules.alert("SnorelocSiteFailed", "20m", [(namespace, "3")]),
        promrules.alert("SnorelocSiteSilent", "20m", [({}, "1")]),
        promrules.alert("SnorelocRelocationOverBudget", "20m", [({}, "")]),
        promrules.alert("SnorelocSiteConfigInvalid", "20m", [(namespace, "1")]),
        promrules.alert("SnorelocRelocationOverBudget", "5m", []),  # before store-0005 finished
    ]
    promrules.promtool_test(tmp_path, promrules.series(first, second, switch=10, total=30), expected)


def test_a_healthy_fleet_raises_no_alert(
    served: tuple[metrics.FleetMetrics, Clock, str], tmp_path: pathlib.Path
) -> None:
    fleet_metrics, _, url = served
    for obj in fleet()[:5] + fleet()[-1:]:  # relocated (history) and ready
        fleet_metrics.observe(obj)
    samples = promrules.scrape(url)
    names = ("SnorelocSiteFailed", "SnorelocSiteSilent", "SnorelocRelocationOverBudget", "SnorelocSiteConfigInvalid")
    promrules.promtool_test(
        tmp_path, promrules.series(samples, samples, 10, 30), [promrules.alert(n, "25m", []) for n in names]
    )


def test_the_deployment_serves_metrics_where_the_pod_monitor_scrapes() -> None:
    deploy = promrules.RULES.parent
    deployment = yaml.safe_load((deploy / "deployment.yaml").read_text())
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    port = next(p for p in container["ports"] if p["name"] == "metrics")
    command = container["command"]
    assert command[command.index("--metrics-port") + 1] == str(port["containerPort"])
    monitor = yaml.safe_load((deploy / "podmonitor.yaml").read_text())
    assert monitor["kind"] == "PodMonitor" and monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    assert [e["port"] for e in monitor["spec"]["podMetricsEndpoints"]] == ["metrics"]


def _wave_event(halted: bool) -> dict[str, object]:
    batch = {"index": 0, "size": 5, "state": "Halted" if halted else "Open", "pending": 2, "running": 0,
             "relocated": 0, "failed": 3, "held": 2}  # fmt: skip
    status: dict[str, object] = {"phase": "Halted" if halted else "Progressing", "batches": [batch]}
    if halted:
        status["halt"] = {"batch": 0, "cause": "3 Sites failed with the same cause", "since": "2026-01-01T00:00:00Z"}
    obj = {"metadata": {"namespace": "fleet-emea", "name": "spring"}, "spec": {}, "status": status}
    return {"type": "MODIFIED", "object": obj}


def test_a_halted_wave_is_served_and_raises_its_alert(
    served: tuple[metrics.FleetMetrics, Clock, str], tmp_path: pathlib.Path
) -> None:
    fleet_metrics, _, url = served
    fleet_metrics.seen_wave(_wave_event(halted=False))
    first = promrules.scrape(url)
    assert first['snoreloc_fleet_wave_halted{namespace="fleet-emea",wave="spring"}'] == 0
    assert first['snoreloc_fleet_wave_sites{namespace="fleet-emea",state="failed",wave="spring"}'] == 3
    fleet_metrics.seen_wave(_wave_event(halted=True))
    second = promrules.scrape(url)
    assert second['snoreloc_fleet_wave_halted{namespace="fleet-emea",wave="spring"}'] == 1
    found = next(
        r for g in promrules.rule()["spec"]["groups"] for r in g["rules"] if r["alert"] == "SnorelocWaveHalted"
    )
    labels = {"namespace": "fleet-emea", "wave": "spring"}
    annotations = {
        key: value.replace("{{ $labels.wave }}", "spring").replace("{{ $labels.namespace }}", "fleet-emea")
        for key, value in found["annotations"].items()
    }
    firing = {"exp_labels": {**found["labels"], **labels}, "exp_annotations": annotations}
    expected = [
        {"eval_time": "5m", "alertname": "SnorelocWaveHalted", "exp_alerts": []},
        {"eval_time": "15m", "alertname": "SnorelocWaveHalted", "exp_alerts": [firing]},
    ]
    promrules.promtool_test(tmp_path, promrules.series(first, second, switch=10, total=20), expected)
    fleet_metrics.seen_wave({"type": "DELETED", "object": _wave_event(halted=True)["object"]})
    assert not any("wave" in name for name in promrules.scrape(url))


def _shelved(name: str, *, days: float, wave: str = "", phase: site.Phase = site.Phase.READY) -> dict[str, object]:
    """A Site the depot gave a must-boot-by date `days` after NOW (`spec.shelf`), in `wave` (its gate) or none."""
    obj = site_obj(name, phase)
    obj["spec"]["shelf"] = {"mustBootBy": (NOW + dt.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")}
    if wave:
        gate = {"state": "Held", "wave": wave, "batch": 1, "cause": "", "since": "2026-11-24T20:00:00Z"}
        obj["status"][site.STATUS_GATE] = gate
    return obj


def test_the_days_left_on_the_shelf_are_served_per_wave_and_the_alert_warns_14_days_before(
    served: tuple[metrics.FleetMetrics, Clock, str], tmp_path: pathlib.Path
) -> None:
    fleet_metrics, clock, url = served
    for obj in (
        _shelved("store-0100", days=10, wave="spring"),
        _shelved("store-0101", days=40, wave="spring"),
        _shelved("store-0102", days=-2, wave="spring"),  # past it: counted at le=0
        _shelved("store-0103", days=3),  # in no wave: served, but no wave's alert
        _shelved("store-0104", days=1, wave="spring", phase=site.Phase.RELOCATED),  # booted: not on a shelf
        _shelved("store-0105", days=60, wave="autumn"),
    ):
        fleet_metrics.observe(obj)
    samples = promrules.scrape(url)
    spring = 'namespace="fleet-emea",wave="spring"'
    assert samples[f'snoreloc_fleet_shelf_days_left_bucket{{le="0.0",{spring}}}'] == 1
    assert samples[f'snoreloc_fleet_shelf_days_left_bucket{{le="14.0",{spring}}}'] == 2
    assert samples[f'snoreloc_fleet_shelf_days_left_bucket{{le="+Inf",{spring}}}'] == 3
    assert samples['snoreloc_fleet_shelf_days_left_bucket{le="7.0",namespace="fleet-emea",wave=""}'] == 1
    assert samples['snoreloc_fleet_shelf_days_left_bucket{le="14.0",namespace="fleet-emea",wave="autumn"}'] == 0
    # one series set per namespace and wave, never per Site
    assert not any("store-" in name for name in samples)
    found = next(
        r for g in promrules.rule()["spec"]["groups"] for r in g["rules"] if r["alert"] == "SnorelocShelfHorizonNear"
    )
    labels = {"namespace": "fleet-emea", "wave": "spring"}
    annotations = {
        key: value.replace("{{ $value }}", "2")
        .replace("{{ $labels.wave }}", "spring")
        .replace("{{ $labels.namespace }}", "fleet-emea")
        for key, value in found["annotations"].items()
    }
    firing = {"exp_labels": {**found["labels"], **labels}, "exp_annotations": annotations}
    clock.now = NOW - dt.timedelta(days=30)  # a month earlier: nothing within 14 days but the past one
    fleet_metrics.forget("fleet-emea", "store-0102")
    earlier = promrules.scrape(url)
    expected = [
        {"eval_time": "8m", "alertname": "SnorelocShelfHorizonNear", "exp_alerts": []},
        {"eval_time": "25m", "alertname": "SnorelocShelfHorizonNear", "exp_alerts": [firing]},
    ]
    promrules.promtool_test(tmp_path, promrules.series(earlier, samples, switch=10, total=30), expected)

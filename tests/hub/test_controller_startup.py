"""The controller started before its CRD (a hub's `kubectl apply -k` or Argo CD in any order): it waits, saying so
in its log and in `snoreloc_fleet_site_crd_served`, and serves Sites as soon as the CRD is installed."""

from __future__ import annotations

import logging

import pytest
from snoreloc_fleet.controller import metrics, operator, startup
from snoreloc_fleet.resource import site

from snoreloc.adapters import clock, kube
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import CRDS, SITES, options_for, prepare, remove_namespace, site_object, wait_for, wait_phase


def _without_the_crd(admin: kube.Client) -> None:
    """A hub without the Site CRD: a real hub keeps it between tests, so it is deleted (its Sites with it)."""
    ref = kube.Ref(CRDS, site.CRD_NAME)
    if admin.find(ref) is not None:
        admin.delete(ref)
        wait_for("the Site CRD gone", lambda: admin.find(ref) is None and startup.served(admin) is not None, 120.0)


def test_a_controller_started_before_its_crd_serves_sites_once_it_is_installed(
    hub_target: HubSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=startup.LOG.name)
    admin = kube.Client.from_kubeconfig(str(hub_target.kubeconfig_path), clock=clock.SystemClock())
    _without_the_crd(admin)
    fleet_metrics = metrics.FleetMetrics()
    running = operator.Background(options_for(hub_target, metrics=fleet_metrics))
    try:
        assert running.controller.crd_missing.is_set()
        assert fleet_metrics.registry.get_sample_value("snoreloc_fleet_site_crd_served") == 0
        wait_for("a second look", lambda: sum("waiting for the CRD" in r.getMessage() for r in caplog.records) >= 2)
        assert site.CRD_NAME in caplog.records[-1].getMessage()

        prepare(hub_target)
        admin.create(SITES, site_object("store-1"))
        wait_phase(admin, "store-1", site.Phase.READY, timeout=60.0)
        assert fleet_metrics.registry.get_sample_value("snoreloc_fleet_site_crd_served") == 1
        assert not running.controller.crd_missing.is_set()
        assert any("is served after" in r.getMessage() for r in caplog.records)
    finally:
        running.stop()
        remove_namespace(hub_target, admin)
        admin.close()


@pytest.mark.hubsimonly  # a hub without the Site CRD (a real one keeps it between tests)
def test_a_controller_stopped_while_it_waits_for_its_crd_stops_at_once(hub_sim: HubSimulator) -> None:
    running = operator.Background(options_for(hub_sim), budget=10.0)
    assert running.controller.crd_missing.is_set()
    running.stop()  # within the budget, or it raises


@pytest.mark.hubsimonly  # restarts the hub into its starting window
@pytest.mark.parametrize("hub_options", [{"starting_seconds": 2.0}])
def test_a_controller_started_with_a_starting_hub_waits_out_its_503s(
    hub: HubSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    """A kube-apiserver that starts answers 503 for the Sites' paths until its CRDs are served again (`hub.front`)."""
    caplog.set_level(logging.INFO, logger=startup.LOG.name)
    hub.restart()
    running = operator.Background(options_for(hub))
    admin = kube.Client.from_kubeconfig(str(hub.kubeconfig_path), clock=clock.SystemClock())
    try:
        admin.create(SITES, site_object("store-1"))  # the admin's client retries the 503s
        wait_phase(admin, "store-1", site.Phase.READY)
        assert any("503" in r.getMessage() for r in caplog.records if "waiting for the CRD" in r.getMessage())
    finally:
        admin.close()
        running.stop()

"""The reconcile survives what a hub does to a controller: a restart (it converges on what changed while it was
down, and writes nothing when nothing did), a watch that expired (410 Gone: kopf lists again), two controllers
racing on one Site (409 AlreadyExists on create), a Site edited while its node relocates, and a Site deleted."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

import pytest
from snoreloc_fleet.hub import credentials
from snoreloc_fleet.resource import site

from snoreloc.adapters import kube
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
    stick_site,
    wait_for,
    wait_phase,
)

Start = Callable[..., Running]


def _edit_domain(admin: kube.Client, name: str, domain: str) -> None:
    admin.patch(kube.Ref(SITES, name, NS), {"spec": {"siteConfig": {"domain": domain}}})


def test_a_restarted_controller_converges_and_then_writes_nothing(
    hub: HubSimulator, admin: kube.Client, start_controller: Start
) -> None:
    first = start_controller()
    digest = ready_site(admin, "store-1")["status"]["media"]["digest"]
    first.stop()
    _edit_domain(admin, "store-1", "sno.elsewhere.example.com")  # while no controller runs
    second = start_controller()
    wait_for("the new digest", lambda: get_site(admin, "store-1")["status"]["media"]["digest"] != digest)
    assert (
        get_site(admin, "store-1")["status"]["observedGeneration"]
        == get_site(admin, "store-1")["metadata"]["generation"]
    )
    second.stop()
    third = start_controller()
    wait_for("a reconcile after the restart", lambda: third.controller.counters.reconciles >= 2)
    counters = third.controller.counters
    assert (counters.status_writes, counters.label_writes, counters.events) == (0, 0, 0)


SHORT_HISTORY = {"history_window": 3, "bookmark_seconds": 3600.0}  # a resumed watch soon gets 410; no bookmarks


@pytest.mark.hubsimonly  # restarts the hub with a 3-change watch history
@pytest.mark.parametrize("hub_options", [SHORT_HISTORY])
def test_a_watch_cut_and_resumed_past_the_history_is_listed_again(
    hub: HubSimulator, admin: kube.Client, start_controller: Start, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="kopf")
    start_controller()
    ready_site(admin, "store-1")
    for index in range(10):  # more changes than the hub's history holds
        admin.create(kube.CONFIGMAPS, {"metadata": {"name": f"filler-{index}", "namespace": NS}})
    hub.restart()  # the watch is cut; resuming from its resourceVersion is 410 Gone
    ready_site(admin, "store-2")
    assert any("Restarting the watch-stream" in r.getMessage() for r in caplog.records)


@pytest.mark.hubsimonly  # expires the hub's watches (410) on demand
@pytest.mark.parametrize("hub_options", [SHORT_HISTORY])
def test_an_expired_watch_is_listed_again(
    hub: HubSimulator, admin: kube.Client, start_controller: Start, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="kopf")
    start_controller()
    ready_site(admin, "store-1")
    hub.expire_watches()  # the open watch ends with 410; resuming from its resourceVersion is 410 too
    _edit_domain(admin, "store-1", "sno.after-410.example.com")
    wait_for("the edit reconciled", lambda: get_site(admin, "store-1")["status"]["observedGeneration"] == 2)
    assert any("Restarting the watch-stream" in r.getMessage() for r in caplog.records)


@pytest.mark.hubsimonly  # the hub's injected 409s
def test_a_conflict_on_a_sites_write_is_retried(hub: HubSimulator, admin: kube.Client, start_controller: Start) -> None:
    running = start_controller()
    hub.faults.conflict_next(f"{site.PLURAL}.{site.GROUP}", "store-1", NS, times=2)
    ready_site(admin, "store-1")
    assert [f.split()[0] for f in hub.faults.fired] == ["409", "409"]
    assert running.controller.counters.status_writes == 1


def test_two_controllers_racing_on_the_same_sites_converge(
    hub: HubSimulator, admin: kube.Client, start_controller: Start
) -> None:
    start_controller()
    start_controller()
    names = [f"store-{i}" for i in range(4)]
    for name in names:
        admin.create(SITES, site_object(name))
    for name in names:
        wait_phase(admin, name, site.Phase.READY)
    for name in names:
        request_credential(admin, name)
    for name in names:  # every credential works, whichever controller issued it last
        kubeconfig = wait_for("a settled credential", lambda n=name: report_kubeconfig(admin, n))
        own = site_client(hub, kubeconfig, f"{name}.kubeconfig")
        try:
            own.request("GET", kube.Ref(SITES, name, NS).path("status"), retry=False)
        finally:
            own.close()
    roles = admin.list(credentials.ROLES, NS)
    assert sorted(r["metadata"]["name"] for r in roles) == sorted(f"site-{n}" for n in names)


def test_an_existing_object_of_the_sites_name_is_adopted(
    hub: HubSimulator, admin: kube.Client, start_controller: Start
) -> None:
    admin.create(credentials.SERVICEACCOUNTS, {"metadata": {"name": "site-store-1", "namespace": NS}})
    start_controller()
    obj = admin.create(SITES, site_object("store-1"))
    wait_phase(admin, "store-1", site.Phase.READY)
    request_credential(admin, "store-1")
    account = admin.get(kube.Ref(credentials.SERVICEACCOUNTS, "site-store-1", NS))
    assert account["metadata"]["ownerReferences"][0]["uid"] == obj["metadata"]["uid"]


def _digest(admin: kube.Client) -> str:
    return str(get_site(admin, "store-1")["status"]["media"]["digest"])


def _report(state: str, digest: str) -> dict[str, Any]:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # a report dated ahead is ClockAhead (issue 30)
    agent = {"runState": state, "step": "settle", "source": "node", "siteConfigDigest": digest, "reportedAt": now}
    return {"status": {site.STATUS_AGENT: agent}}


def test_a_site_edited_mid_relocation_is_not_relocated_until_the_node_runs_the_edit(
    hub: HubSimulator, admin: kube.Client, start_controller: Start
) -> None:
    start_controller()
    old = stick_site(admin, "store-1")["status"]["media"]["digest"]
    node = site_client(hub, report_kubeconfig(admin, "store-1"), "node.kubeconfig")
    status = kube.Ref(SITES, "store-1", NS).path("status")

    def send(state: str, digest: str) -> None:
        node.request("PATCH", status, body=_report(state, digest), content_type=kube.MERGE_PATCH, retry=False)

    try:
        send("running", old)
        wait_phase(admin, "store-1", site.Phase.IN_PROGRESS)
        _edit_domain(admin, "store-1", "sno.moved.example.com")
        new = wait_for(
            "the edit's digest", lambda: (d := get_site(admin, "store-1")["status"]["media"]["digest"]) != old and d
        )
        send("done", old)
        obj = wait_phase(admin, "store-1", site.Phase.READY)
        conditions = {c["type"]: c for c in obj["status"]["conditions"]}
        assert (conditions["Relocated"]["status"], conditions["Relocated"]["reason"]) == ("False", "DigestMismatch")
        assert "make a new stick" in conditions["Relocated"]["message"]
        send("done", new)
        wait_phase(admin, "store-1", site.Phase.RELOCATED)
    finally:
        node.close()


def test_a_node_gone_silent_mid_run_turns_stale_on_the_sweep(
    hub: HubSimulator, admin: kube.Client, start_controller: Start
) -> None:
    # The report's time is whole seconds and the controller may take a moment to judge it under load: 4 s of
    # silence leaves a window of at least 3 s to see InProgress before the sweep may call the site Stale (CI at 1.0 s
    # once missed the window entirely).
    start_controller(sweep=0.2, stale_after=4.0)
    digest = stick_site(admin, "store-1")["status"]["media"]["digest"]
    node = site_client(hub, report_kubeconfig(admin, "store-1"), "node.kubeconfig")
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    report = _report("running", digest)
    report["status"][site.STATUS_AGENT]["reportedAt"] = now
    try:
        node.request("PATCH", kube.Ref(SITES, "store-1", NS).path("status"), body=report,
                     content_type=kube.MERGE_PATCH, retry=False)  # fmt: skip
    finally:
        node.close()
    wait_phase(admin, "store-1", site.Phase.IN_PROGRESS)
    obj = wait_phase(admin, "store-1", site.Phase.STALE, timeout=20)  # no event: only the sweep sees time pass
    reporting = next(c for c in obj["status"]["conditions"] if c["type"] == "Reporting")
    assert (reporting["status"], reporting["reason"]) == ("False", "Silent")

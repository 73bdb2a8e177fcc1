"""The controller's API writes against the hub simulator over HTTPS (issue 23): a node's report that only moves the
step costs the controller no write (the node's own patch is the only one); the first report, which moves the phase,
costs the phase label and the status."""

from __future__ import annotations

import pathlib
from collections.abc import Callable

import pytest
from snoreloc_fleet.controller import reconcile
from snoreloc_fleet.resource import site

from snoreloc.adapters import clock, kube
from snoreloc.engine import hubreport, journal
from snoreloc.steps import base
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import (
    NS,
    SITES,
    Running,
    ready_site,
    report_kubeconfig,
    site_client,
    site_config,
    site_object,
    stick_site,
    wait_for,
    wait_phase,
)

STEPS = ["network", "kubelet", "api", "ingress", "operators", "settle"]


def _writes(running: Running) -> tuple[int, int, int, int]:
    """Every API write of the controller (its client's count: credentials too), and its status, label and Event
    writes."""
    counters: reconcile.Counters = running.controller.counters
    return running.controller.client.writes, counters.status_writes, counters.label_writes, counters.events


def _send(client: kube.Client, jour: journal.Journal, digest: str) -> None:
    """What the node's reporter sends (`hubreport.snapshot`) as the merge patch of its Site's status."""
    report = hubreport.snapshot(jour.doc, digest=digest)
    path = kube.Ref(SITES, "store-1", NS).path("status")
    client.request("PATCH", path, body={"status": {site.STATUS_AGENT: report}}, content_type=kube.MERGE_PATCH)


def _reconciled_after(running: Running, send: Callable[[], None]) -> None:
    """`send`, then wait until the controller has reconciled the Site at least twice since (the watch event of that
    write, the sweep; reconciles of one Site run one after the other)."""
    before = running.controller.counters.reconciles
    send()
    wait_for("two reconciles after the report", lambda: running.controller.counters.reconciles >= before + 2)


def test_a_report_that_only_moves_the_step_costs_the_controller_no_write(
    hub: HubSimulator, admin: kube.Client, start_controller: Callable[..., Running], tmp_path: pathlib.Path
) -> None:
    running = start_controller(sweep=0.5)  # a reconcile at least every half second, whatever events arrive
    digest = stick_site(admin, "store-1")["status"]["media"]["digest"]
    node = site_client(hub, report_kubeconfig(admin, "store-1"), "store-1.kubeconfig")
    jour = journal.Journal(tmp_path / "status.json", clock.SystemClock())
    jour.begin_run(site_name="store-1", site_fingerprint="f", order=STEPS, mode="node", site_path="site-config.yaml")
    try:
        ready = _writes(running)
        jour.start_step(STEPS[0], "fp")
        jour.finish_step(STEPS[0], base.StepOutcome())
        _send(node, jour, digest)
        wait_phase(admin, "store-1", site.Phase.IN_PROGRESS)
        first = _writes(running)
        assert [b - a for a, b in zip(ready, first, strict=True)] == [2, 1, 1, 0], "label and status, no Event"
        for step in STEPS[1:]:
            jour.start_step(step, "fp")
            _reconciled_after(running, lambda: _send(node, jour, digest))
            jour.finish_step(step, base.StepOutcome())
            _reconciled_after(running, lambda: _send(node, jour, digest))
        jour.end_run(journal.RunState.DONE)
        _send(node, jour, digest)
        obj = wait_phase(admin, "store-1", site.Phase.RELOCATED)  # the reconciles of the reports before are done
    finally:
        node.close()
    assert obj["status"][site.STATUS_AGENT]["stepsDone"] == len(STEPS)
    # Argo CD's options against pruning a relocated store's Site ride on the phase label's write (no write of its own)
    assert obj["metadata"]["annotations"][site.ARGOCD_SYNC_OPTIONS] == "Prune=false,Delete=false"
    last = _writes(running)
    assert [b - a for a, b in zip(first, last, strict=True)] == [3, 1, 1, 1], "10 step reports: 0; Relocated: 2 + Event"


@pytest.mark.parametrize(
    ("before", "after", "event"),
    [
        (None, "Ready", False),
        ("Pending", "Ready", False),
        ("Ready", "InProgress", False),
        (None, "Invalid", True),
        ("Ready", "Invalid", True),
        ("Invalid", "Ready", False),  # a bulk fix of a template must not post thousands of Events
        ("InProgress", "Stale", True),
        ("Stale", "InProgress", True),
        ("InProgress", "Failed", True),
        ("Failed", "InProgress", True),
        ("InProgress", "Relocated", True),
        ("Relocated", "Relocated", False),
    ],
)
def test_events_only_where_someone_must_look_or_an_outcome_is_reached(
    before: str | None, after: str, event: bool
) -> None:
    assert reconcile.wants_event(before, after) is event


def test_an_invalid_site_gets_a_warning_event_and_a_ready_one_none(
    hub: HubSimulator, admin: kube.Client, controller: object
) -> None:
    admin.create(SITES, site_object("store-9", site_config("store-9", domain="not a domain")))
    wait_phase(admin, "store-9", site.Phase.INVALID)
    ready_site(admin, "store-1")
    events = wait_for("the Invalid Site's Event", lambda: admin.list(reconcile.EVENTS, NS))
    assert [(e["involvedObject"]["name"], e["type"], e["reason"]) for e in events] == [
        ("store-9", "Warning", "InvalidSiteConfig")
    ]

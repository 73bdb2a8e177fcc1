"""Faults a hub test injects: a conflict on the next write, expired watches, a restart, latency."""

from __future__ import annotations

import json
import threading
import time

import kubernetes
import pytest
from kubernetes.client.rest import ApiException

from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import GROUP, PLURAL, VERSION, Call, watch_events, widget

ARGS = (GROUP, VERSION, "default", PLURAL)
PATH = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"


def test_the_next_write_of_an_object_gets_a_409_once(
    hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi
) -> None:
    made = widgets.create_namespaced_custom_object(*ARGS, widget("w"))
    hub_sim.faults.conflict_next(f"{PLURAL}.{GROUP}", "w", "default")
    with pytest.raises(ApiException) as refused:
        widgets.patch_namespaced_custom_object_status(*ARGS, "w", {"status": {"phase": "X"}})
    assert refused.value.status == 409
    message = json.loads(refused.value.body)["message"]
    assert message.startswith(f'Operation cannot be fulfilled on {PLURAL}.{GROUP} "w": the object has been modified')
    current = widgets.get_namespaced_custom_object(*ARGS, "w")
    assert current["metadata"]["resourceVersion"] != made["metadata"]["resourceVersion"]  # another writer was there
    assert (
        widgets.patch_namespaced_custom_object_status(*ARGS, "w", {"status": {"phase": "X"}})["status"]["phase"] == "X"
    )
    assert hub_sim.faults.fired == [f"409 patch {PLURAL}.{GROUP} default/w"]


def test_expiring_watches_ends_open_ones_with_410(
    hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi
) -> None:
    rv = widgets.list_namespaced_custom_object(*ARGS)["metadata"]["resourceVersion"]
    threading.Timer(0.5, hub_sim.expire_watches).start()
    began = time.monotonic()
    (event,) = watch_events(hub_sim, f"{PATH}?watch=true&resourceVersion={rv}&timeoutSeconds=10")
    assert event["type"] == "ERROR" and event["object"]["code"] == 410
    assert time.monotonic() - began < 5


def test_a_restart_drops_open_watches(hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi) -> None:
    rv = widgets.list_namespaced_custom_object(*ARGS)["metadata"]["resourceVersion"]
    threading.Timer(0.5, hub_sim.restart).start()
    began = time.monotonic()
    try:
        events = watch_events(hub_sim, f"{PATH}?watch=true&resourceVersion={rv}&timeoutSeconds=10")
    except OSError:
        events = []
    assert events == [] and time.monotonic() - began < 5
    assert len(widgets.list_namespaced_custom_object(*ARGS)["items"]) == 0  # the hub serves on after it


def test_latency_delays_every_request(hub_sim: HubSimulator, raw: Call) -> None:
    hub_sim.faults.latency = 0.3
    began = time.monotonic()
    assert raw("GET", "/api/v1/namespaces").code == 200
    assert time.monotonic() - began >= 0.3

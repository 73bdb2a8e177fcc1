"""Watches resume from a resourceVersion, send bookmarks, end with 410 once the history is gone; lists page."""

from __future__ import annotations

import threading
import time
from typing import Any

import kubernetes
import pytest

from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import GROUP, PLURAL, VERSION, Call, watch_events, widget

ALL = f"/apis/{GROUP}/{VERSION}/{PLURAL}"
DEFAULT = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"
ARGS = (GROUP, VERSION, "default", PLURAL)


def _make(widgets: kubernetes.client.CustomObjectsApi, name: str, labels: dict[str, str] | None = None) -> None:
    body = widget(name)
    if labels:
        body["metadata"]["labels"] = labels
    widgets.create_namespaced_custom_object(*ARGS, body)


def test_a_watch_from_a_list_version_gets_exactly_the_later_changes(
    hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi
) -> None:
    _make(widgets, "a")
    listed = widgets.list_namespaced_custom_object(*ARGS)
    rv = listed["metadata"]["resourceVersion"]
    widgets.patch_namespaced_custom_object(*ARGS, "a", {"spec": {"size": 5}})
    _make(widgets, "b")
    widgets.delete_namespaced_custom_object(*ARGS, "a")
    events = watch_events(hub_sim, f"{DEFAULT}?watch=true&resourceVersion={rv}&timeoutSeconds=1")
    seen = [(e["type"], e["object"]["metadata"]["name"]) for e in events]
    assert seen == [("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "a")]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and versions[0] > int(rv)


def test_a_watch_without_a_version_starts_with_the_current_objects(
    hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi
) -> None:
    _make(widgets, "a")
    _make(widgets, "b")
    events = watch_events(hub_sim, f"{DEFAULT}?watch=true&timeoutSeconds=1")
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a"), ("ADDED", "b")]


def test_the_official_client_watches_live_changes(
    hub_sim: HubSimulator, kube: kubernetes.client.ApiClient, widgets: kubernetes.client.CustomObjectsApi
) -> None:
    rv = widgets.list_namespaced_custom_object(*ARGS)["metadata"]["resourceVersion"]
    timer = threading.Timer(0.3, lambda: _make(widgets, "late"))
    timer.start()
    stream = kubernetes.watch.Watch().stream(
        widgets.list_namespaced_custom_object, *ARGS, resource_version=rv, timeout_seconds=3
    )
    first = next(iter(stream))
    timer.join()
    assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "late"


@pytest.mark.parametrize("hub_options", [{"bookmark_seconds": 0.2}])
def test_a_watch_with_bookmarks_gets_them_with_the_current_version(
    hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi
) -> None:
    rv = widgets.list_namespaced_custom_object(*ARGS)["metadata"]["resourceVersion"]
    _make(widgets, "a")
    events = watch_events(hub_sim, f"{DEFAULT}?watch=true&allowWatchBookmarks=true&resourceVersion={rv}", until=2)
    assert events[0]["type"] == "ADDED"
    mark = events[1]
    assert mark["type"] == "BOOKMARK"
    assert mark["object"]["kind"] == "Widget" and set(mark["object"]["metadata"]) == {"resourceVersion"}
    assert int(mark["object"]["metadata"]["resourceVersion"]) >= int(events[0]["object"]["metadata"]["resourceVersion"])


def test_initial_events_end_with_an_annotated_bookmark(
    hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi
) -> None:
    _make(widgets, "a")
    query = "watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
    events = watch_events(hub_sim, f"{DEFAULT}?{query}", until=2)
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


@pytest.mark.parametrize("hub_options", [{"history_window": 3}])
def test_a_watch_from_a_version_older_than_the_window_gets_410_as_an_error_event(
    hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi, raw: Call
) -> None:
    rv = widgets.list_namespaced_custom_object(*ARGS)["metadata"]["resourceVersion"]
    for index in range(5):
        _make(widgets, f"w{index}")
    (event,) = watch_events(hub_sim, f"{DEFAULT}?watch=true&resourceVersion={rv}")
    assert event["type"] == "ERROR"
    status = event["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
    assert status["message"].startswith(f"too old resource version: {rv} (")
    exact = raw("GET", f"{DEFAULT}?resourceVersion={rv}&resourceVersionMatch=Exact")
    assert exact.code == 410


def test_compaction_ends_open_watches_with_410(
    hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi
) -> None:
    rv = widgets.list_namespaced_custom_object(*ARGS)["metadata"]["resourceVersion"]
    _make(widgets, "a")
    hub_sim.running.api.history.compact()
    (event,) = watch_events(hub_sim, f"{DEFAULT}?watch=true&resourceVersion={rv}")
    assert event["object"]["code"] == 410


def test_timeout_seconds_ends_the_stream(hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi) -> None:
    rv = widgets.list_namespaced_custom_object(*ARGS)["metadata"]["resourceVersion"]
    began = time.monotonic()
    assert watch_events(hub_sim, f"{DEFAULT}?watch=true&resourceVersion={rv}&timeoutSeconds=1") == []
    assert 0.9 <= time.monotonic() - began < 5


def _names(reply: Any) -> list[str]:
    return [item["metadata"]["name"] for item in reply.body["items"]]


def test_label_and_field_selectors(widgets: kubernetes.client.CustomObjectsApi, raw: Call) -> None:
    _make(widgets, "a", {"tier": "gold", "region": "emea"})
    _make(widgets, "b", {"tier": "silver"})
    _make(widgets, "c")
    cases = {
        "labelSelector=tier%3Dgold": ["a"],
        "labelSelector=tier!%3Dgold": ["b", "c"],
        "labelSelector=tier%20in%20(gold,silver)": ["a", "b"],
        "labelSelector=tier%20notin%20(gold)": ["b", "c"],
        "labelSelector=region": ["a"],
        "labelSelector=!region": ["b", "c"],
        "fieldSelector=metadata.name%3Db": ["b"],
        "fieldSelector=metadata.namespace%3Ddefault,metadata.name!%3Db": ["a", "c"],
    }
    for query, expected in cases.items():
        assert _names(raw("GET", f"{DEFAULT}?{query}")) == expected, query


def test_a_watch_with_a_selector_sees_objects_enter_and_leave_it(
    hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi
) -> None:
    _make(widgets, "a")
    rv = widgets.list_namespaced_custom_object(*ARGS)["metadata"]["resourceVersion"]
    widgets.patch_namespaced_custom_object(*ARGS, "a", {"metadata": {"labels": {"tier": "gold"}}})
    widgets.patch_namespaced_custom_object(*ARGS, "a", {"metadata": {"labels": {"tier": "lead"}}})
    events = watch_events(hub_sim, f"{DEFAULT}?watch=true&labelSelector=tier%3Dgold&resourceVersion={rv}", until=2)
    assert [e["type"] for e in events] == ["ADDED", "DELETED"]
    left = events[1]["object"]
    assert left["metadata"]["labels"] == {"tier": "gold"}  # the content it matched, at the change's version
    assert int(left["metadata"]["resourceVersion"]) > int(events[0]["object"]["metadata"]["resourceVersion"])


def test_pages_across_namespaces_with_continue_tokens(
    kube: kubernetes.client.ApiClient, widgets: kubernetes.client.CustomObjectsApi, raw: Call
) -> None:
    kubernetes.client.CoreV1Api(kube).create_namespace({"metadata": {"name": "other"}})
    for namespace in ("default", "other"):
        for index in range(3):
            body = widget(f"w{index}")
            widgets.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    first = raw("GET", f"{ALL}?limit=4")
    assert len(first.body["items"]) == 4 and first.body["metadata"]["remainingItemCount"] == 2
    second = raw("GET", f"{ALL}?limit=4&continue={first.body['metadata']['continue']}")
    assert "continue" not in second.body["metadata"]
    seen = [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in first.body["items"] + second.body["items"]]
    assert seen == [(ns, f"w{i}") for ns in ("default", "other") for i in range(3)]
    assert second.body["metadata"]["resourceVersion"] == first.body["metadata"]["resourceVersion"]
    assert raw("GET", f"{ALL}?limit=4&continue=garbage").code == 400


def test_an_expired_continue_token_is_410_with_a_token_to_go_on(
    hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi, raw: Call
) -> None:
    for index in range(3):
        _make(widgets, f"w{index}")
    token = raw("GET", f"{DEFAULT}?limit=1").body["metadata"]["continue"]
    hub_sim.running.api.history.compact()
    reply = raw("GET", f"{DEFAULT}?limit=1&continue={token}")
    assert reply.code == 410 and reply.body["reason"] == "Expired"
    assert reply.body["message"].startswith("The provided continue parameter is too old")
    rest = raw("GET", f"{DEFAULT}?continue={reply.body['metadata']['continue']}")
    assert _names(rest) == ["w1", "w2"]

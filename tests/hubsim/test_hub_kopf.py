"""The real kopf library runs a tiny operator against the hub: it lists, watches (with bookmarks), patches status,
adds and removes its finalizer, posts Events, and carries on after the hub expires its watch (410) or restarts."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import kopf
import kubernetes
import pytest

from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import GROUP, PLURAL, VERSION, widget

ARGS = (GROUP, VERSION, "default", PLURAL)
WAIT_SECONDS = 20.0


def _until(what: str, check: Callable[[], Any]) -> Any:
    """Poll `check` until it returns something truthy; bounded, and says what it waited for."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"waited {WAIT_SECONDS:.0f}s for {what}")


def _operator(hub: HubSimulator, deleted: list[str]) -> tuple[kopf.OperatorRegistry, kopf.OperatorSettings]:
    registry = kopf.OperatorRegistry()
    settings = kopf.OperatorSettings()
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage()
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage()
    settings.watching.server_timeout = 5
    settings.watching.client_timeout = 10
    settings.networking.request_timeout = 10

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=hub.api_url, ca_data=hub.ca_pem, scheme="Bearer", token=hub.token)

    @kopf.on.create(GROUP, VERSION, PLURAL, registry=registry)
    @kopf.on.update(GROUP, VERSION, PLURAL, field="spec", registry=registry)
    def reconcile(spec: dict[str, Any], meta: dict[str, Any], body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        patch.status["phase"] = f"size-{spec['size']}"
        patch.status["observedGeneration"] = meta["generation"]
        kopf.info(body, reason="Reconciled", message=f"size {spec['size']}")

    @kopf.on.delete(GROUP, VERSION, PLURAL, registry=registry)
    def delete(name: str, **_: Any) -> None:
        deleted.append(name)

    return registry, settings


@pytest.fixture
def kopf_scope() -> dict[str, Any]:
    return {"clusterwide": True}


@pytest.fixture
def operator(
    hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi, kopf_scope: dict[str, Any]
) -> Iterator[list[str]]:
    """kopf running the operator in a thread (standalone; cluster-wide unless `kopf_scope` says) until the end."""
    deleted: list[str] = []
    registry, settings = _operator(hub_sim, deleted)
    stop, ready = threading.Event(), threading.Event()

    def run() -> None:
        kopf.run(
            registry=registry,
            settings=settings,
            standalone=True,
            stop_flag=stop,
            ready_flag=ready,
            **kopf_scope,
        )

    thread = threading.Thread(target=run, name="kopf", daemon=True)
    thread.start()
    assert ready.wait(WAIT_SECONDS), "kopf did not start"
    yield deleted
    stop.set()
    thread.join(WAIT_SECONDS)
    assert not thread.is_alive(), "kopf did not stop"


def _phase(widgets: kubernetes.client.CustomObjectsApi, name: str) -> str | None:
    found = widgets.get_namespaced_custom_object(*ARGS, name)
    return (found.get("status") or {}).get("phase")


@pytest.mark.parametrize("hub_options", [{"bookmark_seconds": 0.5}])
def test_kopf_reconciles_widgets_through_410_and_a_restart(
    hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi, operator: list[str], kube: Any
) -> None:
    widgets.create_namespaced_custom_object(*ARGS, widget("w1", size=2))
    _until("w1 reconciled", lambda: _phase(widgets, "w1") == "size-2")
    finalizers = widgets.get_namespaced_custom_object(*ARGS, "w1")["metadata"].get("finalizers")
    assert finalizers == ["kopf.zalando.org/KopfFinalizerMarker"]

    widgets.patch_namespaced_custom_object(*ARGS, "w1", {"spec": {"size": 5}})
    _until("w1's update reconciled", lambda: _phase(widgets, "w1") == "size-5")
    assert widgets.get_namespaced_custom_object(*ARGS, "w1")["status"]["observedGeneration"] == 2

    hub_sim.expire_watches()  # kopf's watch ends with 410; it must relist and go on
    widgets.create_namespaced_custom_object(*ARGS, widget("w2", size=3))
    _until("w2 reconciled after a 410", lambda: _phase(widgets, "w2") == "size-3")

    hub_sim.restart()  # every connection dropped
    widgets.create_namespaced_custom_object(*ARGS, widget("w3", size=4))
    _until("w3 reconciled after a restart", lambda: _phase(widgets, "w3") == "size-4")

    widgets.delete_namespaced_custom_object(*ARGS, "w1")
    _until("w1's finalizer released", lambda: not any(
        i["metadata"]["name"] == "w1" for i in widgets.list_namespaced_custom_object(*ARGS)["items"]))  # fmt: skip
    assert operator == ["w1"]
    core = kubernetes.client.CoreV1Api(kube)
    _until("kopf's Events about w1", lambda: any(
        e.involved_object.name == "w1" and e.reason == "Reconciled" and e.message == "size 5"
        for e in core.list_namespaced_event("default").items))  # fmt: skip


@pytest.mark.parametrize("kopf_scope", [{"namespaces": ["default"]}])
def test_kopf_serves_one_namespace(
    hub_sim: HubSimulator, kube: Any, widgets: kubernetes.client.CustomObjectsApi, operator: list[str]
) -> None:
    kubernetes.client.CoreV1Api(kube).create_namespace({"metadata": {"name": "elsewhere"}})
    widgets.create_namespaced_custom_object(GROUP, VERSION, "elsewhere", PLURAL, widget("outside"))
    widgets.create_namespaced_custom_object(*ARGS, widget("inside", size=7))
    _until("inside reconciled", lambda: _phase(widgets, "inside") == "size-7")
    outside = widgets.get_namespaced_custom_object(GROUP, VERSION, "elsewhere", PLURAL, "outside")
    assert "status" not in outside and "finalizers" not in outside["metadata"]

"""Fixtures for the hub simulator's tests: an official client bound to `hub_sim`, raw HTTPS calls (status codes,
headers and bodies the client hides), and a test CRD (`widgets.hubsim.example.com`) with a status subresource and
printer columns."""

from __future__ import annotations

import copy
import http.client
import json
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from snoreloc_sim.hub.simulator import HubSimulator

GROUP, VERSION, PLURAL = "hubsim.example.com", "v1", "widgets"
WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {"size": {"type": "integer", "minimum": 1}, "color": {"type": "string", "default": "grey"}},
        },
        "status": {
            "type": "object",
            "properties": {
                "phase": {"type": "string"},
                "step": {"type": "string"},
                "observedGeneration": {"type": "integer"},
            },
        },
    },
}


def widget_crd(scope: str = "Namespaced", *, columns: bool = True) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": VERSION,
        "served": True,
        "storage": True,
        "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": copy.deepcopy(WIDGET_SCHEMA)},  # a test may add rules to its own
    }
    if columns:
        version["additionalPrinterColumns"] = [
            {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": scope,
            "names": {
                "plural": PLURAL,
                "singular": "widget",
                "kind": "Widget",
                "shortNames": ["wg"],
                "categories": ["gadgets"],
            },
            "versions": [version],
        },
    }


def widget(name: str, size: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": size},
        **extra,
    }


@dataclass(frozen=True)
class Reply:
    code: int
    headers: dict[str, str]
    body: Any


def call(
    hub: HubSimulator,
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str | None = None,
    content_type: str = "application/json",
    accept: str = "application/json",
    timeout: float = 10.0,
) -> Reply:
    """One request on a fresh connection, with the admin token unless another is given."""
    context = ssl.create_default_context(cadata=hub.ca_pem.decode())
    connection = http.client.HTTPSConnection("127.0.0.1", hub.running.listener.port, context=context, timeout=timeout)
    headers = {"Content-Type": content_type, "Accept": accept}
    if token != "":
        headers["Authorization"] = f"Bearer {hub.token if token is None else token}"
    payload = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    try:
        connection.request(method, path, body=payload, headers=headers)
        response = connection.getresponse()
        text = response.read().decode()
        is_json = response.getheader("Content-Type", "").startswith("application/json")
        parsed = json.loads(text) if is_json and "\n" not in text.strip() else text
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, parsed)
    finally:
        connection.close()


Call = Callable[..., Reply]


@pytest.fixture
def raw(hub_sim: HubSimulator) -> Call:
    def bound(method: str, path: str, body: Any = None, **options: Any) -> Reply:
        return call(hub_sim, method, path, body, **options)

    return bound


@pytest.fixture
def kube(hub_sim: HubSimulator) -> Iterator[kubernetes.client.ApiClient]:
    client = kubernetes.config.new_client_from_config(str(hub_sim.kubeconfig_path))
    yield client
    client.close()


@pytest.fixture
def widgets(kube: kubernetes.client.ApiClient) -> kubernetes.client.CustomObjectsApi:
    """The widget CRD created, and a client for its objects."""
    kubernetes.client.ApiextensionsV1Api(kube).create_custom_resource_definition(widget_crd())
    return kubernetes.client.CustomObjectsApi(kube)


def watch_events(
    hub: HubSimulator, path: str, *, until: int = 100, timeout: float = 10.0, accept: str = "application/json"
) -> list[dict[str, Any]]:
    """The events of one watch request (read line by line) until `until` events or the server ends the stream."""
    context = ssl.create_default_context(cadata=hub.ca_pem.decode())
    connection = http.client.HTTPSConnection("127.0.0.1", hub.running.listener.port, context=context, timeout=timeout)
    try:
        connection.request("GET", path, headers={"Authorization": f"Bearer {hub.token}", "Accept": accept})
        response = connection.getresponse()
        assert response.status == 200, response.read()
        events: list[dict[str, Any]] = []
        while len(events) < until:
            line = response.readline()
            if not line:
                break
            events.append(json.loads(line))
        return events
    finally:
        connection.close()


def client_for(hub: HubSimulator, token: str) -> kubernetes.client.ApiClient:
    """An official client speaking to the hub with `token` (a ServiceAccount's, not the admin's)."""
    ca = hub.workdir / "ca.crt"
    ca.write_bytes(hub.ca_pem)
    configuration = kubernetes.client.Configuration()
    configuration.host = hub.api_url
    configuration.ssl_ca_cert = str(ca)
    configuration.api_key = {"authorization": f"Bearer {token}"}
    return kubernetes.client.ApiClient(configuration)


def eventually(what: str, check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait until `check()` holds, at most `timeout` seconds: what kube-controller-manager's controllers (garbage
    collection, namespace emptying) do after the request that set them off has been answered."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        time.sleep(0.05)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here is of the hub simulator itself: `hubsimonly` (skipped against a real hub)."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.hubsimonly)

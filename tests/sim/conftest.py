"""Fixtures for the simulator's protocol tests: raw HTTPS calls (for what the kubernetes client hides: status
codes, headers, dropped connections) and an official client bound to the `sim` fixture."""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import kubernetes
import pytest

from snoreloc_sim.openshift import simulator


@dataclass(frozen=True)
class Reply:
    code: int
    headers: dict[str, str]
    body: Any


def tls_context(sim: simulator.Simulator) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=sim.ca_pem.decode())


def call(
    sim: simulator.Simulator,
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str | None = None,
    content_type: str = "application/json",
    timeout: float = 10.0,
) -> Reply:
    """One request on a fresh connection; raises OSError/HTTPException when the server drops it."""
    connection = http.client.HTTPSConnection(
        "127.0.0.1", sim.running.api.port, context=tls_context(sim), timeout=timeout
    )
    headers = {"Content-Type": content_type, "Authorization": f"Bearer {sim.token if token is None else token}"}
    payload = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    try:
        connection.request(method, path, body=payload, headers=headers)
        response = connection.getresponse()
        raw = response.read()
        text = raw.decode()
        parsed = json.loads(text) if response.getheader("Content-Type", "").startswith("application/json") else text
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, parsed)
    finally:
        connection.close()


def api_client(sim: simulator.Simulator) -> kubernetes.client.ApiClient:
    return kubernetes.config.new_client_from_config(str(sim.kubeconfig_path))


Call = Callable[..., Reply]


@pytest.fixture
def raw(sim: simulator.Simulator) -> Call:
    """`raw(method, path, body=None, token=..., content_type=..., timeout=...)` against the running `sim`."""

    def bound(method: str, path: str, body: Any = None, **options: Any) -> Reply:
        return call(sim, method, path, body, **options)

    return bound


@pytest.fixture
def kube(sim: simulator.Simulator) -> kubernetes.client.ApiClient:
    return api_client(sim)

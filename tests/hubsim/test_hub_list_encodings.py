"""A list's page is joined from each object's kept JSON encoding: byte for byte what encoding the objects gives,
for the version each object has now (writes and concurrent bumps included), within a bounded memory."""

from __future__ import annotations

import http.client
import json
import ssl
from typing import Any

import kubernetes

from snoreloc_sim.hub import encodings
from snoreloc_sim.hub.simulator import HubSimulator
from snoreloc_sim.kube import model

from .conftest import GROUP, PLURAL, VERSION, widget

DEFAULT = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"
ARGS = (GROUP, VERSION, "default", PLURAL)


def _get_bytes(hub: HubSimulator, path: str) -> tuple[str, bytes]:
    """(Content-Type, body) of a GET, the body as it came off the wire."""
    context = ssl.create_default_context(cadata=hub.ca_pem.decode())
    connection = http.client.HTTPSConnection("127.0.0.1", hub.running.listener.port, context=context, timeout=10)
    try:
        connection.request("GET", path, headers={"Authorization": f"Bearer {hub.token}", "Accept": "application/json"})
        response = connection.getresponse()
        assert response.status == 200
        return response.getheader("Content-Type", ""), response.read()
    finally:
        connection.close()


def _expected(hub: HubSimulator, meta: dict[str, Any], names: list[str]) -> bytes:
    """The page as `json.dumps` of the stored objects gives it."""
    rtype = hub.cluster.types[f"{PLURAL}.{GROUP}"]
    items = [hub.cluster.store.get(rtype, name, "default") for name in names]
    body = {"kind": "WidgetList", "apiVersion": f"{GROUP}/{VERSION}", "metadata": meta, "items": items}
    return json.dumps(body).encode()


def _pages(hub: HubSimulator, limit: int) -> list[bytes]:
    pages, token = [], ""
    while True:
        content_type, raw = _get_bytes(hub, f"{DEFAULT}?limit={limit}" + (f"&continue={token}" if token else ""))
        assert content_type == "application/json"
        pages.append(raw)
        token = json.loads(raw)["metadata"].get("continue", "")
        if not token:
            return pages


def _items(page: bytes) -> bytes:
    """A page's items as they came (its metadata names the list's own resourceVersion, new at each list)."""
    return page.partition(b', "items": [')[2]


def _check(hub: HubSimulator, pages: list[bytes]) -> list[str]:
    """Each page equals the encoding of the stored objects it names; the names, in order."""
    names = []
    for raw in pages:
        body = json.loads(raw)
        shown = [item["metadata"]["name"] for item in body["items"]]
        assert raw == _expected(hub, body["metadata"], shown)
        names += shown
    return names


def test_pages_are_the_stored_objects_encoded_at_their_current_version(
    hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi
) -> None:
    for index in range(7):
        body = widget(f"w{index}", size=index + 1)
        body["metadata"]["annotations"] = {"note": "Zürich ✓", "ratio": "0.5"}  # escaped as json.dumps escapes
        widgets.create_namespaced_custom_object(*ARGS, body)
    cache = hub_sim.running.api.encodings
    first = _pages(hub_sim, 3)
    assert _check(hub_sim, first) == [f"w{i}" for i in range(7)] and len(first) == 3
    misses = cache.misses
    again = _pages(hub_sim, 3)
    assert [_items(raw) for raw in again] == [_items(raw) for raw in first]  # the same bytes, from the cache
    assert cache.misses == misses and cache.hits >= 7

    widgets.patch_namespaced_custom_object_status(*ARGS, "w2", {"status": {"phase": "Ready", "step": "ünïcode"}})
    widgets.patch_namespaced_custom_object(*ARGS, "w5", {"spec": {"size": 9}})
    widgets.delete_namespaced_custom_object(*ARGS, "w0")
    hub_sim.cluster.store.bump(hub_sim.cluster.types[f"{PLURAL}.{GROUP}"], "w6", "default")  # rv moves in place
    after = _pages(hub_sim, 3)
    assert _check(hub_sim, after) == [f"w{i}" for i in range(1, 7)]
    listed = {item["metadata"]["name"]: item for raw in after for item in json.loads(raw)["items"]}
    assert listed["w2"]["status"] == {"phase": "Ready", "step": "ünïcode"}
    assert listed["w5"]["spec"]["size"] == 9
    assert cache.misses == misses + 3  # only the three changed objects were encoded again


def test_a_table_list_is_still_printed_from_the_objects(
    hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi
) -> None:
    widgets.create_namespaced_custom_object(*ARGS, widget("w0", size=4))
    context = ssl.create_default_context(cadata=hub_sim.ca_pem.decode())
    connection = http.client.HTTPSConnection("127.0.0.1", hub_sim.running.listener.port, context=context, timeout=10)
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io"
    connection.request("GET", DEFAULT, headers={"Authorization": f"Bearer {hub_sim.token}", "Accept": accept})
    table = json.loads(connection.getresponse().read())
    connection.close()
    assert table["kind"] == "Table" and [row["cells"][0] for row in table["rows"]] == ["w0"]


def _stored(name: str, version: str, size: int) -> dict[str, Any]:
    meta = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": version}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"blob": "x" * size}}


def test_the_cache_stays_within_its_budget_and_exact_beyond_it() -> None:
    objects = [_stored(f"c{i}", "1", 900) for i in range(10)]
    cache = encodings.Encodings(budget=3 * len(json.dumps(objects[0])) + 10)
    for obj in objects * 2:
        encoded = cache.encode(obj)
        assert encoded.raw == json.dumps(obj).encode() and encoded.key == f"ns/{obj['metadata']['name']}"
        assert cache.size <= cache.budget
    assert len(cache) == 3  # the newest three
    changed = model.clone(objects[9])
    changed["data"]["blob"] = "y"
    changed["metadata"]["resourceVersion"] = "2"
    assert cache.encode(changed).raw == json.dumps(changed).encode()  # a new version is encoded again
    assert len(cache) == 3  # and replaces the old one


def test_the_list_body_is_what_json_dumps_gives() -> None:
    items = [_stored("a", "5", 3), _stored("b", "6", 0)]
    meta = {"resourceVersion": "9", "continue": "tok", "remainingItemCount": 4}
    cache = encodings.Encodings()
    joined = encodings.list_body("ConfigMapList", "v1", meta, [cache.encode(obj) for obj in items])
    assert (
        joined == json.dumps({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": meta, "items": items}).encode()
    )
    empty = encodings.list_body("ConfigMapList", "v1", {"resourceVersion": "9"}, [])
    assert json.loads(empty) == {
        "kind": "ConfigMapList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "9"},
        "items": [],
    }
    assert empty == json.dumps(json.loads(empty)).encode()

"""`kubectl get` asks for a Table: the hub answers one with the CRD's printer columns, or the built-in kind's."""

from __future__ import annotations

import kubernetes
import pytest

from snoreloc_sim.hub import tables
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import GROUP, PLURAL, VERSION, Call, watch_events, widget

PATH = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"
AS_TABLE = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


def test_a_crd_list_as_table_has_its_printer_columns(widgets: kubernetes.client.CustomObjectsApi, raw: Call) -> None:
    raw("POST", PATH, widget("w1", size=3))
    raw("PATCH", f"{PATH}/w1/status", {"status": {"phase": "Ready"}}, content_type="application/merge-patch+json")
    raw("POST", PATH, widget("w2"))
    reply = raw("GET", PATH, accept=AS_TABLE)
    assert reply.body["kind"] == "Table" and reply.body["apiVersion"] == "meta.k8s.io/v1"
    assert [c["name"] for c in reply.body["columnDefinitions"]] == ["Name", "Phase", "Size", "Age"]
    assert reply.body["columnDefinitions"][0]["format"] == "name"
    first, second = reply.body["rows"]
    assert first["cells"][:3] == ["w1", "Ready", 3]
    assert first["cells"][3].endswith("s")  # an age, e.g. "0s"
    assert second["cells"][:3] == ["w2", None, 1]
    assert first["object"]["kind"] == "PartialObjectMetadata" and first["object"]["metadata"]["name"] == "w1"
    one = raw("GET", f"{PATH}/w1?includeObject=None", accept=AS_TABLE).body
    assert one["kind"] == "Table" and "object" not in one["rows"][0]


def test_plain_json_is_still_served_without_the_table_accept(
    widgets: kubernetes.client.CustomObjectsApi, raw: Call
) -> None:
    assert raw("GET", PATH).body["kind"] == "WidgetList"


def test_built_in_kinds_print_their_own_columns(raw: Call) -> None:
    raw("POST", "/api/v1/namespaces/default/secrets", {"metadata": {"name": "s"}, "stringData": {"a": "1", "b": "2"}})
    secrets = raw("GET", "/api/v1/namespaces/default/secrets", accept=AS_TABLE).body
    assert [c["name"] for c in secrets["columnDefinitions"]] == ["Name", "Type", "Data", "Age"]
    assert secrets["rows"][0]["cells"][:3] == ["s", "Opaque", 2]
    namespaces = raw("GET", "/api/v1/namespaces", accept=AS_TABLE).body
    assert ["default", "Active"] in [row["cells"][:2] for row in namespaces["rows"]]
    roles = raw("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles", accept=AS_TABLE).body
    assert [c["name"] for c in roles["columnDefinitions"]] == ["Name", "Created At"]


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(-5, "<invalid>"), (-1, "0s"), (59, "59s"), (119, "119s"), (120, "2m"), (150, "2m30s"), (700, "11m"),
     (3 * 3600, "3h"), (3 * 3600 + 60, "3h1m"), (30 * 3600, "30h"), (50 * 3600, "2d2h"), (10 * 86400, "10d"),
     (800 * 86400, "2y70d"), (9 * 365 * 86400, "9y")],
)  # fmt: skip
def test_ages_read_as_kubectl_prints_them(seconds: int, shown: str) -> None:
    assert tables.human_duration(seconds) == shown


def test_printer_column_paths() -> None:
    obj = {"status": {"conditions": [{"type": "A", "status": "False"}, {"type": "Ready", "status": "True"}]},
           "metadata": {"annotations": {"x.io/y": "z"}}, "spec": {"items": [1, 2]}}  # fmt: skip
    assert tables.find(obj, '.status.conditions[?(@.type=="Ready")].status') == "True"
    assert tables.find(obj, ".metadata.annotations['x.io/y']") == "z"
    assert tables.find(obj, ".spec.items[1]") == 2
    assert tables.cell("string", tables.find(obj, ".spec.missing")) is None
    assert tables.cell("integer", "3") is None  # the wrong type prints nothing


def test_a_watch_asked_as_table_gets_one_row_tables(
    hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi, raw: Call
) -> None:
    rv = raw("GET", PATH).body["metadata"]["resourceVersion"]
    raw("POST", PATH, widget("w1", size=4))
    events = table_watch(hub_sim, f"{PATH}?watch=true&resourceVersion={rv}&timeoutSeconds=1")
    (event,) = events
    assert event["type"] == "ADDED" and event["object"]["kind"] == "Table"
    assert event["object"]["rows"][0]["cells"][:3] == ["w1", None, 4]


def table_watch(hub: HubSimulator, path: str) -> list[dict[str, object]]:
    return watch_events(hub, path, accept=AS_TABLE)

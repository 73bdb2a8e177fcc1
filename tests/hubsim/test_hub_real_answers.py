"""Where the hub simulator answers as a real kube-apiserver does and an older simulator did not (issue 34), each
with the source its module cites: custom resources come back with their keys sorted (`hub.sortedkeys`), the garbage
collector and the namespace controller act after the request has been answered (`hub.lifecycle`,
`hub.namespaces`), and a starting server answers 503, not 404, for paths it does not serve yet (`hub.front`)."""

from __future__ import annotations

import time

import kubernetes
import pytest

from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import GROUP, PLURAL, VERSION, Call, eventually, watch_events, widget

PATH = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"


def test_a_custom_resource_comes_back_with_its_keys_sorted_everywhere(
    hub_sim: HubSimulator, widgets: kubernetes.client.CustomObjectsApi, raw: Call
) -> None:
    body = widget("w")
    body["metadata"]["labels"] = {"zone": "b", "app": "a"}
    created = raw("POST", PATH, body).body
    rv = created["metadata"]["resourceVersion"]
    read = raw("GET", f"{PATH}/w").body
    listed = raw("GET", PATH).body["items"][0]
    raw("PATCH", f"{PATH}/w", {"metadata": {"labels": {"middle": "m"}}}, content_type="application/merge-patch+json")
    event = watch_events(hub_sim, f"{PATH}?watch=true&resourceVersion={rv}", until=1)[0]["object"]
    for obj in (created, read, listed, event):
        assert list(obj) == sorted(obj)
        assert list(obj["metadata"]) == sorted(obj["metadata"])
        assert list(obj["metadata"]["labels"]) == sorted(obj["metadata"]["labels"])
    namespace = raw("GET", "/api/v1/namespaces/default").body
    assert list(namespace) != sorted(namespace), "built-in kinds keep their own order (a Go struct's fields')"


def test_dependents_outlive_their_owners_delete_for_a_moment(
    widgets: kubernetes.client.CustomObjectsApi, raw: Call
) -> None:
    owner = raw("POST", PATH, widget("owner")).body
    ref = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "name": "owner", "uid": owner["metadata"]["uid"]}
    raw("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "dep", "ownerReferences": [ref]}})
    began = time.monotonic()
    assert raw("DELETE", f"{PATH}/owner").code == 200
    assert raw("GET", "/api/v1/namespaces/default/configmaps/dep").code == 200
    eventually("the dependent collected", lambda: raw("GET", "/api/v1/namespaces/default/configmaps/dep").code == 404)
    assert time.monotonic() - began < 5


def test_an_empty_namespace_is_answered_terminating_and_goes_afterwards(raw: Call) -> None:
    raw("POST", "/api/v1/namespaces", {"metadata": {"name": "brief"}})
    deleting = raw("DELETE", "/api/v1/namespaces/brief")
    assert deleting.code == 200 and deleting.body["status"]["phase"] == "Terminating"
    eventually("the namespace gone", lambda: raw("GET", "/api/v1/namespaces/brief").code == 404)


@pytest.mark.parametrize("hub_options", [{"starting_seconds": 1.5}])
def test_a_starting_hub_answers_503_where_it_will_answer_404(hub_sim: HubSimulator, raw: Call) -> None:
    unserved = f"/apis/{GROUP}/{VERSION}"
    starting = raw("GET", unserved)
    assert starting.code == 503 and starting.headers["retry-after"] == "5"
    assert starting.body["reason"] == "ServiceUnavailable"
    assert starting.body["details"] == {"retryAfterSeconds": 5}
    assert raw("GET", "/api/v1/namespaces/default/configmaps/absent").code == 404, "an absent object is still 404"
    assert raw("GET", "/api/v1/namespaces").code == 200
    eventually("started", lambda: raw("GET", unserved).code == 404, timeout=10)
    hub_sim.restart()
    assert raw("GET", unserved).code == 503, "a restart starts again"


def test_a_namespace_made_again_before_the_controller_passes_is_left_alone(raw: Call) -> None:
    """The namespace controller's pass belongs to the namespace deleted (its uid), not to one of its name made since
    (`kubectl delete` then `kubectl apply` of the same manifests)."""
    raw("POST", "/api/v1/namespaces", {"metadata": {"name": "again"}})
    raw("POST", "/api/v1/namespaces/again/configmaps", {"metadata": {"name": "first"}})
    raw("DELETE", "/api/v1/namespaces/again")
    raw("DELETE", "/api/v1/namespaces/again/configmaps/first")  # its last object: the namespace goes at once
    eventually("the namespace gone", lambda: raw("GET", "/api/v1/namespaces/again").code == 404)
    raw("POST", "/api/v1/namespaces", {"metadata": {"name": "again"}})
    raw("POST", "/api/v1/namespaces/again/configmaps", {"metadata": {"name": "second"}})
    time.sleep(0.5)  # past the controller's delay (0.2 s)
    assert raw("GET", "/api/v1/namespaces/again/configmaps/second").code == 200
    assert raw("GET", "/api/v1/namespaces/again").body["status"]["phase"] == "Active"

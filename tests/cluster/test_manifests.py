"""The site's extra manifests over HTTPS: applied with server-side apply, a re-run writes nothing, one changed
manifest re-applies only itself, rollback restores exactly, and a manifest the cluster refuses stops the run
before any write with exit 65, naming the file and the object."""

from __future__ import annotations

import time
from typing import Any

import pytest

from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc.engine import pipeline
from snoreloc.engine import plan as plan_text
from snoreloc.siteconfig import model

from .conftest import Relocation, contains, site_config, spec_of

NAMESPACE = "site-apps"
SECRET_VALUE = "s1te-T0ken-0412-never-shown"
CATALOG = kube.Resource("operators.coreos.com", "v1alpha1", "catalogsources", "CatalogSource", True)
NAMESPACE_REF = kube.Ref(kube.Resource("", "v1", "namespaces", "Namespace", False), NAMESPACE)
INFO_REF = kube.Ref(kube.CONFIGMAPS, "site-info", NAMESPACE)
SHARED_REF = kube.Ref(kube.CONFIGMAPS, "shared-settings", "openshift-config")
SECRET_REF = kube.Ref(kube.SECRETS, "site-token", NAMESPACE)
CATALOG_REF = kube.Ref(CATALOG, "site-extra", "openshift-marketplace")


def _objects() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "site-info", "namespace": NAMESPACE},
         "data": {"region": "north", "store": "0412"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "data": {"site": "edge7"},
         "metadata": {"name": SHARED_REF.name, "namespace": SHARED_REF.namespace}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "site-token", "namespace": NAMESPACE},
         "type": "Opaque", "stringData": {"token": SECRET_VALUE}},
        {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
         "metadata": {"name": "site-extra", "namespace": "openshift-marketplace"},
         "spec": {"sourceType": "grpc", "image": "mirror.edge7.example.net:5000/extra/index:v1"}},
    ]  # fmt: skip


def manifests(objects: list[dict[str, Any]]) -> tuple[model.Manifest, ...]:
    return tuple(model.Manifest("manifests/site.yaml", index, 1 + 8 * index, obj) for index, obj in enumerate(objects))


def with_manifests(objects: list[dict[str, Any]] | None = None) -> model.SiteConfig:
    return site_config(extra_manifests=manifests(_objects() if objects is None else objects))


@pytest.fixture
def shared(relocation: Relocation) -> kube.Obj:
    """A ConfigMap the site already has (a user's), which a manifest adds one key to."""
    body = {"metadata": {"name": SHARED_REF.name, "namespace": SHARED_REF.namespace}, "data": {"theirs": "kept"}}
    created = relocation.client.create(kube.CONFIGMAPS, body)
    relocation.undo.append(lambda: relocation.client.delete(SHARED_REF))
    return created


def test_manifests_are_applied_merged_into_existing_objects_and_a_rerun_writes_nothing(
    relocation: Relocation, shared: kube.Obj
) -> None:
    assert relocation.run(with_manifests()).actions["manifests"] == "ran"
    assert relocation.get(INFO_REF)["data"] == {"region": "north", "store": "0412"}
    assert relocation.get(SHARED_REF)["data"] == {"theirs": "kept", "site": "edge7"}
    assert relocation.get(CATALOG_REF)["spec"]["image"].endswith("/extra/index:v1")
    assert relocation.get(SECRET_REF)["data"]["token"]
    managers = {e["manager"]: e["operation"] for e in relocation.get(INFO_REF)["metadata"]["managedFields"]}
    assert managers == {kube.FIELD_MANAGER: "Apply"}
    writes = relocation.client.writes
    assert set(relocation.run(with_manifests()).actions.values()) == {"skipped"}
    assert relocation.client.writes == writes


def test_changing_one_manifest_reapplies_only_that_one(relocation: Relocation) -> None:
    relocation.run(with_manifests())
    changed = _objects()
    changed[1]["data"] = {"region": "south"}  # `store` dropped: the field we owned goes too
    writes = relocation.client.writes
    result = relocation.run(with_manifests(changed))
    assert result.actions["manifests"] == "ran"
    assert {result.actions[name] for name in ("certificates", "cluster-config", "domain", "routes")} == {"skipped"}
    assert relocation.client.writes - writes == 1
    assert relocation.get(INFO_REF)["data"] == {"region": "south"}


def test_rollback_deletes_what_was_created_and_restores_what_existed(
    relocation: Relocation, shared: kube.Obj, caplog: pytest.LogCaptureFixture
) -> None:
    before = spec_of(relocation.get(SHARED_REF))
    relocation.run(with_manifests())
    with caplog.at_level("INFO", logger="snoreloc.progress"):
        result = pipeline.rollback(relocation.paths, relocation.client, relocation.clock)
    # A namespace's deletion is asynchronous (Terminating, content first): rollback waits until it is gone, so a
    # re-run at once does not meet "unable to create new content in namespace ... because it is being terminated".
    assert result.namespaces == (NAMESPACE_REF,)
    assert f"namespace(s) {NAMESPACE} are gone" in caplog.text
    for ref in (INFO_REF, SECRET_REF, CATALOG_REF, NAMESPACE_REF):
        assert relocation.client.find(ref) is None, ref
    after = spec_of(relocation.get(SHARED_REF))
    assert after == before and contains(after, before)
    assert relocation.run(with_manifests()).actions["manifests"] == "ran"  # the namespace can be made again at once


@pytest.mark.parametrize(
    ("broken", "wanted"),
    [
        ({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}},
         "does not serve kind Widget in example.com/v1"),
        ({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
          "metadata": {"name": "bad", "namespace": "openshift-marketplace"}, "spec": {"sourceType": 7}},
         ".spec.sourceType: expected string"),
        # kube-apiserver answers these two with HTTP 500 ("failed to create typed patch object"), which must not
        # be retried as an outage: the manifest is wrong (issue 27: a mistyped key retried for 10 minutes).
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "typo", "namespace": "default"},
          "data": {"store": 412}},
         ".data.store: expected string, got &value.valueUnstructured{Value:412}"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "typo", "namespace": "default"},
          "data": {"a": "b"}, "dataa": {"c": "d"}},
         ".dataa: field not declared in schema"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "lost", "namespace": "no-such-namespace"}},
         'namespaces "no-such-namespace" not found'),
    ],
)  # fmt: skip
def test_a_manifest_the_cluster_refuses_stops_the_run_before_any_write(
    relocation: Relocation, broken: dict[str, Any], wanted: str, caplog: pytest.LogCaptureFixture
) -> None:
    objects = [*_objects(), broken]
    writes, started = relocation.client.writes, time.monotonic()
    with caplog.at_level("INFO", logger="snoreloc.adapters.kube"), pytest.raises(errors.ConfigError) as caught:
        relocation.run(with_manifests(objects))
    assert time.monotonic() - started < 20, "refused at once, not retried as an outage"
    assert not [r for r in caplog.records if "retrying" in r.getMessage()]
    assert caught.value.exit_code == 65
    assert "manifests/site.yaml document 6 (line 41)" in caught.value.message
    assert wanted in caught.value.message
    assert relocation.client.writes == writes
    assert relocation.client.find(NAMESPACE_REF) is None
    assert relocation.status()["steps"].get("certificates", {}).get("state") in (None, "pending")


def test_plan_shows_a_diff_per_object_and_never_the_secret(relocation: Relocation, shared: kube.Obj) -> None:
    result = relocation.run(with_manifests(), dry_run=True)
    planned = next(p for p in result.plans if p.step == "manifests")
    assert [str(c.ref) for c in planned.changes] == [
        str(NAMESPACE_REF),
        str(INFO_REF),
        str(SHARED_REF),
        str(SECRET_REF),
        str(CATALOG_REF),
    ]
    text = plan_text.render(result.plans)
    assert "    +  site: edge7\n       theirs: kept\n" in text
    assert SECRET_VALUE not in text
    assert relocation.client.find(NAMESPACE_REF) is None


def test_manifests_are_left_untouched_by_a_later_unrelated_edit(relocation: Relocation) -> None:
    relocation.run(with_manifests())
    relocation.client.patch(INFO_REF, {"data": {"extra": "by-hand"}})
    result = relocation.run(with_manifests())
    assert result.actions["manifests"] == "skipped"
    assert relocation.get(INFO_REF)["data"]["extra"] == "by-hand"

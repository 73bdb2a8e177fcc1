"""Operator catalogs for a disconnected site over HTTPS: created, re-run, one changed, a user's kept, rolled back."""

from __future__ import annotations

import pytest

from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc.engine import pipeline
from snoreloc.siteconfig import model
from snoreloc.steps.cluster import catalogs

from .conftest import MIRROR, Relocation, contains, site_config, spec_of

OTHER_STEPS = ("certificates", "cluster-config", "ssh-keys", "domain", "routes", "csr", "proxy")
REDHAT = model.CatalogSource("site-redhat", f"{MIRROR}/redhat/redhat-operator-index:v4.16", "Red Hat (site)", "Site")


def catalog_ref(name: str) -> kube.Ref:
    return kube.Ref(kube.CATALOGSOURCES, name, catalogs.NAMESPACE)


def with_catalogs(*sources: model.CatalogSource, disable: bool | None = True) -> model.SiteConfig:
    return site_config(catalog_sources=model.CatalogSources(sources, disable))


def test_catalogs_are_created_defaults_disabled_and_a_rerun_writes_nothing(relocation: Relocation) -> None:
    site = with_catalogs(REDHAT)
    assert relocation.run(site).actions["catalogs"] == "ran"
    created = relocation.get(catalog_ref("site-redhat"))
    assert created["spec"] == {
        "sourceType": "grpc",
        "image": REDHAT.image,
        "displayName": "Red Hat (site)",
        "publisher": "Site",
    }
    assert created["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "snoreloc"
    assert relocation.get(catalogs.OPERATORHUB)["spec"]["disableAllDefaultSources"] is True
    writes = relocation.client.writes
    assert set(relocation.run(site).actions.values()) == {"skipped"}
    assert relocation.client.writes == writes


def test_a_changed_image_reruns_only_the_catalogs_step(relocation: Relocation) -> None:
    relocation.run(with_catalogs(REDHAT))
    moved = model.CatalogSource(REDHAT.name, f"{MIRROR}/redhat/redhat-operator-index:v4.17")
    writes = relocation.client.writes
    result = relocation.run(with_catalogs(moved))
    assert result.actions["catalogs"] == "ran"
    assert {result.actions[name] for name in OTHER_STEPS} == {"skipped"}
    assert relocation.client.writes - writes == 1
    assert relocation.get(catalog_ref(REDHAT.name))["spec"]["image"] == moved.image


def test_a_users_catalog_of_the_same_name_is_refused_not_overwritten(relocation: Relocation) -> None:
    theirs = {"metadata": {"name": "site-redhat", "namespace": catalogs.NAMESPACE}, "spec": {"sourceType": "grpc"}}
    theirs["spec"]["image"] = "quay.io/theirs/index:v1"
    relocation.client.create(kube.CATALOGSOURCES, theirs)
    relocation.undo.append(lambda: relocation.client.delete(catalog_ref("site-redhat")))
    with pytest.raises(errors.PermanentStepError, match="not created by snoreloc"):
        relocation.run(with_catalogs(REDHAT))
    assert relocation.get(catalog_ref("site-redhat"))["spec"]["image"] == "quay.io/theirs/index:v1"


def test_rollback_removes_the_catalogs_and_restores_operatorhub(relocation: Relocation) -> None:
    before = spec_of(relocation.get(catalogs.OPERATORHUB))
    relocation.run(with_catalogs(REDHAT))
    pipeline.rollback(relocation.paths, relocation.client, relocation.clock)
    assert relocation.client.find(catalog_ref("site-redhat")) is None
    after = spec_of(relocation.get(catalogs.OPERATORHUB))
    assert contains(after, before) and after["spec"] == before["spec"]


def test_left_out_disable_leaves_operatorhub_alone(relocation: Relocation) -> None:
    before = relocation.get(catalogs.OPERATORHUB)
    relocation.run(with_catalogs(REDHAT, disable=None))
    assert relocation.get(catalogs.OPERATORHUB)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]

"""Operator catalogs for a disconnected site: CatalogSources on the site's mirror, OperatorHub's defaults off.

Neither touches the node: the marketplace operator starts a catalog pod per CatalogSource and removes the default
sources when OperatorHub `cluster` says `disableAllDefaultSources` ("Using Operator Lifecycle Manager in
disconnected environments", OpenShift docs; the OperatorHub CRD in `../shared/openshift-crds/`). So this step
starts no machine-config or control-plane rollout and the settle steps have nothing extra to wait for.

A CatalogSource of the same name that is not ours (no `app.kubernetes.io/managed-by: snoreloc`) is the user's and
is refused, never overwritten; a CatalogSource of ours that the site-config no longer lists is left in place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc.siteconfig import model
from snoreloc.siteconfig.settings import catalog_sources
from snoreloc.steps import base, context
from snoreloc.steps.openshift import ownership

NAMESPACE = "openshift-marketplace"
OPERATORHUB = kube.Ref(kube.OPERATORHUBS, "cluster")


def catalog_object(source: model.CatalogSource) -> kube.Obj:
    spec: dict[str, Any] = {"sourceType": "grpc", "image": source.image}
    if source.display_name:
        spec["displayName"] = source.display_name
    if source.publisher:
        spec["publisher"] = source.publisher
    metadata = {"name": source.name, "namespace": NAMESPACE, "labels": dict(ownership.MANAGED_BY)}
    return {"apiVersion": kube.CATALOGSOURCES.api_version, "kind": "CatalogSource", "metadata": metadata, "spec": spec}


def _source_change(ctx: context.Context, source: model.CatalogSource) -> base.ObjectChange | None:
    ref = kube.Ref(kube.CATALOGSOURCES, source.name, NAMESPACE)
    current = ctx.kube.find(ref)
    desired = catalog_object(source)
    if current is None:
        return base.create(ref, desired, why="site catalog")
    if not ownership.ours(current):
        raise errors.PermanentStepError(
            f"catalogs: {ref} exists but was not created by snoreloc; not overwriting it",
            hint=f"Give spec.catalogSources an entry another name, or delete {ref} if it is no longer needed.",
        )

    def mutate(obj: kube.Obj) -> kube.Obj:
        obj["spec"] = {**(obj.get("spec") or {}), **desired["spec"]}
        return obj

    change = base.update(ref, current, mutate)
    return (
        None
        if change is None
        else base.ObjectChange(ref, change.action, change.before, change.after, mutate, (), "site catalog")
    )


def _hub_change(ctx: context.Context, disable: bool) -> base.ObjectChange | None:
    current = ctx.kube.find(OPERATORHUB)
    if current is None:
        hub = {"apiVersion": kube.OPERATORHUBS.api_version, "kind": "OperatorHub", "metadata": {"name": "cluster"}}
        return base.create(OPERATORHUB, {**hub, "spec": {"disableAllDefaultSources": disable}}, why="default sources")

    def mutate(obj: kube.Obj) -> kube.Obj:
        obj.setdefault("spec", {})["disableAllDefaultSources"] = disable
        return obj

    return base.update(OPERATORHUB, current, mutate, why="default sources")


def catalog_changes(ctx: context.Context) -> list[base.ObjectChange]:
    site = ctx.site.get(catalog_sources.SETTING)
    if site is None:
        return []
    changes = [_source_change(ctx, source) for source in site.sources]
    if site.disable_default_sources is not None:
        changes.append(_hub_change(ctx, site.disable_default_sources))
    return [change for change in changes if change is not None]


class Catalogs(base.ObjectStep):
    name = "catalogs"
    setting = catalog_sources.SETTING  # the setting this step applies
    description = "creating the site's operator catalogs (no node change)"
    note = catalog_sources.SETTING.cost.note

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {"catalog_sources": ctx.site.get(catalog_sources.SETTING)}

    def changes(self, ctx: context.Context) -> list[base.ObjectChange]:
        return catalog_changes(ctx)


STEP = Catalogs()  # placed by `engine.order.cluster_steps`

"""Cluster configuration the machine-config operator rolls out: pull secret, image mirrors, registry CA.

Each of these makes the MCO update the node, so they are written together in one step: the updates coalesce into
one rollout instead of three. Mirrors use the API the cluster's version reads (ImageContentSourcePolicy before
4.13, ImageDigestMirrorSet/ImageTagMirrorSet after), as one object each with a stable name, so a re-run updates
rather than duplicates. An ImageContentSourcePolicy mirrors by digest only, so tag mirrors on an older cluster are
refused (`require_mirror_support`, called by preflight before anything changes), never rewritten as digest
mirrors. The registry CA is merged into the ConfigMap the cluster already trusts, if it has one.

What is ours is decided by our label (`app.kubernetes.io/managed-by: snoreloc`), never by name alone: a mirror set
that carries our name but not our label is the user's, and is neither deleted nor overwritten. `removeMirrors`
names the user's objects to delete; a name that matches nothing, or that names one of ours, is a warning in the
plan and the report (exit 2), never a silent no-op.
"""

from __future__ import annotations

import base64
import difflib
import json
from collections.abc import Mapping
from typing import Any

from snoreloc import errors, redact
from snoreloc.adapters import kube
from snoreloc.siteconfig import model, schema
from snoreloc.steps import base, context
from snoreloc.steps.openshift import mirrors, ownership

PULL_SECRET = kube.Ref(kube.SECRETS, "pull-secret", "openshift-config")
DIGEST_MIRRORS = "snoreloc-digest-mirrors"
TAG_MIRRORS = "snoreloc-tag-mirrors"
REGISTRY_CA = "snoreloc-registry-ca"
_MCO = (base.MCP_MASTER,)


# --- pull secret ----------------------------------------------------------------------------------------------------


def _current_pull_secret(secret: kube.Obj) -> dict[str, Any]:
    """The cluster's pull secret, its credentials registered as secrets; a broken one reads as empty (and is
    replaced, after a backup, like any other)."""
    encoded = (secret.get("data") or {}).get(".dockerconfigjson", "")
    try:
        doc = json.loads(base64.b64decode(encoded))
    except ValueError:
        return {"auths": {}}
    redact.register_fields(doc, schema.AUTH_SECRET_FIELDS)
    return doc if isinstance(doc, dict) and isinstance(doc.get("auths"), dict) else {"auths": {}}


def desired_pull_secret(site: model.PullSecret, current: dict[str, Any]) -> dict[str, Any]:
    """The site's document (already checked by the loader), or the cluster's with the site's registries merged in."""
    if site.mode is model.PullSecretMode.REPLACE:
        return dict(site.document)
    return {**current, "auths": {**current.get("auths", {}), **site.auths}}


def pull_secret_change(ctx: context.Context) -> base.ObjectChange | None:
    site = ctx.site.pull_secret
    if site is None:
        return None
    secret = ctx.kube.get(PULL_SECRET)
    desired = desired_pull_secret(site, _current_pull_secret(secret))

    def mutate(current: kube.Obj) -> kube.Obj | None:
        if _current_pull_secret(current) == desired:
            return None
        encoded = base64.b64encode(json.dumps(desired, separators=(",", ":")).encode()).decode()
        current.setdefault("data", {})[".dockerconfigjson"] = encoded
        return current

    return base.update(PULL_SECRET, secret, mutate, rollouts=_MCO, why=f"pull secret, {site.mode.value}")


# --- mirrors ------------------------------------------------------------------------------------------------------


def _mirror_entries(wanted: tuple[model.Mirror, ...], *, policy: bool) -> list[dict[str, Any]]:
    entries = []
    for mirror in wanted:
        entry: dict[str, Any] = {"source": mirror.source, "mirrors": list(mirror.mirrors)}
        if policy and mirror.mirror_source_policy:
            entry["mirrorSourcePolicy"] = mirror.mirror_source_policy
        entries.append(entry)
    return entries


def _mirror_object(resource: kube.Resource, name: str, field: str, entries: list[dict[str, Any]]) -> kube.Obj:
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": name, "labels": dict(ownership.MANAGED_BY)},
        "spec": {field: entries},
    }


def _set_spec(ctx: context.Context, ref: kube.Ref, desired: kube.Obj) -> base.ObjectChange | None:
    def merge(current: kube.Obj) -> kube.Obj:
        current["spec"] = desired["spec"]
        return current

    return base.upsert(ctx, ref, desired, merge)


def _mirror_set(ctx: context.Context, resource: kube.Resource, name: str, field: str, entries: list[Any]) -> list[Any]:
    ref = kube.Ref(resource, name)
    current = ctx.kube.find(ref)
    if current is not None and not ownership.ours(current):
        if not entries:
            return []  # the user's object that happens to have our name: not ours to delete
        raise errors.PermanentStepError(
            f"cluster-config: {ref} exists but was not created by snoreloc (no {ownership.label_text()} label); "
            "not overwriting it",
            hint=f"Rename or delete {ref} if it is no longer needed, or add the label if it is snoreloc's, then run "
            "again.",
        )
    if entries:
        change = _set_spec(ctx, ref, _mirror_object(resource, name, field, entries))
        return [] if change is None else [_with(change, why="site mirrors")]
    return [] if current is None else [base.delete(ref, current, rollouts=_MCO, why="no mirrors in the site-config")]


def _with(change: base.ObjectChange, *, why: str) -> base.ObjectChange:
    return base.ObjectChange(change.ref, change.action, change.before, change.after, change.mutate, _MCO, why)


def legacy_warnings(site: model.SiteConfig) -> list[str]:
    """What an ImageContentSourcePolicy cannot carry and is dropped: each digest mirror's mirrorSourcePolicy."""
    return [
        f"spec.imageDigestMirrors[{index}].mirrorSourcePolicy ({mirror.mirror_source_policy}) is not applied: "
        "ImageContentSourcePolicy (OpenShift before 4.13) has no such field, so pulls of "
        f"{mirror.source} may still fall back to the source"
        for index, mirror in enumerate(site.image_digest_mirrors)
        if mirror.mirror_source_policy
    ]


def mirror_changes(ctx: context.Context, legacy: bool) -> list[base.ObjectChange]:
    site = ctx.site
    if legacy:
        entries = _mirror_entries(site.image_digest_mirrors, policy=False)
        return _mirror_set(ctx, kube.ICSP, DIGEST_MIRRORS, "repositoryDigestMirrors", entries)
    digest = _mirror_entries(site.image_digest_mirrors, policy=True)
    tag = _mirror_entries(site.image_tag_mirrors, policy=True)
    return _mirror_set(ctx, kube.IDMS, DIGEST_MIRRORS, "imageDigestMirrors", digest) + _mirror_set(
        ctx, kube.ITMS, TAG_MIRRORS, "imageTagMirrors", tag
    )


MIRROR_KINDS = (kube.ICSP, kube.IDMS, kube.ITMS)


def removal_changes(ctx: context.Context) -> tuple[list[base.ObjectChange], list[str]]:
    """The deletions `removeMirrors` asks for, and a warning for each name that matches nothing or one of ours."""
    changes: list[base.ObjectChange] = []
    warnings: list[str] = []
    for index, name in enumerate(ctx.site.remove_mirrors):
        found = [(kube.Ref(r, name), obj) for r in MIRROR_KINDS if (obj := _find_optional(ctx, kube.Ref(r, name)))]
        if not found:
            warnings.append(f"spec.removeMirrors[{index}]: {unknown_mirror(ctx, name)}")
        for ref, current in found:
            if ownership.ours(current):
                warnings.append(
                    f"spec.removeMirrors[{index}]: {ref} is snoreloc's own (from spec.imageDigestMirrors or "
                    "imageTagMirrors), not a factory mirror set: not removed; take it out of removeMirrors"
                )
            else:
                changes.append(base.delete(ref, current, rollouts=_MCO, why="removeMirrors"))
    return changes, warnings


def unknown_mirror(ctx: context.Context, name: str) -> str:
    """The warning for a removeMirrors name that matches no mirror set, with the closest names there are."""
    present = sorted(
        {
            obj["metadata"]["name"]
            for resource in MIRROR_KINDS
            for obj in _list_optional(ctx, resource)
            if not ownership.ours(obj)
        }
    )
    close = difflib.get_close_matches(name, present, n=3)
    hint = f"did you mean {' or '.join(close)}?" if close else f"the cluster has: {', '.join(present) or 'none'}"
    kinds = "ImageContentSourcePolicy, ImageDigestMirrorSet or ImageTagMirrorSet"
    return f"no {kinds} named {name}: nothing removed ({hint})"


def _list_optional(ctx: context.Context, resource: kube.Resource) -> list[kube.Obj]:
    """Like list, but a kind the cluster does not serve is simply empty."""
    try:
        return ctx.kube.list(resource)
    except kube.ApiError:
        return []


def _find_optional(ctx: context.Context, ref: kube.Ref) -> kube.Obj | None:
    """Like find, but a kind the cluster does not serve (ICSP on a new cluster) is simply absent."""
    try:
        return ctx.kube.find(ref)
    except kube.ApiError:
        return None


# --- registry CA --------------------------------------------------------------------------------------------------


def ca_key(registry: str) -> str:
    """ConfigMap key for a registry: `host`, or `host..port` (a colon is not allowed in a key)."""
    return registry.replace(":", "..")


def registry_ca_changes(ctx: context.Context) -> list[base.ObjectChange]:
    if not ctx.site.registry_ca:
        return []
    wanted = {ca_key(item.registry): item.bundle_pem for item in ctx.site.registry_ca}
    image = ctx.kube.get(base.IMAGE_CLUSTER)
    name = (image.get("spec", {}).get("additionalTrustedCA") or {}).get("name") or REGISTRY_CA
    ref = kube.Ref(kube.CONFIGMAPS, name, "openshift-config")
    metadata = {"name": name, "namespace": ref.namespace, "labels": dict(ownership.MANAGED_BY)}
    desired = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}

    def merge(current: kube.Obj) -> kube.Obj:
        current["data"] = {**(current.get("data") or {}), **wanted}
        return current

    changes = [c for c in [base.upsert(ctx, ref, {**desired, "data": wanted}, merge)] if c is not None]

    def point(current: kube.Obj) -> kube.Obj:
        current.setdefault("spec", {})["additionalTrustedCA"] = {"name": name}
        return current

    changes += [c for c in [base.update(base.IMAGE_CLUSTER, image, point)] if c is not None]
    return [_with(c, why="registry CA") for c in changes]


class ClusterConfig(base.ObjectStep):
    name = "cluster-config"
    description = "updating pull secret, mirrors and registry CA (one machine-config rollout)"

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        site = ctx.site
        return {
            "pull_secret": site.pull_secret,
            "digest": site.image_digest_mirrors,
            "tag": site.image_tag_mirrors,
            "remove": site.remove_mirrors,
            "ca": site.registry_ca,
        }

    def plan(self, ctx: context.Context) -> base.Plan:
        version = base.cluster_version(ctx)
        mirrors.require_mirror_support(ctx.site, version)  # again here: --step/--from may skip preflight
        legacy = mirrors.is_legacy(version)
        changes = [c for c in [pull_secret_change(ctx)] if c is not None]
        removals, removal_warnings = removal_changes(ctx)
        changes += mirror_changes(ctx, legacy) + removals + registry_ca_changes(ctx)
        note = "mirrors as ImageContentSourcePolicy" if legacy else "mirrors as ImageDigestMirrorSet/ImageTagMirrorSet"
        warnings = (legacy_warnings(ctx.site) if legacy else []) + removal_warnings
        return base.Plan(self.name, tuple(changes), (note, *warnings), data={"warnings": warnings})

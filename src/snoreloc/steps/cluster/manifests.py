"""The site's extra manifests (`spec.extraManifests`), applied with server-side apply once the relocation is done.

Each manifest is applied under our field manager (`kube.FIELD_MANAGER`) with `force`: the site-config is the
authority for the fields a manifest names, and only those; every other field of an existing object stays as it
is, and whoever owned a field we take is named in that object's managedFields ("Server-Side Apply", Conflicts,
kubernetes.io/docs/reference/using-api/server-side-apply/). What the cluster would make of each manifest is asked
with a server-side dry run (`dryRun=All`, kubernetes.io/docs/reference/using-api/api-concepts/#dry-run): preflight
does it for every manifest before the run's first change, so a kind the cluster does not serve, a schema or
admission refusal, stops the run with exit 65 naming the file and the object; planning does it again to compare
the result with the live object, so only a manifest that would change something is applied, and a re-run of an
unchanged set writes nothing (dry runs are not writes).

Before each write the object's state is backed up (or its absence), so `rollback` deletes what we created and
restores what existed. Namespaces among the manifests are applied first; a manifest in a namespace another
manifest creates cannot be dry-run before that namespace exists, so only its kind and scope are checked then.
What a manifest moves depends on its kind: a MachineConfig rolls the master pool out (the node reboots; the final
settle waits for it), the kinds a site usually brings (ConfigMaps, Secrets, Subscriptions) move no node.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from snoreloc import errors, redact
from snoreloc.adapters import kube
from snoreloc.siteconfig import model
from snoreloc.siteconfig.settings import extra_manifests
from snoreloc.steps import base, context

LOG = logging.getLogger(__name__)

NAMESPACES = kube.Resource("", "v1", "namespaces", "Namespace", False)
_VOLATILE = ("resourceVersion", "managedFields", "generation")
_HINT = "Fix or remove this manifest in spec.extraManifests (`snoreloc plan` shows what the cluster says)."


@dataclass(frozen=True)
class Target:
    """A manifest and the object it names, where the cluster serves it."""

    manifest: model.Manifest
    ref: kube.Ref


def refused(manifest: model.Manifest, why: str) -> errors.ConfigError:
    """Exit 65: the site-config holds a manifest this cluster will not take."""
    text = f"spec.extraManifests: {manifest.where}: {manifest.label}: {redact.redact(why)}"
    return errors.ConfigError(text, hint=_HINT)


def ordered(manifests: Sequence[model.Manifest]) -> list[model.Manifest]:
    """Namespaces first, then the rest, each group in the site-config's order."""
    first = [m for m in manifests if (m.api_version, m.kind) == ("v1", "Namespace")]
    return first + [m for m in manifests if m not in first]


def _target(ctx: context.Context, manifest: model.Manifest) -> Target:
    resource = ctx.kube.resource(manifest.api_version, manifest.kind)
    if resource is None:
        raise refused(manifest, f"this cluster does not serve kind {manifest.kind} in {manifest.api_version}")
    if resource.namespaced and not manifest.namespace:
        raise refused(manifest, f"{manifest.kind} is namespaced: give metadata.namespace")
    if not resource.namespaced and manifest.namespace:
        raise refused(manifest, f"{manifest.kind} is cluster-scoped: remove metadata.namespace")
    return Target(manifest, kube.Ref(resource, manifest.name, manifest.namespace))


def targets(ctx: context.Context) -> list[Target]:
    found = ctx.site.get(extra_manifests.SETTING)
    return [_target(ctx, manifest) for manifest in ordered(found)]


def _created_here(ctx: context.Context, target: Target) -> bool:
    """The target's namespace does not exist yet and a Namespace manifest creates it."""
    namespace = target.ref.namespace
    ours = {m.name for m in ctx.site.get(extra_manifests.SETTING) if (m.api_version, m.kind) == ("v1", "Namespace")}
    return bool(namespace) and namespace in ours and ctx.kube.find(kube.Ref(NAMESPACES, namespace)) is None


def dry_run(ctx: context.Context, target: Target) -> kube.Obj | None:
    """What the cluster would store for the manifest; None when it cannot say yet (its namespace is still to be
    created by another manifest). A refusal is the site-config's error (exit 65)."""
    try:
        return ctx.kube.apply(target.ref, copy.deepcopy(dict(target.manifest.obj)), force=True, dry_run=True)
    except kube.NotFound as exc:
        if _created_here(ctx, target):
            return None
        raise refused(target.manifest, exc.detail) from None
    except kube.ApiError as exc:
        raise refused(target.manifest, exc.detail) from None


def check_all(ctx: context.Context) -> list[str]:
    """Preflight's check: every manifest dry-run by the cluster; raises ConfigError (65) on the first it refuses.
    The plan's note, when there are manifests."""
    found = targets(ctx)
    for target in found:
        dry_run(ctx, target)
    return [f"extra manifests: the cluster's dry run accepts all {len(found)}"] if found else []


def _comparable(obj: kube.Obj) -> kube.Obj:
    shown = copy.deepcopy(obj)
    for key in _VOLATILE:
        shown.get("metadata", {}).pop(key, None)
    return shown


def _rollouts(target: Target) -> tuple[str, ...]:
    """A MachineConfig rolls out the master pool (and reboots the node); other kinds move no pool."""
    return (base.MCP_MASTER,) if target.ref.resource.group == "machineconfiguration.openshift.io" else ()


def _change(ctx: context.Context, target: Target) -> base.ObjectChange | None:
    current = ctx.kube.find(target.ref)
    result = dry_run(ctx, target)
    extra: dict[str, Any] = {"why": target.manifest.where, "rollouts": _rollouts(target)}
    if current is None:
        return base.create(target.ref, result or dict(target.manifest.obj), **extra)
    if result is None or _comparable(result) == _comparable(current):
        return None
    return base.ObjectChange(target.ref, base.Action.UPDATE, current, result, **extra)


class ExtraManifests(base.ObjectStep):
    name = "manifests"
    setting = extra_manifests.SETTING  # the setting this step applies
    description = "applying the site's extra manifests (server-side apply)"

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {"extra_manifests": ctx.site.get(extra_manifests.SETTING)}

    def preflight_check(self, ctx: context.Context) -> list[str]:
        return check_all(ctx)

    def plan(self, ctx: context.Context) -> base.Plan:
        changes = [change for target in targets(ctx) if (change := _change(ctx, target)) is not None]
        notes: tuple[str, ...] = ()
        if any(change.rollouts for change in changes):
            notes = (extra_manifests.SETTING.cost.note,)
        return base.Plan(self.name, tuple(changes), notes)

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
        manifests = {target.ref: target.manifest for target in targets(ctx)}
        rollouts: dict[str, datetime] = {}
        for change in plan.changes:
            LOG.info("%s: apply %s (%s)", self.name, change.ref, change.why)
            ctx.backups.save(change.ref, ctx.kube.find(change.ref))  # before the write; the first original wins
            written = ctx.clock.now()
            ctx.kube.apply(change.ref, copy.deepcopy(dict(manifests[change.ref].obj)), force=True)
            rollouts.update(dict.fromkeys(change.rollouts, written))
        changed = tuple(f"{change.action.value} {change.ref}" for change in plan.changes)
        return base.StepOutcome(changed=changed, rollouts=rollouts)


STEP = ExtraManifests()  # placed by `engine.order.cluster_steps`

"""The contract every cluster step keeps, and the few helpers they all need.

A step is `inputs(ctx)` (what its fingerprint is made of), `plan(ctx) -> Plan` (read-only: the per-object
changes it would make), `apply(ctx, plan) -> StepOutcome`, and `verify(ctx)` (raise unless the cluster is in the
state the step promises). The engine orders steps, skips those whose inputs did not change and still verify,
and journals the rest. Changes are data (`ObjectChange`) carrying a `mutate` function, so `apply_changes` can back up
the original, write, and on a 409 re-read and re-apply the same intent to the fresh object.
"""

from __future__ import annotations

import contextlib
import copy
import enum
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar, runtime_checkable

from snoreloc import errors, waits
from snoreloc.adapters import kube
from snoreloc.siteconfig import model
from snoreloc.siteconfig import setting as setting_mod
from snoreloc.steps import context

LOG = logging.getLogger(__name__)

Obj = kube.Obj
T = TypeVar("T")

MCP_MASTER = "mcp/master"


class Action(enum.Enum):
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"


@dataclass(frozen=True)
class ObjectChange:
    """One object's change: `after` is what `mutate(before)` gives (for display); `mutate` re-applies on 409."""

    ref: kube.Ref
    action: Action
    before: Obj | None
    after: Obj | None
    mutate: Callable[[Obj], Obj | None] | None = field(default=None, compare=False, repr=False)
    rollouts: tuple[str, ...] = ()
    why: str = ""
    keep: context.Keep = context.WHOLE  # recorded on the backup: what restoring it causes, which labels are ours


@dataclass(frozen=True)
class Plan:
    """What a step would do: per-object changes plus notes for what it will wait for or check."""

    step: str
    changes: tuple[ObjectChange, ...] = ()
    notes: tuple[str, ...] = ()
    data: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def empty(self) -> bool:
        return not self.changes


@dataclass(frozen=True)
class StepOutcome:
    """What a step did: objects changed (as text), rollouts started, warnings, step-specific details (JSON)."""

    changed: tuple[str, ...] = ()
    rollouts: Mapping[str, datetime] = field(default_factory=dict)  # operator -> time of our write that moved it
    warnings: tuple[str, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class ChecksFirst(Protocol):
    """A step with a check preflight makes before any change (a setting's refusal that must come first): raises
    naming what to fix, else returns notes for the plan. The pipeline hands these to preflight."""

    def preflight_check(self, ctx: context.Context) -> Sequence[str]: ...


@runtime_checkable
class AppliesSetting(Protocol):
    """A step that applies a site setting names it (`setting = <settings module>.SETTING`): the step sits above the
    setting in the layers, so the link points down, and `engine.order` finds each setting's step by it."""

    setting: setting_mod.Setting[Any]


@runtime_checkable
class PlansOffline(Protocol):
    """A host step that can say what it would do for a site-config without a cluster (`snoreloc plan` on a node)."""

    def plan_for(self, site: model.SiteConfig) -> Plan: ...


@runtime_checkable
class ChecksHostFirst(Protocol):
    """A host step whose node files must be judged before the first step of a run changes anything: raises naming
    what to fix (the engine calls it before the site network is touched)."""

    def check_host(self, site: model.SiteConfig) -> None: ...


@runtime_checkable
class RestoresHost(Protocol):
    """A host step that keeps originals of what it changes on the node: `rollback_host` puts them back and says
    what it did, one line each (nothing when it kept nothing)."""

    def rollback_host(self) -> list[str]: ...


class Step(Protocol):
    name: str
    description: str

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]: ...

    def plan(self, ctx: context.Context) -> Plan: ...

    def apply(self, ctx: context.Context, plan: Plan) -> StepOutcome: ...

    def verify(self, ctx: context.Context) -> None: ...


# --- building changes ---------------------------------------------------------------------------------------------


def update(ref: kube.Ref, current: Obj, mutate: Callable[[Obj], Obj | None], **extra: Any) -> ObjectChange | None:
    """An ObjectChange for `mutate` on `current`, or None when it would change nothing."""
    after = mutate(copy.deepcopy(current))
    if after is None or after == current:
        return None
    return ObjectChange(ref, Action.UPDATE, current, after, mutate, **extra)


def create(ref: kube.Ref, obj: Obj, **extra: Any) -> ObjectChange:
    return ObjectChange(ref, Action.CREATE, None, obj, **extra)


def delete(ref: kube.Ref, current: Obj, **extra: Any) -> ObjectChange:
    return ObjectChange(ref, Action.DELETE, current, None, **extra)


def upsert(
    ctx: context.Context, ref: kube.Ref, desired: Obj, merge: Callable[[Obj], Obj | None]
) -> ObjectChange | None:
    """Create `desired` if `ref` is absent, else the update `merge` makes to the current object."""
    current = ctx.kube.find(ref)
    if current is None:
        return create(ref, desired)
    return update(ref, current, merge)


# --- applying changes ---------------------------------------------------------------------------------------------


def _apply_one(ctx: context.Context, change: ObjectChange) -> None:
    if change.action is Action.CREATE:
        _create(ctx, change)
    elif change.action is Action.UPDATE:
        _update(ctx, change)
    else:
        _delete(ctx, change)


def _create(ctx: context.Context, change: ObjectChange) -> None:
    assert change.after is not None
    ctx.backups.save(
        change.ref, None, change.keep
    )  # recorded before the write: a crash after it still rolls back cleanly
    try:
        ctx.kube.create(change.ref.resource, copy.deepcopy(change.after))
    except kube.Conflict:  # created by an earlier, interrupted run: make it what we want now
        desired = change.after
        ctx.kube.modify(change.ref, lambda current: {**desired, "metadata": current["metadata"]})


def _update(ctx: context.Context, change: ObjectChange) -> None:
    assert change.mutate is not None
    mutate = change.mutate

    def backed_up(current: Obj) -> Obj | None:
        result = mutate(copy.deepcopy(current))
        if result is not None and result != current:
            ctx.backups.save(change.ref, current, change.keep)
        return result

    ctx.kube.modify(change.ref, backed_up)


def _delete(ctx: context.Context, change: ObjectChange) -> None:
    current = ctx.kube.find(change.ref)
    if current is None:
        return
    ctx.backups.save(change.ref, current, change.keep)
    with contextlib.suppress(kube.NotFound):
        ctx.kube.delete(change.ref)


def apply_changes(ctx: context.Context, plan: Plan, *, warnings: tuple[str, ...] = ()) -> StepOutcome:
    """Make every change of the plan in order, backing up originals first."""
    rollouts: dict[str, datetime] = {}
    for change in plan.changes:
        LOG.info("%s: %s %s%s", plan.step, change.action.value, change.ref, f" ({change.why})" if change.why else "")
        written = ctx.clock.now()
        _apply_one(ctx, change)
        rollouts.update(dict.fromkeys(change.rollouts, written))
    changed = tuple(f"{c.action.value} {c.ref}" for c in plan.changes)
    return StepOutcome(changed=changed, rollouts=rollouts, warnings=warnings)


def verify_no_changes(ctx: context.Context, step: Step) -> None:
    """The usual verify: planning again finds nothing left to do."""
    plan = step.plan(ctx)
    if not plan.empty:
        pending = ", ".join(f"{c.action.value} {c.ref}" for c in plan.changes)
        raise errors.TemporaryError(f"{step.name}: not yet in the desired state ({pending})")


# --- steps that declare the objects they want ---------------------------------------------------------------------


class ObjectStep:
    """A step that says only which objects it wants; planning, writing them and verifying them is done here, once.

    A subclass gives `inputs` and `changes` (the `create` / `update` / `delete` / `upsert` it wants, each carrying
    the intent to re-apply on a conflict), and may give `notes` about them. Its plan is those changes; `apply`
    writes them in order with the originals backed up first (so `rollback` restores them), with the plan's
    `data["warnings"]` as the outcome's warnings; `verify` plans again and wants nothing left to do. A step
    overrides `plan` only when it must wait or read more first, and `apply` or `verify` only to add to them.
    """

    name: str
    description: str
    note = ""  # what the plan says when there are changes (a setting's `cost.note`)

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        raise NotImplementedError

    def changes(self, ctx: context.Context) -> Sequence[ObjectChange]:
        raise NotImplementedError

    def notes(self, ctx: context.Context, changes: Sequence[ObjectChange]) -> tuple[str, ...]:
        """What the plan says beside the changes: `note`, when there are changes and it is set."""
        return (self.note,) if changes and self.note else ()

    def plan(self, ctx: context.Context) -> Plan:
        changes = tuple(self.changes(ctx))
        return Plan(self.name, changes, self.notes(ctx, changes))

    def apply(self, ctx: context.Context, plan: Plan) -> StepOutcome:
        return apply_changes(ctx, plan, warnings=tuple(plan.data.get("warnings", ())))

    def verify(self, ctx: context.Context) -> None:
        verify_no_changes(ctx, self)


# --- waiting ------------------------------------------------------------------------------------------------------


def wait_for(
    ctx: context.Context, step: str, what: str, timeout: float, probe: Callable[[], T | None], *, poll: float = 0
) -> T:
    """Call `probe` until it returns a value, bounded by `timeout` and the run's deadline (see `waits.until`).

    A TemporaryError from the probe (the API restarting under us) counts as "not yet", so a rollout's outage
    is ridden out; anything else propagates.
    """
    remaining = ctx.remaining()
    budget = min(timeout, remaining) if remaining is not None else timeout
    wait = waits.Wait(step, what, max(budget, 0.0), interval=poll or ctx.settings.poll_interval)
    return waits.until(probe, wait, ctx.clock)


# --- cluster facts every step needs -------------------------------------------------------------------------------

INGRESS_CLUSTER = kube.Ref(kube.INGRESSES, "cluster")
APISERVER_CLUSTER = kube.Ref(kube.APISERVERS, "cluster")
IMAGE_CLUSTER = kube.Ref(kube.IMAGES, "cluster")
DNS_CLUSTER = kube.Ref(kube.DNSES, "cluster")
CLUSTERVERSION = kube.Ref(kube.CLUSTERVERSIONS, "version")
DEFAULT_INGRESSCONTROLLER = kube.Ref(kube.INGRESSCONTROLLERS, "default", "openshift-ingress-operator")


def factory_apps_domain(ctx: context.Context) -> str:
    """The install-time apps domain: Ingress `cluster` spec.domain, which is immutable once set."""
    domain = ctx.kube.get(INGRESS_CLUSTER).get("spec", {}).get("domain", "")
    if not domain:
        raise errors.UnavailableError("Ingress cluster has no spec.domain", hint="Is this an OpenShift cluster?")
    return str(domain)


def cluster_version(ctx: context.Context) -> tuple[int, int]:
    """(major, minor) of the cluster, from ClusterVersion `version` status.desired.version."""
    text = str(ctx.kube.get(CLUSTERVERSION).get("status", {}).get("desired", {}).get("version", ""))
    try:
        major, minor = (int(part) for part in text.split(".")[:2])
    except ValueError as exc:
        raise errors.UnavailableError(f"cannot read the cluster version ({text!r})") from exc
    return major, minor


def conditions(obj: Obj) -> dict[str, Obj]:
    return {str(c.get("type")): c for c in obj.get("status", {}).get("conditions") or []}


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def operator_problems(co: Obj) -> list[str]:
    """What is wrong with a ClusterOperator: empty when Available=True, Progressing=False, Degraded=False."""
    want = {"Available": "True", "Progressing": "False", "Degraded": "False"}
    conds = conditions(co)
    problems = []
    for kind, status in want.items():
        have = conds.get(kind, {})
        if have.get("status") != status:
            message = f": {have.get('message')}" if have.get("message") else ""
            problems.append(f"{kind}={have.get('status', 'unknown')}{message}")
    return problems

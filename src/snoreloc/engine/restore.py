"""`rollback` as people live through it: what it will cause (said before the first write), the restore ridden through
the outages it causes itself, the bounded wait until the cluster has settled again, and what it restored and what it
did not.

Putting an object back is a write like any other: restoring the APIServer starts a kube-apiserver revision, the Proxy or
the chrony MachineConfig a pool update that reboots the node. What each restore causes is recorded on its backup (the
setting's `rollback`), or judged by `engine.unrecorded` for a backup that recorded nothing (the facts are in
`../shared/research/openshift-rollouts-on-sno.md`). So a rollback that returned once its writes were accepted would say
"done" while the API is about to go away. Here the writes are retried through such an outage (the backups are removed
one by one as they are done, so a retry resumes) and then the same waits as `settle` (the node Ready with its CSRs
approved, the operators the writes set moving transitioned and healthy, the master pool updated) are waited for, bounded
by `timeouts.settle`. The site's endpoints are not dialled: they served the site's names, which the rollback has just
taken away. The host network is not a cluster object and stays at the site."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from snoreloc import errors, waits
from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.engine import backups, journal, unrecorded
from snoreloc.siteconfig import model
from snoreloc.siteconfig.settings import timeouts as timeouts_setting
from snoreloc.steps import context
from snoreloc.steps.cluster import settle
from snoreloc.steps.openshift import node_csrs

LOG = logging.getLogger(__name__)

STEP = "rollback"
HOST_NETWORK_KEPT = (
    "the host network stays at the site (it is not a cluster object; the factory network no longer exists here)"
)


@dataclass(frozen=True)
class Effect:
    """What restoring one object sets in motion: rollout names as the journal keeps them, whether the node reboots."""

    rollouts: tuple[str, ...] = ()
    reboot: bool = False
    why: str = ""


def effect_of(entry: backups.Entry, current: kube.Obj | None) -> Effect:
    """What restoring `entry` over `current` (None: gone) sets in motion: what its backup recorded (the setting's
    declaration), else what `engine.unrecorded` judges for a backup that recorded nothing."""
    if not _changes(entry, current):
        return Effect()
    declared = entry.rollback if entry.rollback is not None else unrecorded.rollback(entry, current)
    if declared.reboot_if and _spec_moves(entry.original or {}, current or {}, declared.reboot_if):
        return Effect(declared.rollouts, True, declared.why_reboot)
    return Effect(declared.rollouts, declared.reboot, declared.why)


def _spec_moves(original: kube.Obj, current: kube.Obj, fields: tuple[str, ...]) -> bool:
    before, now = original.get("spec", {}), current.get("spec", {})
    return any(before.get(name) != now.get(name) for name in fields)


def _changes(entry: backups.Entry, current: kube.Obj | None) -> bool:
    """Whether restoring `entry` writes anything (an object already as it was sets nothing in motion)."""
    if entry.original is None or current is None:
        return (entry.original is None) != (current is None) and entry.labels is None
    return backups.restored_entry(entry, current) != current


@dataclass(frozen=True)
class Forecast:
    """Said before the first write: how many objects, which rollouts, whether the node reboots, and why."""

    objects: int
    rollouts: tuple[str, ...]
    reboot: bool
    reasons: tuple[str, ...]

    def lines(self) -> list[str]:
        if not self.objects:
            return ["rollback: nothing to restore (no backups)", f"rollback: {HOST_NETWORK_KEPT}"]
        lines = [f"rollback: will restore {self.objects} object(s) to their state before the first relocation"]
        if self.reboot:
            lines.append(
                "rollback: THIS REBOOTS THE NODE (the cluster is away for several minutes; run on the node itself, "
                "this command ends with the reboot: run `snoreloc rollback` again after it to finish and wait)"
            )
        if self.rollouts:
            lines.append(f"rollback: rollouts it starts: {', '.join(self.rollouts)}")
        lines += [f"rollback:   {reason}" for reason in self.reasons]
        lines.append(f"rollback: {HOST_NETWORK_KEPT}")
        return lines


def forecast(client: kube.Client, entries: Iterable[backups.Entry]) -> Forecast:
    found = list(entries)
    effects = [effect_of(entry, client.find(entry.ref)) for entry in found]
    rollouts = tuple(dict.fromkeys(name for effect in effects for name in effect.rollouts))
    reasons = tuple(dict.fromkeys(effect.why for effect in effects if effect.why))
    return Forecast(len(found), rollouts, any(effect.reboot for effect in effects), reasons)


@dataclass(frozen=True)
class Outcome:
    """What a finished rollback did, for the CLI: the objects by what happened to them, and what it did not do."""

    restored: tuple[str, ...]
    deleted: tuple[str, ...]
    recreated: tuple[str, ...]
    forecast: Forecast
    settled: tuple[str, ...] = ()  # the rollouts it waited for
    namespaces: tuple[kube.Ref, ...] = ()  # deleted, and waited for until the cluster removed their content
    not_restored: tuple[str, ...] = field(default=(HOST_NETWORK_KEPT,))


def restore_all(
    client: kube.Client, store: backups.Store, clock: clock_mod.Clock, budget: float
) -> backups.RollbackResult:
    """`backups.rollback`, retried (bounded, visibly) while the API is away under an outage a restore caused."""
    done: list[backups.RollbackResult] = []

    def attempt() -> bool | None:
        done.append(backups.rollback(client, store))
        return True

    waits.until(attempt, waits.Wait(STEP, "the objects to be restored", budget, interval=5.0), clock)
    return _merged(done)


def _merged(results: list[backups.RollbackResult]) -> backups.RollbackResult:
    return backups.RollbackResult(
        tuple(name for r in results for name in r.restored),
        tuple(name for r in results for name in r.deleted),
        tuple(name for r in results for name in r.recreated),
        tuple(ref for r in results for ref in r.namespaces),
    )


def cluster_waits(ctx: context.Context, pending: Mapping[str, datetime], seen: node_csrs.Approvals) -> list[str]:
    """What `settle` waits for that still holds after a rollback: the node, the operators, the master pool."""
    return node_csrs.tend(ctx, seen) + settle.operator_waits(ctx, pending) + settle.pool_waits(ctx, pending)


def wait_settled(ctx: context.Context, budget: float, poll: float) -> tuple[str, ...]:
    """Block (bounded by `budget`, visibly) until the rollouts the rollback set moving have settled."""
    pending = ctx.rollouts.pending()
    seen = node_csrs.Approvals()
    last: list[str] = []

    def probe() -> bool | None:
        last[:] = cluster_waits(ctx, pending, seen)
        return True if not last else None

    try:
        waits.until(probe, waits.Wait(STEP, "the cluster to settle after the rollback", budget, poll), ctx.clock)
    except errors.WaitTimeout as exc:
        raise errors.WaitTimeout(
            STEP,
            "the cluster to settle after the rollback (still waiting for: " + "; ".join(last) + ")",
            exc.seconds,
            hint="Every object is restored; the cluster has not settled yet. `snoreloc rollback` again waits again.",
        ) from exc
    ctx.rollouts.settled(list(pending))
    return tuple(pending)


Announce = Callable[[str], None]


def run(
    client: kube.Client,
    store: backups.Store,
    jour: journal.Journal,
    clock: clock_mod.Clock,
    *,
    site: model.SiteConfig,
    settings: context.Settings,
    announce: Announce,
) -> Outcome:
    """The whole rollback under the run lock: forecast, restore, wait, journal. Raises what `run` would raise."""
    entries = store.entries()
    what = "the API to answer (to say what the rollback will cause)"  # it may be restarting under a revision
    wait = waits.Wait(STEP, what, float(site.get(timeouts_setting.SETTING).api), interval=5.0)
    told = waits.until(lambda: forecast(client, entries), wait, clock)
    for line in told.lines():
        announce(line)
    earlier = [name for name in jour.pending() if name not in told.rollouts]
    if earlier:  # a rollback cut off (by the reboot it caused) or out of time: its rollouts are waited for now
        announce(f"rollback: waits for the rollouts an earlier rollback started: {', '.join(earlier)}")
    jour.begin_rollback()
    unsubscribe = waits.subscribe(jour.on_wait)
    try:
        budget = float(site.get(timeouts_setting.SETTING).settle)
        # journaled before the first write: a rollout may start, and end, while a later restore waits out an
        # outage, and a process the reboot ends leaves them for the next rollback to wait for
        jour.set_in_motion({name: clock.now() for name in told.rollouts})
        result = restore_all(client, store, clock, budget)
        backups.await_gone(client, clock, result.namespaces)
        ctx = context.Context(site, client, clock, store, jour, settings)
        waited = wait_settled(ctx, budget, settings.poll_interval) if jour.pending() else ()
    except errors.SnorelocError as exc:
        jour.end_rollback(exc)
        raise
    finally:
        unsubscribe()
    jour.end_rollback(None)
    return Outcome(result.restored, result.deleted, result.recreated, told, waited, result.namespaces)

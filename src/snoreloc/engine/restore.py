"""`rollback` as people live through it: what it will cause (said before the first write), the restore ridden through
the outages it causes itself, the bounded wait until the cluster has settled again, and what it restored and what it
did not.

Putting an object back is a write like any other: restoring the APIServer starts a kube-apiserver revision, the
Proxy or the chrony MachineConfig a pool update that reboots the node (`steps.proxy`, `steps.ntp`; the facts are in
`../shared/research/openshift-rollouts-on-sno.md`). So a rollback that returned once its writes were accepted would
say "done" while the API is about to go away. Here the writes are retried through such an outage (the backups are
removed one by one as they are done, so a retry resumes) and then the same waits as `settle` (the node Ready with its
CSRs approved, the operators the writes set moving transitioned and healthy, the master pool updated) are waited
for, bounded by `timeouts.settle`. The site's endpoints are not dialled: they served the site's names, which the
rollback has just taken away. The host network is not a cluster object and stays at the site.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from snoreloc import errors, waits
from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.engine import backups, journal
from snoreloc.siteconfig import model
from snoreloc.steps import base, context
from snoreloc.steps.cluster import domain, ntp, proxy, settle
from snoreloc.steps.openshift import node_csrs

LOG = logging.getLogger(__name__)

STEP = "rollback"
HOST_NETWORK_KEPT = (
    "the host network stays at the site (it is not a cluster object; the factory network no longer exists here)"
)
_PROXY_REBOOT_FIELDS = ("httpProxy", "httpsProxy", "noProxy")


@dataclass(frozen=True)
class Effect:
    """What restoring one object sets in motion: rollout names as the journal keeps them, whether the node reboots."""

    rollouts: tuple[str, ...] = ()
    reboot: bool = False
    why: str = ""


# What a restored object rolls out, by kind (the research file's table; `reboot` is decided per object below).
_BY_KIND: Mapping[str, Effect] = {
    "APIServer": Effect(("kube-apiserver",), why="a new kube-apiserver revision (the API is away about a minute)"),
    "Ingress": Effect(
        ("openshift-apiserver",), why="openshift-apiserver rolls out; the console and OAuth routes move back"
    ),
    "IngressController": Effect(("ingress",), why="the router rolls out"),
    "ImageDigestMirrorSet": Effect((base.MCP_MASTER,), why="a machine-config update without a reboot (CRI-O reload)"),
    "ImageTagMirrorSet": Effect((base.MCP_MASTER,), why="a machine-config update without a reboot (CRI-O reload)"),
    "ImageContentSourcePolicy": Effect(
        (base.MCP_MASTER,), why="a machine-config update without a reboot (CRI-O reload)"
    ),
}


def effect_of(entry: backups.Entry, current: kube.Obj | None) -> Effect:
    """What restoring `entry` over `current` (None: gone) sets in motion."""
    ref = entry.ref
    if not _changes(entry, current):
        return Effect()
    if ref.key == proxy.PROXY_CLUSTER.key:
        return _proxy_effect(entry.original or {}, current or {})
    if ref.key == base.INGRESS_CLUSTER.key:
        return _ingress_effect(entry.original or {}, current or {})
    if ref.key in _BY_OBJECT:
        return _BY_OBJECT[ref.key]
    if ref.resource.kind == "MachineConfig":
        return Effect((base.MCP_MASTER,), why=f"MachineConfig {ref.name}: a machine-config update")
    return _BY_KIND.get(ref.resource.kind, Effect())


_BY_OBJECT: Mapping[str, Effect] = {
    ntp.CHRONY_CONFIG.key: Effect(
        (base.MCP_MASTER,), True, f"the chrony MachineConfig {ntp.CHRONY_CONFIG.name} goes: the node reboots"
    ),
    kube.Ref(kube.SECRETS, "pull-secret", "openshift-config").key: Effect(
        (base.MCP_MASTER,), why="the pull secret goes back: a machine-config update without a reboot"
    ),
}


def _proxy_effect(original: kube.Obj, current: kube.Obj) -> Effect:
    before, now = original.get("spec", {}), current.get("spec", {})
    if any(before.get(name) != now.get(name) for name in _PROXY_REBOOT_FIELDS):
        return Effect((base.MCP_MASTER,), True, "the proxy URLs or noProxy go back: the node reboots")
    return Effect((base.MCP_MASTER,), why="the proxy's trusted CA goes back: a machine-config update")


def _ingress_effect(original: kube.Obj, current: kube.Obj) -> Effect:
    """openshift-apiserver rolls out only when the apps domain it generates hosts under changes
    (`domain.routing_domain`): back from the factory's own domain (`appsDomain` set to what `domain` already says),
    putting the Ingress back moves the component routes' entries but starts no rollout to wait for."""
    before, now = original.get("spec") or {}, current.get("spec") or {}
    if domain.routing_domain(before) == domain.routing_domain(now):
        return Effect(why="the Ingress goes back (its apps domain is unchanged: no rollout)")
    return _BY_KIND["Ingress"]


def _changes(entry: backups.Entry, current: kube.Obj | None) -> bool:
    """Whether restoring `entry` writes anything (an object already as it was sets nothing in motion)."""
    if entry.original is None or current is None:
        return (entry.original is None) != (current is None)
    return backups.restored(current, entry.original) != current


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
    wait = waits.Wait(STEP, what, float(site.timeouts.api), interval=5.0)
    told = waits.until(lambda: forecast(client, entries), wait, clock)
    for line in told.lines():
        announce(line)
    earlier = [name for name in jour.pending() if name not in told.rollouts]
    if earlier:  # a rollback cut off (by the reboot it caused) or out of time: its rollouts are waited for now
        announce(f"rollback: waits for the rollouts an earlier rollback started: {', '.join(earlier)}")
    jour.begin_rollback()
    unsubscribe = waits.subscribe(jour.on_wait)
    try:
        budget = float(site.timeouts.settle)
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

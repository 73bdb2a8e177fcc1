"""One Wave's reconcile: list its Sites, plan (`controller.waveplan`), write each Site's `status.gate` that differs and
the Wave's status when it differs.

Level-triggered and idempotent, as the Site's reconcile: whatever woke it (a Wave edit, a member's report, the
sweep), it lists the wave's Sites by its selector (one paged LIST) and converges; a pass that changes nothing writes
nothing. The Wave's status is written at once when a batch's state, the phase or the halt changes; a change of
counts alone (a Site went from running to relocated) waits until `COUNTS_PERIOD` has passed since the last write
(the caller asks again then: `Outcome.deferred`), so a wave's reports cost it at most one write per period however
many arrive, and its counts lag by at most that. A gate that holds a Site is written only if the Site is still as it
was read (its resourceVersion in the merge patch: a node that reported meanwhile makes it a 409, and the next pass
reads again), so a node that has started is never held. Sites that left the wave (the controller remembers the last
members) lose its gate.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from snoreloc.siblings import kube
from snoreloc_fleet.controller import waveplan
from snoreloc_fleet.hub import hubaccess
from snoreloc_fleet.resource import site
from snoreloc_fleet.resource import wave as wave_mod

LOG = logging.getLogger(__name__)
WAVES = kube.Resource(site.GROUP, site.VERSION, wave_mod.PLURAL, wave_mod.KIND, True)
COUNTS_PERIOD = 10.0  # seconds: at most one write a period for a change of counts alone
_COUNTED = frozenset((*wave_mod.COUNTS, wave_mod.STATUS_RELOCATED, wave_mod.STATUS_FAILED))


@dataclass(frozen=True)
class Outcome:
    """The wave's members now, the ones whose gate was written, and whether the Wave's status was."""

    members: frozenset[str]
    gated: tuple[str, ...]
    wrote: bool
    halted: bool
    conflicts: int = 0
    deferred: bool = False  # a change of counts alone, not written yet: ask again after COUNTS_PERIOD


def _uncounted(status: Any) -> Any:
    """The status without its counts: what, when it changes, is written at once."""
    if isinstance(status, dict):
        return {k: _uncounted(v) for k, v in status.items() if k not in _COUNTED}
    if isinstance(status, list):
        return [_uncounted(v) for v in status]
    return status


def selecting(client: kube.Client, obj: Mapping[str, Any]) -> bool:
    """Whether a Wave of the Site's namespace selects it (one LIST of the namespace's Waves: they are few)."""
    seen = site.view(obj)
    listed = client.list(WAVES, seen.namespace)
    return any(wave_mod.selects(wave_mod.view(wave).selector, seen.labels) for wave in listed)


def wave_ref(namespace: str, name: str) -> kube.Ref:
    return kube.Ref(WAVES, name, namespace)


def _gate_patch(client: kube.Client, obj: Mapping[str, Any], gate: dict[str, Any] | None) -> bool:
    """Write one Site's gate (None: remove it); a hold only onto the Site as read. False on a 409."""
    meta = obj["metadata"]
    ref = kube.Ref(hubaccess.sites(), meta["name"], meta["namespace"])
    body: dict[str, Any] = {"status": {site.STATUS_GATE: gate}}
    if gate is not None and gate["state"] == site.GATE_HELD:
        body["metadata"] = {"resourceVersion": meta.get("resourceVersion")}
    try:
        client.request("PATCH", ref.path("status"), body=body, content_type=kube.MERGE_PATCH, retry=False)
    except (kube.Conflict, kube.NotFound):
        return False
    return True


def release(client: kube.Client, namespace: str, names: Iterable[str], wave: str) -> list[str]:
    """Remove the gate of Sites no longer in `wave` (still naming it): their nodes go as with no wave."""
    released = []
    for name in sorted(names):
        obj = client.find(kube.Ref(hubaccess.sites(), name, namespace))
        if obj is None or site.view(obj).gate.get("wave") != wave:
            continue
        if _gate_patch(client, obj, None):
            released.append(name)
    return released


def reconcile(
    client: kube.Client,
    ref: kube.Ref,
    now: dt.datetime,
    before: frozenset[str] = frozenset(),
    *,
    counts_due: bool = True,
) -> Outcome | None:
    """Converge one Wave and its Sites' gates; None when the Wave is gone. `before`: its members at the last pass;
    `counts_due`: whether a change of counts alone may be written now (COUNTS_PERIOD passed)."""
    obj = client.find(ref)
    if obj is None or obj["metadata"].get("deletionTimestamp"):
        return None
    seen = wave_mod.view(obj)
    items = client.list(hubaccess.sites(), ref.namespace, label_selector=wave_mod.label_selector(seen.selector))
    items = [o for o in items if not site.view(o).gate or site.view(o).gate.get("wave") in ("", seen.name)]
    plan = waveplan.plan(seen, [waveplan.member(o) for o in items], now)
    gated, conflicts = [], 0
    for item in items:
        current, desired = dict(site.view(item).gate), plan.gates[site.view(item).name]
        if current == desired:
            continue
        if _gate_patch(client, item, desired):
            gated.append(site.view(item).name)
        else:
            conflicts += 1
    members = frozenset(site.view(o).name for o in items)
    release(client, ref.namespace, before - members, seen.name)
    desired = {k: v for k, v in plan.status.items() if v is not None}
    patch = kube.merge_patch(dict(seen.status), desired)
    deferred = bool(patch) and not counts_due and _uncounted(dict(seen.status)) == _uncounted(desired)
    if patch and not deferred:
        client.request("PATCH", ref.path("status"), body={"status": patch}, content_type=kube.MERGE_PATCH, retry=True)
        LOG.info("wave %s/%s: status updated (%s)", ref.namespace, ref.name, plan.status[wave_mod.STATUS_PHASE])
    return Outcome(members, tuple(gated), bool(patch) and not deferred, plan.halted, conflicts, deferred)

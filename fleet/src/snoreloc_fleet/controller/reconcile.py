"""One Site's reconcile: read it afresh, make its admin keys when it asks (`hub.adminaccess`), check it, issue its
credential once a stick is asked for, write its status only when it changes.

Level-triggered and idempotent: whatever event woke it (a change of the Site, a node's report, a restart's
listing, the periodic sweep), it reads the Site as it is now and converges on what it should be, so running it twice
writes nothing the second time. It never writes `status.agent` (the node's), writes the rest of the status as a
JSON merge patch of exactly what differs, and keeps the `fleet.snoreloc.io/phase` label equal to the phase; once
a Site is Relocated, the same metadata write adds Argo CD's `Prune=false,Delete=false` sync options to it.

It posts an Event only where someone must look or an outcome is reached: when a Site's phase becomes Invalid,
Failed, Stale (Warning) or Relocated (Normal), and when it leaves Failed or Stale (Normal: the run resumed, the
node speaks again). Not for Pending, Ready or InProgress: at 10,000 Sites a Normal Event per Site per phase would be
an event storm on the hub's etcd (each Event an object kept for an hour) that no one acts on; `kubectl describe
site` still shows every condition with its `lastTransitionTime`, and the phase label selects any phase.

A Site its wave holds (`status.gate` Held, written by the wave's reconcile, `controller.waves`) gets no credential
issued or renewed (MediaReady False, reason Held); a gate naming a Wave that is gone is removed. The Site's wave's
`spec.offline` is written into the reporting kubeconfig it is issued.

A 409 from the API (someone wrote first) is left to the caller's retry: the next pass reads again. Secrets and
ConfigMaps named by `spec.files` are read with one GET each when a Site is reconciled; nothing else is cached.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from snoreloc.siblings import kube
from snoreloc_fleet.controller import status as status_mod
from snoreloc_fleet.controller import waves
from snoreloc_fleet.hub import adminaccess, credentials, hubaccess, sitemedium
from snoreloc_fleet.resource import delivery, site
from snoreloc_fleet.resource import wave as wave_mod

LOG = logging.getLogger(__name__)

SITES = hubaccess.sites()  # the name the controller, its tests and benchmarks use
EVENTS = kube.Resource("", "v1", "events", "Event", True)
OWN_KEYS = (
    site.STATUS_OBSERVED,
    site.STATUS_PHASE,
    site.STATUS_REASON,
    site.STATUS_CONDITIONS,
    site.STATUS_VALIDATION,
    site.STATUS_MEDIA,
    site.STATUS_CREDENTIAL,
    site.STATUS_ADMIN_ACCESS,
    site.STATUS_SHELF,
)
COMPONENT = "snoreloc-fleet-controller"
WARNING_PHASES = (site.Phase.INVALID, site.Phase.FAILED, site.Phase.STALE)
EVENT_PHASES = (*WARNING_PHASES, site.Phase.RELOCATED)  # entering one of these posts an Event
RESUMED_PHASES = (site.Phase.FAILED, site.Phase.STALE)  # and leaving one of these


@dataclass(frozen=True)
class Config:
    """What the controller needs to know beyond the Sites: how nodes reach the hub, when a silent node is stale."""

    hub: credentials.Hub
    stale_after: float = 900.0


@dataclass
class Counters:
    """Writes made, by kind (tests and metrics read them)."""

    status_writes: int = 0
    label_writes: int = 0
    events: int = 0
    reconciles: int = 0
    delivery_writes: int = 0  # the BMC cycle's writes of status.delivery (`controller.bmccycle`)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, name: str) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + 1)


def site_ref(namespace: str, name: str) -> kube.Ref:
    return kube.Ref(SITES, name, namespace)


@dataclass(frozen=True)
class Outcome:
    phase: str
    wrote: bool


def _own(current: Mapping[str, Any]) -> dict[str, Any]:
    return {key: current[key] for key in OWN_KEYS if key in current}


def _desired_own(derived: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in derived.items() if value not in ({}, None)}


def _credential(
    client: kube.Client, obj: dict[str, Any], config: Config, now: dt.datetime, offline: str
) -> dict[str, str] | None:
    """The credential's status block, issued (or renewed) for a valid Site whose stick was asked for; None when the
    Site does not report (revoked then), no stick was asked for (nothing read, nothing made), or it was revoked."""
    if not site.reports(obj):
        credentials.revoke(client, obj["metadata"]["namespace"], obj["metadata"]["name"])
        return None
    if not credentials.requested(obj):
        return None
    issued = credentials.ensure_token(client, obj, config.hub, now, offline=offline)
    return issued.status() if issued is not None else None


def _wave_of(client: kube.Client, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The Wave the Site's gate names (None: no gate). A gate naming a Wave that is gone is removed: the Site then
    belongs to no wave and its node goes, as with no gate (a deleted Wave holds no one)."""
    seen = site.view(obj)
    name = str(seen.gate.get("wave") or "")
    if not seen.gate:
        return None
    found = client.find(waves.wave_ref(seen.namespace, name)) if name else None
    if found is None:
        path = site_ref(seen.namespace, seen.name).path("status")
        client.request(
            "PATCH", path, body={"status": {site.STATUS_GATE: None}}, content_type=kube.MERGE_PATCH, retry=True
        )
        obj.setdefault("status", {}).pop(site.STATUS_GATE, None)
    return found


def _awaits_wave(client: kube.Client, obj: dict[str, Any]) -> bool:
    """A BMC Site (the controller asks for its credential itself, `credentials.BMC_REQUEST`) that a Wave selects but
    has not gated yet: no credential, so nothing is inserted, until the wave's pass says its batch is open. (A stick
    is asked for by a person, after the wave planned it; a BMC Site would otherwise be delivered the moment it is
    valid, before its wave's first pass.)"""
    if credentials.requested(obj) != credentials.BMC_REQUEST or site.view(obj).gate:
        return False
    if site.view(obj).status.get(site.STATUS_CREDENTIAL):
        return False  # issued before its wave came: a wave holds only what it has planned
    return waves.selecting(client, obj)


def desired_status(client: kube.Client, obj: dict[str, Any], config: Config, now: dt.datetime) -> dict[str, Any]:
    """The controller's part of the status (issuing the credential on the way when the Site is valid)."""
    spec = obj.get("spec") or {}
    current = obj.get("status") or {}
    checked = None
    credential = None
    admin = None
    held = ""
    if not spec.get("suspend"):
        keys = adminaccess.ensure(client, obj, now)  # before the medium, which carries its CA
        admin = keys.status() if keys is not None else None
        checked = sitemedium.examine(client, obj)
        wave = _wave_of(client, obj) if checked.valid else None
        gate = site.view(obj).gate
        if checked.valid and site.view(obj).held:  # no credential issued nor renewed; one issued before stays
            # the cause is the gate's: it is not repeated here, so a new cause rewrites the gate only, not the status
            held = f"wave {gate.get('wave')}, batch {gate.get('batch')} (status.gate.cause says why)"
            credential = dict(current.get(site.STATUS_CREDENTIAL) or {}) or None
        elif checked.valid and _awaits_wave(client, obj):
            held = "its wave has not planned it yet (a BMC Site is delivered once its batch is open)"
            credential = dict(current.get(site.STATUS_CREDENTIAL) or {}) or None
        elif checked.valid:
            offline = wave_mod.view(wave).offline if wave is not None else ""
            credential = _credential(client, obj, config, now, offline)
    inputs = status_mod.Inputs(
        generation=int(obj["metadata"].get("generation") or 0),
        checked=checked,
        credential=credential,
        reporting_enabled=site.reports(obj),
        requested=bool(credentials.requested(obj)),
        agent=current.get(site.STATUS_AGENT),
        previous=current.get(site.STATUS_CONDITIONS) or [],
        now=now,
        stale_after=config.stale_after,
        admin_access=admin,
        held=held,
        shelf=site.horizon(obj),
        delivery=_delivery_record(obj),
    )
    return status_mod.derive(inputs)


def _delivery_record(obj: dict[str, Any]) -> Mapping[str, Any] | None:
    """A BMC-delivered Site's `status.delivery` (the BMC cycle's record, `controller.bmccycle`); None for a stick."""
    spec = obj.get("spec")
    if delivery.read(spec if isinstance(spec, Mapping) else {})[0].method is not delivery.Method.BMC:
        return None
    record = site.view(obj).status.get(site.STATUS_DELIVERY)
    return record if isinstance(record, Mapping) else {}


def _event(client: kube.Client, obj: dict[str, Any], derived: Mapping[str, Any], now: dt.datetime) -> None:
    phase, reason, message = str(derived[site.STATUS_PHASE]), str(derived[site.STATUS_REASON]), _reason_message(derived)
    meta = obj["metadata"]
    stamp = status_mod.iso(now)
    event = {
        "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
        "involvedObject": {
            "apiVersion": site.API_VERSION, "kind": site.KIND, "name": meta["name"],
            "namespace": meta["namespace"], "uid": meta.get("uid"),
        },
        "reason": reason,
        "message": status_mod.said(f"phase {phase}: {message}", site.MAX_CONDITION_MESSAGE),
        "type": "Warning" if phase in WARNING_PHASES else "Normal",
        "source": {"component": COMPONENT},
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
    }  # fmt: skip
    client.create(EVENTS, event)


def wants_event(before: object, after: str) -> bool:
    """Whether a phase change from `before` to `after` is worth an Event (see the module's docstring)."""
    return before != after and (after in EVENT_PHASES or before in RESUMED_PHASES)


def _reason_message(derived: Mapping[str, Any]) -> str:
    reason = derived.get(site.STATUS_REASON)
    for condition in derived.get(site.STATUS_CONDITIONS) or []:
        if condition.get("reason") == reason and condition.get("status") == "False":
            return str(condition.get("message", ""))
    for condition in derived.get(site.STATUS_CONDITIONS) or []:
        if condition.get("reason") == reason:
            return str(condition.get("message", ""))
    return str(reason or "")


def metadata_patch(seen: site.View, phase: str) -> dict[str, Any]:
    """The phase label when it differs, and, once the Site is Relocated, Argo CD's options keeping it from being
    pruned or deleted (`site.KEEP_OPTIONS`), in the same write: never taken off again (the store stays relocated)."""
    patch: dict[str, Any] = {}
    if seen.labels.get(site.PHASE_LABEL) != phase:
        patch["labels"] = {site.PHASE_LABEL: phase}
    if phase == site.Phase.RELOCATED:
        options = site.kept_options(seen.annotations.get(site.ARGOCD_SYNC_OPTIONS))
        if options is not None:
            patch["annotations"] = {site.ARGOCD_SYNC_OPTIONS: options}
    return patch


def reconcile(
    client: kube.Client, config: Config, ref: kube.Ref, now: dt.datetime, counters: Counters | None = None
) -> Outcome | None:
    """Converge one Site; None when it is gone or going (its owned objects go with it)."""
    counters = counters or Counters()
    counters.add("reconciles")
    obj = client.find(ref)
    if obj is None or obj["metadata"].get("deletionTimestamp"):
        return None
    derived = desired_status(client, obj, config, now)
    seen = site.view(obj)
    current = _own(seen.status)
    patch = kube.merge_patch(current, _desired_own(derived))
    phase = str(derived[site.STATUS_PHASE])
    metadata = metadata_patch(seen, phase)
    if metadata:  # first: selecting by the label never lags
        client.patch(ref, {"metadata": metadata})
        counters.add("label_writes")
    if patch:
        client.request("PATCH", ref.path("status"), body={"status": patch}, content_type=kube.MERGE_PATCH, retry=True)
        counters.add("status_writes")
        LOG.info(
            "site %s/%s: status updated (phase %s, reason %s)",
            ref.namespace,
            ref.name,
            phase,
            derived[site.STATUS_REASON],
        )
    if wants_event(current.get(site.STATUS_PHASE), phase):
        _event(client, obj, derived, now)
        counters.add("events")
    return Outcome(phase, bool(patch))

"""A wave's plan from its Sites as they stand: pure functions, no API, so every batch state and brake is tested by
table (the reconcile that reads and writes is `controller.waves`).

Given the Wave (`resource.wave.View`), its member Sites and the time, `plan` says which batch each Site is in, which
batches are open, whether the brake holds the wave (and why), each Site's `status.gate` (the wave contract), and the
Wave's status. The rules, in the order they are applied:

- A Site keeps the batch its gate names (a batch once told is never changed); a Site new to the wave takes the
  first batch with room that has not opened yet, else the last: Sites are taken in name order.
- A Site whose node has reported (its `status.agent`: the run started, or is done) is never held: a halted wave
  strands no node mid-relocation.
- Batch 0 (the canary) opens at once; batch N opens when batch N-1 is done (every Site relocated or failed, or its
  timeout passed) with at least `successThreshold` percent relocated, and, with `manualApproval`, once
  `approvedBatches` is N or more. Sites count as started in the batch they are in.
- The brake, over the batches at or above `approvedBatches` (those below are reviewed): a batch whose failures pass
  what the threshold allows (unfinished Sites count as failures once its timeout passed), or `sameCause` failed Sites
  sharing one cause, halts the wave in that batch. A halt stays (with its first cause) until `approvedBatches`
  is above its batch.
- In open batches of a wave not halted, at most `maxConcurrency` Sites run at once: a Site already open or started
  keeps its place, the next ones (by batch, then name) open as places free up.
"""

from __future__ import annotations

import collections
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from snoreloc.siblings import errors
from snoreloc_fleet.controller import status as status_mod
from snoreloc_fleet.resource import site
from snoreloc_fleet.resource import wave as wave_mod
from snoreloc_fleet.resource.wave import BatchState
from snoreloc_fleet.resource.wave import Phase as WavePhase

FINISHED = (site.Phase.RELOCATED.value, site.Phase.FAILED.value)


@dataclass(frozen=True)
class Cause:
    """What a failed Site failed of, as the brake groups it: one defect across many sites is one cause."""

    step: str
    reason: str
    agent: str
    template: str

    def text(self) -> str:
        template = self.template or "unknown"
        return (
            f"step {self.step or 'unknown'}, reason {self.reason}, agent {self.agent or 'unknown'}, template {template}"
        )


@dataclass(frozen=True)
class Member:
    """One Site of the wave, as the plan needs it."""

    name: str
    phase: str
    started: bool  # its node reported (running, done or failed): never held
    gate: Mapping[str, Any]
    cause: Cause | None  # when Failed

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED


def _reason(agent: Mapping[str, Any]) -> str:
    """The node's exit class (`snoreloc.errors.ExitCode`: Unavailable, BadConfig, ...), else its run state."""
    code = agent.get("exitCode")
    if isinstance(code, int) and not isinstance(code, bool):
        try:
            return errors.ExitCode(code).name.title().replace("_", "")
        except ValueError:
            return f"Exit{code}"
    return str(agent.get("runState") or "unknown")


def member(obj: Mapping[str, Any]) -> Member:
    """A Site object as a member of a wave."""
    seen = site.view(obj)
    agent = seen.status.get(site.STATUS_AGENT)
    agent = agent if isinstance(agent, Mapping) else {}
    phase = str(seen.status.get(site.STATUS_PHASE) or site.Phase.PENDING.value)
    cause = None
    if phase == site.Phase.FAILED.value:
        failure = agent.get("failure")
        failure = failure if isinstance(failure, Mapping) else {}
        cause = Cause(
            step=str(failure.get("step") or agent.get("step") or "")[:128],
            reason=_reason(agent),
            agent=str(agent.get("agentVersion") or "")[:64],
            template=str(seen.annotations.get(site.TEMPLATE_DIGEST) or "")[:64],
        )
    started = bool(agent.get("runState"))
    return Member(seen.name, phase, started, seen.gate, cause)


@dataclass
class Batch:
    index: int
    size: int
    members: list[Member] = field(default_factory=list)
    state: BatchState = BatchState.PENDING
    opened_at: str = ""

    def count(self, what: str) -> int:
        return sum(1 for m in self.members if m.phase == what)

    @property
    def relocated(self) -> int:
        return self.count(site.Phase.RELOCATED.value)

    @property
    def failed(self) -> int:
        return self.count(site.Phase.FAILED.value)

    @property
    def finished(self) -> bool:
        return all(m.finished for m in self.members)


@dataclass(frozen=True)
class Plan:
    """What the wave reconcile writes: each member's gate (by name) and the Wave's status."""

    gates: Mapping[str, dict[str, Any]]
    status: dict[str, Any]
    halted: bool


def _assign(view: wave_mod.View, members: Sequence[Member]) -> list[Batch]:
    sizes = view.sizes(len(members))
    batches = [Batch(i, size) for i, size in enumerate(sizes)]
    opened = {int(b.get("index", -1)) for b in wave_mod.batch_rows(view.status) if b.get("openedAt")}
    new = []
    for item in sorted(members, key=lambda m: m.name):
        told = item.gate.get("batch") if item.gate.get("wave") == view.name else None
        if isinstance(told, int) and 0 <= told < len(batches):
            batches[told].members.append(item)
        else:
            new.append(item)
    for item in new:
        room = [b for b in batches if len(b.members) < b.size and b.index not in opened]
        (room[0] if room else batches[-1]).members.append(item)
    for batch in batches:
        batch.size = len(batch.members)
    return [b for b in batches if b.members or b.index == 0]


def _allowed(view: wave_mod.View, batch: Batch) -> int:
    """Failures a batch may have under the success threshold."""
    return batch.size - -(-batch.size * view.success_threshold // 100)


def _timed_out(view: wave_mod.View, batch: Batch, now: dt.datetime) -> bool:
    opened = status_mod.when(batch.opened_at)
    return opened is not None and (now - opened).total_seconds() > view.batch_timeout


def _brake(view: wave_mod.View, batches: Sequence[Batch], now: dt.datetime) -> tuple[int, str] | None:
    """(batch, cause) when the brake halts the wave, over the open batches not yet reviewed."""
    counted = [b for b in batches if b.state is BatchState.OPEN or b.state is BatchState.DONE]
    counted = [b for b in counted if b.index >= view.approved]
    by_cause: dict[Cause, list[tuple[int, str]]] = collections.defaultdict(list)
    for batch in counted:
        for item in batch.members:
            if item.cause is not None:
                by_cause[item.cause].append((batch.index, item.name))
    for cause, failed in sorted(by_cause.items(), key=lambda kv: (-len(kv[1]), kv[0].text())):
        if len(failed) >= view.same_cause:
            names = ", ".join(name for _, name in failed[:3]) + (", ..." if len(failed) > 3 else "")
            return max(i for i, _ in failed), (
                f"{len(failed)} Sites failed with the same cause ({cause.text()}): {names}"
            )
    for batch in counted:
        late = _timed_out(view, batch, now) and not batch.finished
        bad = batch.failed + (batch.size - batch.relocated - batch.failed if late else 0)
        if bad > _allowed(view, batch):
            what = "timed out with" if late else "has"
            return batch.index, (
                f"batch {batch.index} {what} {bad} of {batch.size} Sites not relocated, more than the "
                f"{_allowed(view, batch)} its success threshold of {view.success_threshold}% allows"
            )
    return None


def _open_batches(view: wave_mod.View, batches: list[Batch], now: dt.datetime) -> str:
    """Set each batch's state and opening time; the reason the first closed batch is closed ("" when none is)."""
    previous = {int(b.get("index", -1)): str(b.get("openedAt") or "") for b in wave_mod.batch_rows(view.status)}
    why = ""
    for batch in batches:
        before = batches[batch.index - 1] if batch.index > 0 else None
        if before is not None and before.state is not BatchState.DONE:
            why = why or f"batch {batch.index} waits for batch {before.index} to finish"
            continue
        if before is not None and before.relocated * 100 < before.size * view.success_threshold:
            why = why or (
                f"batch {batch.index} waits: batch {before.index} relocated {before.relocated} of {before.size}, "
                f"under the success threshold of {view.success_threshold}%"
            )
            continue
        if batch.index > 0 and view.manual_approval and view.approved < batch.index:
            batch.state = BatchState.WAITING
            why = why or f"batch {batch.index} waits for approval (spec.approvedBatches: {batch.index})"
            continue
        batch.state = BatchState.OPEN
        batch.opened_at = previous.get(batch.index) or status_mod.iso(now)
        if batch.finished or _timed_out(view, batch, now):
            batch.state = BatchState.DONE
    return why


def _gate(item: Member, view: wave_mod.View, batch: int, held: str, now: dt.datetime) -> dict[str, Any]:
    state = site.GATE_HELD if held else site.GATE_OPEN
    before = item.gate if item.gate.get("wave") == view.name else {}
    since = before.get("since") if before.get("state") == state else None
    cause = status_mod.said(held, site.MAX_GATE_CAUSE) if held else ""
    return {"state": state, "wave": view.name, "batch": batch, "cause": cause, "since": since or status_mod.iso(now)}


def _halt(view: wave_mod.View, batches: list[Batch], now: dt.datetime) -> dict[str, Any] | None:
    kept = view.halt
    if kept and isinstance(kept.get("batch"), int) and kept["batch"] >= view.approved:
        return dict(kept)
    found = _brake(view, batches, now)
    if found is None:
        return None
    return {"batch": found[0], "cause": status_mod.said(found[1], wave_mod.MAX_CAUSE), "since": status_mod.iso(now)}


def _hold(
    view: wave_mod.View, item: Member, batch: Batch, halt: Mapping[str, Any] | None, closed_why: str
) -> str | None:
    """Why `item` is held ("": it is not); None when only a free place decides."""
    if item.started or item.finished:
        return ""  # a node that started is never held
    if halt is not None:
        return f"wave {view.name} halted: {halt['cause']}"
    if batch.state not in (BatchState.OPEN, BatchState.DONE):
        mine = closed_why.startswith(f"batch {batch.index} ")
        return closed_why if mine else f"batch {batch.index} waits for the batches before it"
    if item.gate.get("state") == site.GATE_OPEN and item.gate.get("wave") == view.name:
        return ""
    return None


def plan(view: wave_mod.View, members: Sequence[Member], now: dt.datetime) -> Plan:
    """The wave's gates and status now (see the module's docstring)."""
    batches = _assign(view, members)
    closed_why = _open_batches(view, batches, now)
    halt = _halt(view, batches, now)
    gates: dict[str, dict[str, Any]] = {}
    running = sum(
        1
        for b in batches
        for m in b.members
        if not m.finished and (m.started or (m.gate.get("state") == site.GATE_OPEN and m.gate.get("wave") == view.name))
    )
    limit = view.max_concurrency or len(members) + 1
    held_counts: collections.Counter[int] = collections.Counter()
    for batch in batches:
        for item in batch.members:
            held = _hold(view, item, batch, halt, closed_why)
            if held is None:  # in an open batch, not yet open itself: a place if one is free
                held = (
                    ""
                    if running < limit
                    else (
                        f"waits for a place: {limit} Sites of wave {view.name} relocate at once (spec.maxConcurrency)"
                    )
                )
                running += 0 if held else 1
            if held:
                held_counts[batch.index] += 1
            gates[item.name] = _gate(item, view, batch.index, held, now)
    if halt is not None:
        for batch in batches:
            if batch.index == halt["batch"]:
                batch.state = BatchState.HALTED
            elif batch.index > halt["batch"] and not any(m.started for m in batch.members):
                batch.state, batch.opened_at = BatchState.PENDING, ""  # it opens after the halt is lifted
    return Plan(gates, _status(view, batches, halt, held_counts), halt is not None)


def _status(
    view: wave_mod.View, batches: Sequence[Batch], halt: Mapping[str, Any] | None, held: Mapping[int, int]
) -> dict[str, Any]:
    rows = []
    for batch in batches:
        running = sum(1 for m in batch.members if m.started and not m.finished)
        row: dict[str, Any] = {
            "index": batch.index,
            "size": batch.size,
            "state": batch.state.value,
            "pending": batch.size - running - batch.relocated - batch.failed,
            "running": running,
            "relocated": batch.relocated,
            "failed": batch.failed,
            "held": held.get(batch.index, 0),
        }
        if batch.opened_at:
            row["openedAt"] = batch.opened_at
        rows.append(row)
    total = sum(b.size for b in batches)
    if halt is not None:
        phase = WavePhase.HALTED
    elif total == 0:
        phase = WavePhase.EMPTY
    elif all(b.state is BatchState.DONE for b in batches):
        phase = WavePhase.COMPLETED
    elif any(b.state is BatchState.WAITING for b in batches) and not any(b.state is BatchState.OPEN for b in batches):
        phase = WavePhase.WAITING
    else:
        phase = WavePhase.PROGRESSING
    opened = [b.index for b in batches if b.state is not BatchState.PENDING and b.state is not BatchState.WAITING]
    status: dict[str, Any] = {
        wave_mod.STATUS_OBSERVED: view.generation,
        wave_mod.STATUS_PHASE: phase.value,
        wave_mod.STATUS_SITES: total,
        wave_mod.STATUS_RELOCATED: sum(b.relocated for b in batches),
        wave_mod.STATUS_FAILED: sum(b.failed for b in batches),
        wave_mod.STATUS_CURRENT: max(opened, default=0),
        wave_mod.STATUS_BATCHES: rows,
        wave_mod.STATUS_HALT: dict(halt) if halt is not None else None,
    }
    return status

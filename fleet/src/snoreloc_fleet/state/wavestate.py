"""A Wave as the fleet's readers show it (`fleet status --wave`, the HTML page): pure functions over the Wave's
status as the controller wrote it (`controller.waveplan`), read one way, so a Wave written by an older or newer
controller, or edited by hand, shows as unknown where it is misshapen rather than crashing a reader."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from snoreloc_fleet.resource import wave as wave_mod

BATCH_COLUMNS = ("batch", "state", "size", *wave_mod.COUNTS)


@dataclass(frozen=True)
class Wave:
    """One Wave: its name, phase, halt cause ("" when not halted), and each batch's counts."""

    namespace: str
    name: str
    phase: str
    selector: str
    halt: str
    halt_batch: int | None
    batches: Sequence[Mapping[str, Any]]  # BATCH_COLUMNS -> int or text


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 10**9 else None


def read(obj: Mapping[str, Any]) -> Wave:
    seen = wave_mod.view(obj)
    batches = []
    for batch in wave_mod.batch_rows(seen.status):
        row: dict[str, Any] = {"batch": _count(batch.get("index")), "state": str(batch.get("state") or "")[:32]}
        row |= {key: _count(batch.get(key)) for key in ("size", *wave_mod.COUNTS)}
        batches.append(row)
    halt = seen.halt
    return Wave(
        namespace=seen.namespace,
        name=seen.name,
        phase=str(seen.status.get(wave_mod.STATUS_PHASE) or "Pending")[:32],
        selector=wave_mod.label_selector(seen.selector),
        halt=str(halt.get("cause") or "")[: wave_mod.MAX_CAUSE],
        halt_batch=_count(halt.get("batch")),
        batches=batches,
    )


def lines(item: Wave) -> list[str]:
    """The wave as a table for people (each text still to pass the terminal's sanitiser)."""
    out = [f"wave {item.name}: {item.phase} (Sites {item.selector or 'every Site of the namespace'})"]
    if item.halt:
        out.append(f"  halted in batch {item.halt_batch}: {item.halt}")
        out.append("  (approve past it once fixed: kubectl patch wave NAME --type merge -p "
                   "'{\"spec\":{\"approvedBatches\":N}}')")  # fmt: skip
    out.append("  " + " ".join(f"{c:>9s}" for c in BATCH_COLUMNS))
    for batch in item.batches:
        cells = ["?" if batch.get(c) is None else str(batch.get(c)) for c in BATCH_COLUMNS]
        out.append("  " + " ".join(f"{c:>9s}" for c in cells))
    return out


def document(item: Wave) -> dict[str, Any]:
    """The wave for `-o json`."""
    return {
        "namespace": item.namespace,
        "name": item.name,
        "phase": item.phase,
        "selector": item.selector,
        "halt": {"batch": item.halt_batch, "cause": item.halt} if item.halt else None,
        "batches": [dict(b) for b in item.batches],
    }

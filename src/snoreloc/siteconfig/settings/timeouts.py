"""`spec.timeouts`: overrides of the bounded waits, in seconds (the whole run, the network probe, the API, the
settle, a hold by the fleet), each within its bounds; `total` must cover the others but the fleet's hold, which
comes before the first cluster write and is not counted in the whole run (`snoreloc.engine.fleetgate`). Every wait
reads them through `model.SiteConfig`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from snoreloc.siteconfig import checks, fragments, setting

# Bounds of every timeout override, seconds: (minimum, maximum). Defaults live in Timeouts.
TIMEOUT_BOUNDS: dict[str, tuple[int, int]] = {
    "total": (600, 86400),
    "networkProbe": (10, 1800),
    "api": (60, 7200),
    "settle": (300, 14400),
    "fleetHold": (0, 172800),
}
OUTSIDE_TOTAL = frozenset({"fleetHold"})  # waits before the whole run's clock starts counting again


TIMEOUT_FIELDS = {
    "total": "total",
    "networkProbe": "network_probe",
    "api": "api",
    "settle": "settle",
    "fleetHold": "fleet_hold",
}


def _schema() -> dict[str, Any]:
    defaults = Timeouts()
    meaning = {
        "total": "the whole run",
        "networkProbe": "probing gateway, DNS and API after the network change before rolling it back",
        "api": "waiting for the Kubernetes API after kubelet starts",
        "settle": "waiting for cluster operators and rollouts to settle, and, before any change, for a freshly "
        "booted cluster to become healthy",
        "fleetHold": "a node held by its fleet (its wave's batch not open, or the wave halted) before its first "
        "cluster write; then it stops with exit 75, having changed nothing on the cluster; not counted in total",
    }
    properties = {}
    for key, (low, high) in TIMEOUT_BOUNDS.items():
        default = getattr(defaults, TIMEOUT_FIELDS[key])
        properties[key] = fragments.prop(
            f"Seconds allowed for {meaning[key]} ({low}-{high}, default {default}).",
            [default],
            type="integer",
            minimum=low,
            maximum=high,
        )
    # Read from the very file it would bound, so it can bound nothing: kept only so old site-configs still validate.
    properties["siteConfig"] = fragments.prop(
        "Ignored: a site-config cannot bound the wait for its own arrival (the agent's discovery timeout does). "
        "Remove it; `validate` warns while it is set.",
        [600],
        type="integer",
        deprecated=True,
    )
    return fragments.prop(
        "Overrides of the bounded waits, in seconds.", [{"total": 5400, "settle": 2700}], **fragments.obj(properties)
    )


@dataclass(frozen=True)
class Timeouts:
    """Upper bounds, in seconds, for the waits a site may need to tune (each bounded by the schema)."""

    total: int = 3600
    network_probe: int = 120
    api: int = 1200
    settle: int = 1800
    fleet_hold: int = 14400  # four hours: a wave's batch opened the same working day still finds the node waiting


def _load(values: Mapping[str, int] | None, checked: checks.Checked) -> Timeouts:
    return Timeouts(**{TIMEOUT_FIELDS[k]: v for k, v in (values or {}).items() if k in TIMEOUT_FIELDS})


def _check(run: checks.Run, spec: Mapping[str, Any]) -> None:
    path = SETTING.path
    values = spec.get(SETTING.key) or {}
    if not run.sound(path) or "total" not in values:
        return
    for key, value in values.items():
        if key == "total" or key in OUTSIDE_TOTAL or (*path, key) in SETTING.deprecated:
            continue
        if value > values["total"]:
            run.error((*path, "total"), f"is shorter than {SETTING.key}.{key} ({value}s); raise total or lower {key}")


SETTING = setting.Setting(key="timeouts", field="timeouts", schema=_schema(), load=_load, check=_check)

"""Status conditions as operators write them: a transition time that moves only when the status does.

The agent's settle step trusts `lastTransitionTime` to tell a fresh "done" from a stale one, so this rule is the
one thing every simulated operator must get right. ClusterOperators get the usual four conditions; the same
merge serves IngressController, MachineConfigPool and the Ingress `status.componentRoutes` entries.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from snoreloc_sim.kube import model
from snoreloc_sim.openshift.operators import base

Obj = model.Obj


@dataclass(frozen=True)
class Condition:
    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str = "AsExpected"
    message: str = ""


def merge(existing: list[Obj], updates: Iterable[Condition], now: str) -> list[Obj]:
    """Conditions with `updates` applied by type; `lastTransitionTime` changes only when `status` changes."""
    by_type = {c.get("type"): dict(c) for c in existing}
    for cond in updates:
        old = by_type.get(cond.type)
        moved = old is None or old.get("status") != cond.status
        when = now if moved or old is None else old.get("lastTransitionTime", now)
        by_type[cond.type] = {
            "type": cond.type,
            "status": cond.status,
            "lastTransitionTime": when,
            "reason": cond.reason,
            "message": cond.message,
        }
    return list(by_type.values())


def settled(message: str = "") -> list[Condition]:
    return [
        Condition("Available", "True", "AsExpected", message),
        Condition("Progressing", "False", "AsExpected", message),
        Condition("Degraded", "False", "AsExpected", ""),
        Condition("Upgradeable", "True", "AsExpected", ""),
    ]


def progressing(reason: str, message: str) -> list[Condition]:
    return [Condition("Progressing", "True", reason, message)]


def degraded(reason: str, message: str) -> list[Condition]:
    return [Condition("Degraded", "True", reason, message)]


def set_operator(cluster: model.Cluster, name: str, updates: Iterable[Condition]) -> None:
    """Apply condition updates to ClusterOperator `name` (a missing operator is left alone); conditions another
    controller holds (`cluster.overlays`) win, as a library-go status union keeps a failing check's condition."""
    co = base.find(cluster, base.CLUSTEROPERATORS, name)
    if co is None:
        return
    status = co.setdefault("status", {})
    held = cluster.overlays.get(name, {})
    wanted = [cond for cond in updates if cond.type not in held] + list(held.values())
    status["conditions"] = merge(status.get("conditions", []), wanted, base.timestamp())
    base.write_status(cluster, base.CLUSTEROPERATORS, co)


def operator_status(version: str, related: list[Obj], now: str) -> Obj:
    """A healthy ClusterOperator status, as the seed installs it."""
    return {
        "conditions": merge([], settled(), now),
        "versions": [{"name": "operator", "version": version}],
        "relatedObjects": related,
    }


def condition(obj: Obj, kind: str) -> Obj | None:
    """The condition of type `kind` in an object's status, if any."""
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None

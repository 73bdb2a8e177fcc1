"""Rollouts as their conditions show them: passing what settle reads anyway to the journal (so the timeline can
show each rollout), and judging whether an operator has moved since our write set it rolling out.

The condition that says "rolling out" is `Progressing` on a ClusterOperator and `Updating` on a
MachineConfigPool (openshift/api config/v1 types_cluster_operator.go; machineconfiguration/v1 types.go).
"""

from __future__ import annotations

from datetime import datetime

from snoreloc.adapters import kube
from snoreloc.steps import base, context


def condition(ctx: context.Context, name: str, obj: kube.Obj, kind: str) -> None:
    """Tell the journal whether `obj` (known to it as `name`) is rolling out, and since when."""
    found = base.conditions(obj).get(kind)
    since = base.parse_time(found.get("lastTransitionTime")) if found else None
    if found is not None and since is not None:
        ctx.rollouts.observe(name, found.get("status") == "True", since)


def moved_since(moved: datetime | None, changed: datetime) -> bool:
    """Whether a transition at `moved` came after our change. Real clusters stamp conditions to the second:
    then the comparison is made at that precision (a same-second transition counts)."""
    if moved is None:
        return False
    return moved >= (changed if moved.microsecond else changed.replace(microsecond=0))


def last_transition(obj: kube.Obj, kinds: tuple[str, ...]) -> datetime | None:
    times = [base.parse_time(c.get("lastTransitionTime")) for k, c in base.conditions(obj).items() if k in kinds]
    found = [t for t in times if t is not None]
    return max(found) if found else None


def rolled_out(co: kube.Obj, changed: datetime | None) -> bool:
    """Whether a ClusterOperator is healthy and, when our write at `changed` set it moving, has moved since."""
    if base.operator_problems(co):
        return False
    return changed is None or moved_since(last_transition(co, ("Available", "Progressing", "Degraded")), changed)

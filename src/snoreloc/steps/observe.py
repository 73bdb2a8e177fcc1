"""Passing the rollout conditions settle reads anyway to the journal, so the timeline can show each rollout.

The condition that says "rolling out" is `Progressing` on a ClusterOperator and `Updating` on a
MachineConfigPool (openshift/api config/v1 types_cluster_operator.go; machineconfiguration/v1 types.go).
"""

from __future__ import annotations

from snoreloc.adapters import kube
from snoreloc.steps import base, context

__all__ = ["condition"]


def condition(ctx: context.Context, name: str, obj: kube.Obj, kind: str) -> None:
    """Tell the journal whether `obj` (known to it as `name`) is rolling out, and since when."""
    found = base.conditions(obj).get(kind)
    since = base.parse_time(found.get("lastTransitionTime")) if found else None
    if found is not None and since is not None:
        ctx.rollouts.observe(name, found.get("status") == "True", since)

"""Step `node-labels`: the site-config's `spec.nodeLabels` merged into the node's labels.

Only the listed keys are written, each to its value (a key the node already carries with another value takes the
site's, and the plan says what it replaces); every other label stays as it is, the kubelet's and the users' alike,
and so do labels an earlier run set that the site-config no longer lists. The write is an update of the Node with
its resourceVersion, retried on a conflict with the labels merged again into the fresh object (the kubelet updates
the Node all the time). The backup keeps only the values those keys had (`context.Keep(labels=...)`), keys of later
runs added to it, so `rollback` puts back exactly those and never the Node's annotations, taints or status, which
the kubelet and the machine-config daemon own. Nothing rolls out and the node does not reboot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from snoreloc.adapters import kube
from snoreloc.siteconfig.settings import node_labels as node_labels_setting
from snoreloc.steps import base, context


def _labelled(node: kube.Obj, wanted: Mapping[str, str]) -> kube.Obj:
    labels = node.setdefault("metadata", {}).setdefault("labels", {})
    labels.update(wanted)
    return node


def label_changes(ctx: context.Context) -> list[base.ObjectChange]:
    """For each Node (one on a single-node cluster), the update that gives it the site's labels, if any is missing."""
    site = ctx.site.get(node_labels_setting.SETTING)
    if site is None:
        return []
    wanted = site.as_dict()
    keep = context.Keep(rollback=node_labels_setting.SETTING.rollback, labels=tuple(wanted))
    found = []
    for node in ctx.kube.list(kube.NODES):
        ref = kube.Ref(kube.NODES, str(node["metadata"]["name"]))
        change = base.update(ref, node, lambda obj: _labelled(obj, wanted), why="the site's node labels", keep=keep)
        found += [] if change is None else [change]
    return found


def replaced(change: base.ObjectChange, wanted: Mapping[str, str]) -> list[str]:
    """The labels the change gives another value, as `key: old -> new`."""
    before = ((change.before or {}).get("metadata") or {}).get("labels") or {}
    return [f"{key}: {before[key]} -> {value}" for key, value in wanted.items() if before.get(key, value) != value]


class NodeLabels(base.ObjectStep):
    name = "node-labels"
    setting = node_labels_setting.SETTING  # the setting this step applies
    description = "putting the site's labels on the node (no rollout)"

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {"node_labels": ctx.site.get(self.setting)}

    def changes(self, ctx: context.Context) -> list[base.ObjectChange]:
        return label_changes(ctx)

    def notes(self, ctx: context.Context, changes: Sequence[base.ObjectChange]) -> tuple[str, ...]:
        site = ctx.site.get(self.setting)
        if not changes or site is None:
            return ()
        wanted = site.as_dict()
        notes = [f"{self.setting.cost.note}; sets {', '.join(f'{k}={v}' for k, v in wanted.items())}"]
        notes += [f"replaces {text}" for change in changes for text in replaced(change, wanted)]
        return tuple(notes)


STEP = NodeLabels()  # placed by `engine.order.cluster_steps`

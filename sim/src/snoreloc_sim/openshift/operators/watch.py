"""What an operator watches, declared: the type, the object or namespace, the events and the fields that matter.

Each simulated operator lists its `Watch`es (`watches()`), as a kopf handler names its resource with `field=`,
`when=` filters and a kubebuilder reconciler its `Watches(...)` with predicates (controller-runtime
pkg/builder/controller.go, `For`/`Watches`/`WithEventFilter`; pkg/predicate/predicate.go, whose update predicates
compare the old and new object). `fan_out` subscribes them all to the store as one listener: a change reaches
only the handlers whose declaration it passes, so no operator filters store events itself. A comparison that
needs the operator's own knowledge (a default, a derived value) stays in its handler.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from snoreloc_sim.kube import model

Obj = model.Obj
ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
EVERY_EVENT = frozenset({ADDED, MODIFIED, DELETED})
LIVE = frozenset({ADDED, MODIFIED})  # the object exists afterwards: `new` is set


@dataclass(frozen=True)
class Change:
    """One committed store change, as the store's listeners receive it."""

    rtype: model.ResourceType
    event: str
    old: Obj | None
    new: Obj | None

    @property
    def meta(self) -> Obj:
        """The metadata of the object as it is now, or as it was when it is gone."""
        meta: Obj = (self.new or self.old or {}).get("metadata") or {}
        return meta


Handler = Callable[[Change], None]


def value_at(obj: Obj | None, path: str) -> Any:
    """The value at a dotted path (`spec.defaultCertificate.name`), None when the object or a step is absent."""
    node: Any = obj
    for step in path.split("."):
        node = node.get(step) if isinstance(node, dict) else None
    return node


@dataclass(frozen=True)
class Watch:
    """A declaration: `handler` is called for a change of the type `key` (the store key, `plural.group`; core
    types by plural) that passes every filter given.

    `name`, `namespace`: only that object, only that namespace. `events`: only these (ADDED, MODIFIED, DELETED).
    `changed`: only when one of these dotted fields differs between the old and the new object (an absent object
    or field counts as None, so a create or delete passes when the field is set on the side that exists);
    `any_create_or_delete`: `changed` is asked of updates alone, every create and delete passes (as
    controller-runtime's update predicates, `GenerationChangedPredicate`, let creates and deletes through)."""

    key: str
    handler: Handler
    name: str | None = None
    namespace: str | None = None
    events: frozenset[str] = EVERY_EVENT
    changed: tuple[str, ...] = ()
    any_create_or_delete: bool = False

    def passes(self, change: Change) -> bool:
        if change.event not in self.events:
            return False
        meta = change.meta
        if self.name is not None and meta.get("name") != self.name:
            return False
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        if not self.changed or (self.any_create_or_delete and change.event != MODIFIED):
            return True
        return any(value_at(change.old, path) != value_at(change.new, path) for path in self.changed)


class Operator(Protocol):
    """A simulated operator: what it watches, each with the handler a matching change is given to, in the
    writer's thread (keep it quick)."""

    def watches(self) -> Sequence[Watch]: ...


def fan_out(operators: Sequence[Operator]) -> model.ChangeListener:
    """One store listener for all operators' watches: one copy of each change instead of one per operator, the
    watches found by type, and a failing handler cannot fail the client's write or starve the others."""
    by_key: dict[str, list[Watch]] = {}
    for operator in operators:
        for watch in operator.watches():
            by_key.setdefault(watch.key, []).append(watch)

    def listener(rtype: model.ResourceType, event: str, old: Obj | None, new: Obj | None) -> None:
        watches = by_key.get(rtype.key)
        if not watches:
            return
        change = Change(rtype, event, old, new)
        for watch in watches:
            if not watch.passes(change):
                continue
            try:
                watch.handler(change)
            except Exception:  # a controller bug is printed, as the timeline does, and the write stands
                traceback.print_exc()

    return listener

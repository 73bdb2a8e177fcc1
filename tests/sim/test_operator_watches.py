"""Operators declare what they watch (`snoreloc_sim.openshift.operators.watch`), and the base dispatches on it.

- Every declaration of every operator names a type the seeded cluster serves and only known events: a typo in a
  store key would otherwise be a watch that never fires.
- `Watch.passes`, by class of change (seeded, deterministic): each class of filter (type, name, namespace,
  events, changed fields, creates and deletes let through) against a reference written from its docstring.
- A failing handler leaves the client's write standing and the other operators' handlers called.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from snoreloc_sim.kube import model, registry
from snoreloc_sim.openshift import crds, operators, seeds
from snoreloc_sim.openshift.operators import watch

pytestmark = pytest.mark.simonly  # the simulator's operators, driven through its store

Obj = dict[str, Any]
CASES = 3000
KEYS = ("secrets", "configmaps", "routes.route.openshift.io")
NAMES = ("cluster", "default", "pull-secret")
NAMESPACES = ("", "openshift-config", "openshift-ingress")
FIELDS = ("data", "spec.domain", "metadata.generation")


@pytest.fixture
def bare() -> Iterator[tuple[model.Cluster, tuple[watch.Operator, ...]]]:
    """A seeded cluster with its operators started and no HTTP in front."""
    types = dict(registry.load(crds.DIR).types)
    cluster = model.Cluster(store=model.Store(), timeline=model.Timeline(100.0), types=types)
    seeds.load(cluster)
    started = operators.start(cluster)
    yield cluster, started
    cluster.timeline.close()


def test_every_declared_watch_names_a_served_type_and_known_events(
    bare: tuple[model.Cluster, tuple[watch.Operator, ...]],
) -> None:
    cluster, started = bare
    declared = [(type(op).__name__, w) for op in started for w in op.watches()]
    assert len(started) >= 9 and len(declared) >= len(started)
    unknown = [(name, w.key) for name, w in declared if w.key not in cluster.types]
    assert not unknown, f"watches on types the cluster does not serve: {unknown}"
    assert all(w.events and w.events <= watch.EVERY_EVENT for _, w in declared)
    assert all(path and not path.startswith(".") for _, w in declared for path in w.changed)


def _maybe(rng: random.Random, choices: tuple[str, ...]) -> str | None:
    return rng.choice((None, *choices))


def _object(rng: random.Random, key: str) -> Obj:
    meta: Obj = {"name": rng.choice(NAMES), "namespace": rng.choice(NAMESPACES)}
    if rng.random() < 0.5:
        meta["generation"] = rng.randint(1, 2)
    obj: Obj = {"metadata": meta}
    if rng.random() < 0.5:
        obj["data"] = {"k": rng.choice("ab")}
    if rng.random() < 0.5:
        obj["spec"] = {"domain": rng.choice(("x.example", "y.example"))} if rng.random() < 0.8 else {}
    return obj


def _change(rng: random.Random) -> watch.Change:
    key = rng.choice(KEYS)
    rtype = model.ResourceType("", "v1", key, "Kind", True, False)
    event = rng.choice(sorted(watch.EVERY_EVENT))
    old = None if event == watch.ADDED else _object(rng, key)
    new = None if event == watch.DELETED else _object(rng, key)
    if old is not None and new is not None:
        new["metadata"].update(name=old["metadata"]["name"], namespace=old["metadata"]["namespace"])
    return watch.Change(rtype, event, old, new)


def _watch(rng: random.Random) -> watch.Watch:
    events = frozenset(e for e in sorted(watch.EVERY_EVENT) if rng.random() < 0.7) or watch.LIVE
    changed = tuple(f for f in FIELDS if rng.random() < 0.3)
    return watch.Watch(
        rng.choice(KEYS),
        lambda _change: None,
        name=_maybe(rng, NAMES),
        namespace=_maybe(rng, NAMESPACES),
        events=events,
        changed=changed,
        any_create_or_delete=rng.random() < 0.5,
    )


def _dig(obj: Obj | None, path: str) -> Any:
    for step in path.split("."):
        obj = obj.get(step) if isinstance(obj, dict) else None
    return obj


def _reference(w: watch.Watch, change: watch.Change) -> bool:
    """The Watch docstring, read literally (the type is the dispatcher's: `fan_out` indexes by it)."""
    present = change.new if change.new is not None else change.old
    assert present is not None
    meta = present["metadata"]
    if change.event not in w.events:
        return False
    if (w.name is not None and meta["name"] != w.name) or (
        w.namespace is not None and meta["namespace"] != w.namespace
    ):
        return False
    if not w.changed:
        return True
    if w.any_create_or_delete and change.event in (watch.ADDED, watch.DELETED):
        return True
    return any(_dig(change.old, path) != _dig(change.new, path) for path in w.changed)


def test_a_watch_passes_what_its_declaration_says_by_class() -> None:
    rng = random.Random(31)
    passed = 0
    by_class: dict[str, int] = {}
    for _ in range(CASES):
        w, change = _watch(rng), _change(rng)
        expected = _reference(w, change)
        assert w.passes(change) == expected, (w, change)
        passed += expected
        label = ("changed" if w.changed else "any") + ("+creates" if w.any_create_or_delete else "")
        by_class[f"{label}:{change.event}"] = by_class.get(f"{label}:{change.event}", 0) + 1
    assert 0.1 * CASES < passed < 0.9 * CASES  # both answers are exercised
    assert len(by_class) == 12 and min(by_class.values()) > 50  # every class of filter meets every event


class _Recording:
    def __init__(self, key: str, *, fail: bool) -> None:
        self.seen: list[str] = []
        self._key, self._fail = key, fail

    def watches(self) -> tuple[watch.Watch, ...]:
        return (watch.Watch(self._key, self._handle, namespace="ns"),)

    def _handle(self, change: watch.Change) -> None:
        if self._fail:
            raise RuntimeError("an operator bug")
        self.seen.append(f"{change.event} {change.meta['name']}")


def test_a_failing_handler_leaves_the_write_and_the_other_operators(capsys: pytest.CaptureFixture[str]) -> None:
    store = model.Store()
    configmaps = model.ResourceType("", "v1", "configmaps", "ConfigMap", True, False)
    namespaces = model.ResourceType("", "v1", "namespaces", "Namespace", False, True)
    for name in ("ns", "default"):
        store.create(namespaces, {"metadata": {"name": name}})
    failing, recording = _Recording("configmaps", fail=True), _Recording("configmaps", fail=False)
    store.subscribe(watch.fan_out((failing, recording)))
    created = store.create(configmaps, {"metadata": {"name": "one", "namespace": "ns"}, "data": {"k": "v"}})
    store.create(configmaps, {"metadata": {"name": "two", "namespace": "default"}})
    assert created["metadata"]["resourceVersion"]
    assert store.find(configmaps, "one", "ns") is not None
    assert recording.seen == ["ADDED one"]  # the other namespace's change is not theirs
    assert "an operator bug" in capsys.readouterr().err

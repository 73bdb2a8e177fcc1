"""The simulator's write path does less work without changing a verdict: cheap JSON copies, CEL outcomes reused.

These pin correctness, not speed: a copy is independent of its source, and a reused CEL outcome is exactly the one
evaluating the rule again would give (the memo keys on everything the rule and its message expression can read).
"""

from __future__ import annotations

from typing import Any

import pytest

from snoreloc_sim.kube import cel, model
from snoreloc_sim.openshift import crds


def test_clone_is_a_deep_independent_copy() -> None:
    source: dict[str, Any] = {"a": [1, {"b": "x"}], "c": {"d": None, "e": 1.5, "f": True}, "t": (1, 2)}
    copied = model.clone(source)
    assert copied == source
    copied["a"][1]["b"] = "y"
    copied["c"]["d"] = 0
    assert source["a"][1]["b"] == "x" and source["c"]["d"] is None
    assert copied["t"] == (1, 2)  # not plain JSON: still copied, by copy.deepcopy


def _parsed(text: str) -> Any:
    return cel._parse(text)


@pytest.mark.parametrize(
    ("rule", "fields"),
    [
        ("!has(self.tls) || self.tls.termination != 'passthrough'", {"tls"}),
        ("self.a.b == oldSelf.a.b", {"a"}),
        ("self.all(k, k != 'x')", None),
        ("self == oldSelf", None),
        ("self['a'] == 1", None),
        ("self.a.lowerAscii() == 'x'", {"a"}),
        ("self.lowerAscii() == 'x'", None),
    ],
)
def test_the_fields_a_rule_reads(rule: str, fields: set[str] | None) -> None:
    found = cel.self_fields(_parsed(rule))
    assert found == (frozenset(fields) if fields is not None else None)


def test_a_message_expression_widens_what_the_outcome_depends_on() -> None:
    rule = cel.Rule("self.a == 1", message_expression="'b is ' + string(self.b)")
    engine = cel.Engine()
    first = engine.evaluate(rule, {"a": 2, "b": 1})
    second = engine.evaluate(rule, {"a": 2, "b": 3})
    assert first == cel.Outcome(cel.Status.FAILED, "b is 1")
    assert second == cel.Outcome(cel.Status.FAILED, "b is 3")


def test_an_outcome_is_reused_only_for_the_same_visible_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = cel.Engine()
    runs: list[Any] = []
    real_run = engine._run

    def counting(rule: cel.Rule, compiled: Any, value: Any, old: Any) -> cel.Outcome:
        runs.append(value)
        return real_run(rule, compiled, value, old)

    monkeypatch.setattr(engine, "_run", counting)
    rule = cel.Rule("!has(self.tls) || self.tls.termination != 'passthrough'", message="m")
    passthrough = {"tls": {"termination": "passthrough"}}
    assert engine.evaluate(rule, {"host": "a.example.com"}).status is cel.Status.PASSED
    assert engine.evaluate(rule, {"host": "b.example.com"}).status is cel.Status.PASSED  # host is not read
    assert engine.evaluate(rule, {"host": "a.example.com", **passthrough}) == cel.Outcome(cel.Status.FAILED, "m")
    assert engine.evaluate(rule, {"host": "c.example.com", **passthrough}) == cel.Outcome(cel.Status.FAILED, "m")
    assert len(runs) == 2
    whole = cel.Rule("self.size() < 3", message="too many")
    assert engine.evaluate(whole, {"a": 1, "b": 2}).status is cel.Status.PASSED
    assert engine.evaluate(whole, {"a": 1, "b": 2, "c": 3}) == cel.Outcome(cel.Status.FAILED, "too many")
    assert len(runs) == 4


def test_numbers_and_booleans_are_not_conflated_in_the_memo() -> None:
    engine = cel.Engine()
    rule = cel.Rule("self.a == 1", message="m")
    for value in ({"a": 1}, {"a": True}, {"a": 1.0}, {"a": "1"}, {"a": 1}):
        assert engine.evaluate(rule, value) == cel.Engine().evaluate(rule, value), value
    transition = cel.Rule("self.a == oldSelf.a", message="immutable")
    assert engine.evaluate(transition, {"a": "x"}, {"a": "x"}).status is cel.Status.PASSED
    assert engine.evaluate(transition, {"a": "x"}, {"a": "y"}) == cel.Outcome(cel.Status.FAILED, "immutable")
    assert engine.evaluate(transition, {"a": "x"}).status is cel.Status.PASSED  # no old value: not run


def _route(host: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": "r", "namespace": "ns"},
        "spec": {"host": host, "to": {"kind": "Service", "name": "s"}, **spec},
    }


def test_a_schema_is_read_into_plans_once_and_judges_as_before() -> None:
    from snoreloc_sim.kube import validation  # noqa: PLC0415 (only this test needs the whole admission module)

    crd = validation.load_crds(crds.DIR)["routes.route.openshift.io"]
    structural = validation.Structural()
    assert structural.check(crd.schema, _route("a.example.com"), "") == []
    planned = len(validation._NODE_PLANS)
    assert validation._node_plan(crd.schema).schema is crd.schema
    assert structural.check(crd.schema, _route("b.example.com"), "") == []
    assert len(validation._NODE_PLANS) == planned  # the second write of the kind reads no schema node again
    bad = _route("c.example.com", port={"targetPort": 0}, wildcardPolicy="Sometimes")
    fields = {(error.field, error.reason) for error in structural.check(crd.schema, bad, "")}
    assert ("spec.wildcardPolicy", validation.Reason.NOT_SUPPORTED) in fields
    assert ("spec.port.targetPort", validation.Reason.INVALID) in fields


def _widgets() -> tuple[model.Store, model.ResourceType]:
    widgets = model.ResourceType("example.com", "v1", "widgets", "Widget", False, subresources=("status",))
    store = model.Store()
    store.create(widgets, {"metadata": {"name": "w"}, "spec": {"size": 1}})
    return store, widgets


def test_each_listener_gets_its_own_old_and_new_and_the_store_keeps_its_own() -> None:
    store, widgets = _widgets()
    seen: list[tuple[Any, Any]] = []

    def listener(_rtype: model.ResourceType, _event: str, old: Any, new: Any) -> None:
        seen.append((old, new))
        old["spec"]["size"] = new["spec"]["size"] = -1  # a careless listener

    store.subscribe(listener)
    store.subscribe(listener)
    current = store.get(widgets, "w")
    current["spec"]["size"] = 2
    returned = store.update(widgets, current)
    assert returned["spec"]["size"] == 2 and store.get(widgets, "w")["spec"]["size"] == 2
    (old1, new1), (old2, new2) = seen
    assert old1 is not old2 and new1 is not new2 and new1 is not returned
    assert old2["spec"]["size"] == -1 and old1["spec"]["size"] == -1  # each mutated only its own


def test_an_owned_write_is_stored_as_handed_over_and_a_status_write_copies_only_the_status() -> None:
    store, widgets = _widgets()
    handed = store.get(widgets, "w")
    handed["spec"]["size"] = 3
    store.update(widgets, handed, owned=True)
    assert store._objects[("widgets.example.com", "", "w")] is handed
    status_write = store.get(widgets, "w")
    status_write["status"] = {"phase": "Ready"}
    status_write["spec"]["size"] = 99  # ignored by a status write
    store.update(widgets, status_write, status_only=True)
    status_write["status"]["phase"] = "changed by the caller afterwards"
    stored = store.get(widgets, "w")
    assert stored["status"] == {"phase": "Ready"} and stored["spec"]["size"] == 3

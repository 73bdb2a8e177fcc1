"""The CRDs' CEL rules run as kube-apiserver runs them, and a rule the simulator cannot run is reported, not passed."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from snoreloc_sim.kube import cel, model, validation
from snoreloc_sim.openshift import crds


@pytest.fixture(scope="module")
def validator() -> validation.Validator:
    return validation.Validator(crds.DIR)


@functools.cache
def rtype(key: str) -> model.ResourceType:
    info = validation.load_crds(crds.DIR)[key]
    return model.ResourceType(info.group, info.version, info.plural, info.kind, info.namespaced)


def violations(validator: validation.Validator, key: str, obj: dict[str, Any], old: dict[str, Any] | None = None):
    """(reason, field, message) of every cause, or an empty set when the object is admitted."""
    try:
        validator.admit(rtype(key), obj, old)
    except model.ApiError as error:
        assert error.code == 422
        return {(c["reason"], c["field"], c["message"]) for c in error.causes}
    return set()


def cluster(kind: str, api: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": "cluster"}, "spec": spec}


def count_rules(node: Any) -> int:
    """Every `x-kubernetes-validations` entry anywhere in a JSON document, counted without the validator's walker."""
    if isinstance(node, list):
        return sum(count_rules(item) for item in node)
    if not isinstance(node, dict):
        return 0
    own = len(node.get("x-kubernetes-validations") or [])
    return own + sum(count_rules(v) for k, v in node.items() if k not in ("x-kubernetes-validations", "default"))


# ---- coverage report ------------------------------------------------------------------------------------------


def test_report_accounts_for_every_rule_in_the_crds() -> None:
    report = validation.cel_report(crds.DIR)
    total = sum(count_rules(json.loads(p.read_text())["schema"]) for p in crds.DIR.glob("*.json"))
    assert total > 150
    assert report.evaluated + report.skipped == total
    assert report.skipped == len(report.skipped_rules)
    assert report.render().startswith(f"CEL rules: {total} in the CRDs, {report.evaluated} evaluated")


def test_report_lists_rules_it_cannot_evaluate_with_the_reason(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "quantity(self.size).isGreaterThan(quantity('1Gi'))", "message": "too small"},
                    {"rule": "self.size ==", "message": "broken"},
                    {"rule": "has(self.size)", "message": "fine"},
                ],
            }
        },
    }
    write_crd(tmp_path, schema)
    report = validation.cel_report(tmp_path)
    assert (report.evaluated, report.skipped) == (1, 2)
    reasons = {rule: reason for _crd, _path, rule, reason in report.skipped_rules}
    assert "isGreaterThan" in reasons["quantity(self.size).isGreaterThan(quantity('1Gi'))"]
    assert "quantity" in reasons["quantity(self.size).isGreaterThan(quantity('1Gi'))"]
    assert reasons["self.size =="].startswith("does not parse")
    assert "skipped widgets.example.com spec: 'self.size ==': does not parse" in report.render()


def write_crd(directory: Path, schema: dict[str, Any]) -> None:
    summary = {
        "group": "example.com",
        "version": "v1",
        "plural": "widgets",
        "singular": "widget",
        "kind": "Widget",
        "listKind": "WidgetList",
        "namespaced": False,
        "shortNames": [],
        "subresources": [],
        "schema": schema,
    }
    (directory / "widgets.example.com.json").write_text(json.dumps(summary))


def test_a_rule_cel_python_cannot_finish_is_recorded_not_passed(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "x-kubernetes-validations": [{"rule": "1 + 1.0 == 2.0", "message": "m"}]}
        },
    }
    write_crd(tmp_path, schema)
    local = validation.Validator(tmp_path)
    widgets = model.ResourceType("example.com", "v1", "widgets", "Widget", False)
    local.admit(widgets, {"metadata": {"name": "w"}, "spec": {}}, None)
    assert [(s.crd, s.json_path, s.rule) for s in local.runtime_skips] == [
        ("widgets.example.com", "spec", "1 + 1.0 == 2.0")
    ]
    assert local.runtime_skips[0].reason.startswith("evaluation failed in cel-python")


# ---- every rule in the CRDs actually runs ---------------------------------------------------------------------


def sample(schema: dict[str, Any], depth: int = 0) -> Any:
    """A value shaped like the schema (first enum value, one list item, every property)."""
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("x-kubernetes-int-or-string"):
        return 1
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        return {k: sample(v, depth + 1) for k, v in (schema.get("properties") or {}).items()} if depth < 14 else {}
    if kind == "array":
        return [sample(schema["items"], depth + 1)] if isinstance(schema.get("items"), dict) else []
    simple = {"string": "a", "integer": 1, "number": 1.5, "boolean": True}
    return simple.get(kind or "", {})


def node_at(schema: dict[str, Any], path: str) -> dict[str, Any]:
    node = schema
    for part in path.replace("[]", ".[]").replace("[*]", ".[*]").split("."):
        if part == "[]":
            node = node["items"]
        elif part == "[*]":
            node = node["additionalProperties"]
        elif part:
            node = node["properties"][part]
    return node


def test_every_crd_rule_runs_to_a_verdict_on_schema_shaped_data() -> None:
    engine = cel.Engine()
    runs = 0
    for key, info in validation.load_crds(crds.DIR).items():
        for path, rule in validation.schema_rules(info.schema):
            value = sample(node_at(info.schema, path))
            for old in (cel.MISSING, value):
                outcome = engine.evaluate(rule, value, old)
                assert outcome.status is not cel.Status.SKIPPED, (key, path, rule.rule, outcome.message)
                runs += 1
    assert runs == 2 * validation.cel_report(crds.DIR).evaluated


# ---- rules from the CRDs, through admission -------------------------------------------------------------------


def infrastructure(**baremetal: Any) -> dict[str, Any]:
    spec = {"platformSpec": {"type": "BareMetal", "baremetal": baremetal}}
    return cluster("Infrastructure", "config.openshift.io/v1", spec)


def test_infrastructure_ip_rules_use_isip_ip_family_and_iscidr(validator: validation.Validator) -> None:
    key = "infrastructures.config.openshift.io"
    assert violations(validator, key, infrastructure(apiServerInternalIPs=["192.0.2.10", "2001:db8::10"])) == set()
    same_family = violations(validator, key, infrastructure(apiServerInternalIPs=["192.0.2.10", "192.0.2.11"]))
    assert {(r, f) for r, f, _ in same_family} == {
        ("FieldValueInvalid", "spec.platformSpec.baremetal.apiServerInternalIPs")
    }
    assert "at most one IPv4 address and at most one IPv6 address" in next(iter(same_family))[2]
    not_ip = violations(validator, key, infrastructure(ingressIPs=["192.0.2.300"]))
    assert {f for _, f, _ in not_ip} == {"spec.platformSpec.baremetal.ingressIPs[0]"}
    networks = violations(validator, key, infrastructure(machineNetworks=["192.0.2.0/24", "192.0.2.0"]))
    assert {f for _, f, _ in networks} >= {"spec.platformSpec.baremetal.machineNetworks[1]"}


def test_infrastructure_transition_rule_forbids_removing_ips_once_set(validator: validation.Validator) -> None:
    key = "infrastructures.config.openshift.io"
    before = infrastructure(apiServerInternalIPs=["192.0.2.10"])
    stored, _ = validator.admit(rtype(key), before, None)
    found = violations(validator, key, infrastructure(), stored)
    assert {f for _, f, _ in found} == {"spec.platformSpec.baremetal"}


def test_featuregate_tech_preview_cannot_be_undone(validator: validation.Validator) -> None:
    key = "featuregates.config.openshift.io"
    stored, _ = validator.admit(
        rtype(key), cluster("FeatureGate", "config.openshift.io/v1", {"featureSet": "TechPreviewNoUpgrade"}), None
    )
    undo = cluster("FeatureGate", "config.openshift.io/v1", {"featureSet": ""})
    assert violations(validator, key, undo, stored) == {
        ("FieldValueInvalid", "spec.featureSet", 'Invalid value: "": TechPreviewNoUpgrade may not be changed')
    }
    assert violations(validator, key, undo, None) == set()  # transition rules do not run on create


def test_dns_platform_rules(validator: validation.Validator) -> None:
    key = "dnses.config.openshift.io"
    aws_missing = cluster("DNS", "config.openshift.io/v1", {"platform": {"type": "AWS"}})
    assert {f for _, f, _ in violations(validator, key, aws_missing)} == {"spec.platform"}
    role = "arn:aws:iam::123456789012:role/dns"
    aws_ok = cluster(
        "DNS", "config.openshift.io/v1", {"platform": {"type": "AWS", "aws": {"privateZoneIAMRole": role}}}
    )
    assert violations(validator, key, aws_ok) == set()
    bare = cluster("DNS", "config.openshift.io/v1", {"platform": {"type": "BareMetal"}})
    assert ("FieldValueInvalid", "spec.platform.type") in {(r, f) for r, f, _ in violations(validator, key, bare)}


def test_images_cannot_both_allow_and_block_registries(validator: validation.Validator) -> None:
    key = "images.config.openshift.io"
    both = {"registrySources": {"allowedRegistries": ["quay.io"], "blockedRegistries": ["docker.io"]}}
    assert {f for _, f, _ in violations(validator, key, cluster("Image", "config.openshift.io/v1", both))} == {
        "spec.registrySources"
    }
    bad_registry = {"registrySources": {"insecureRegistries": ["bad registry!"]}}
    found = violations(validator, key, cluster("Image", "config.openshift.io/v1", bad_registry))
    assert {f for _, f, _ in found} == {"spec.registrySources.insecureRegistries[0]"}


def ingress_controller(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "operator.openshift.io/v1",
        "kind": "IngressController",
        "metadata": {"name": "default", "namespace": "openshift-ingress-operator"},
        "spec": spec,
    }


@pytest.mark.parametrize(("timeout", "admitted"), [("300s", True), ("1m30s", True), ("20m", False), ("5h", False)])
def test_ingress_controller_keepalive_uses_matches_and_duration(
    validator: validation.Validator, timeout: str, admitted: bool
) -> None:
    key = "ingresscontrollers.operator.openshift.io"
    found = violations(validator, key, ingress_controller(tuningOptions={"httpKeepAliveTimeout": timeout}))
    assert (found == set()) is admitted


def test_header_names_are_compared_with_lower_ascii(validator: validation.Validator) -> None:
    key = "ingresscontrollers.operator.openshift.io"
    action = {"name": "Host", "action": {"type": "Set", "set": {"value": "x"}}}
    found = violations(validator, key, ingress_controller(httpHeaders={"actions": {"request": [action]}}))
    assert {f for _, f, _ in found} == {"spec.httpHeaders.actions.request[0].name"}


def test_eip_allocations_use_split_with_a_limit(validator: validation.Validator) -> None:
    key = "ingresscontrollers.operator.openshift.io"

    def nlb(*eips: str) -> dict[str, Any]:
        provider = {"type": "AWS", "aws": {"type": "NLB", "networkLoadBalancer": {"eipAllocations": list(eips)}}}
        strategy = {
            "type": "LoadBalancerService",
            "loadBalancer": {"scope": "External", "dnsManagementPolicy": "Managed", "providerParameters": provider},
        }
        return ingress_controller(endpointPublishingStrategy=strategy)

    assert violations(validator, key, nlb("eipalloc-0123456789abcdef0")) == set()
    found = violations(validator, key, nlb("eipalloc-12"))
    assert {f for _, f, _ in found} == {
        "spec.endpointPublishingStrategy.loadBalancer.providerParameters.aws.networkLoadBalancer.eipAllocations[0]"
    }


def test_route_rules_with_headers_and_passthrough(validator: validation.Validator) -> None:
    key = "routes.route.openshift.io"
    spec = {
        "to": {"kind": "Service", "name": "s"},
        "tls": {"termination": "passthrough"},
        "httpHeaders": {"actions": {"response": [{"name": "X-Frame", "action": {"type": "Delete"}}]}},
    }
    obj = {"metadata": {"name": "r", "namespace": "n"}, "spec": spec}
    found = violations(validator, key, obj)
    assert ("FieldValueInvalid", "spec") in {(r, f) for r, f, _ in found}
    assert any("header actions are not permitted" in m for _, _, m in found)


# ---- the engine itself ----------------------------------------------------------------------------------------


def test_message_expression_field_path_and_reason_are_honoured() -> None:
    engine = cel.Engine()
    rule = cel.Rule(
        rule="self.replicas <= 1",
        message="static",
        message_expression="'replicas ' + string(self.replicas) + ' > 1'",
        field_path=".replicas",
        reason="FieldValueForbidden",
    )
    outcome = engine.evaluate(rule, {"replicas": 3})
    assert outcome == cel.Outcome(cel.Status.FAILED, "replicas 3 > 1")
    raw = {
        "rule": rule.rule,
        "messageExpression": rule.message_expression,
        "fieldPath": ".replicas",
        "reason": "FieldValueForbidden",
    }
    assert cel.Rule.from_schema({**raw, "message": "static"}) == rule
    schema = {"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-validations": [raw]}}}
    walk = validation._CelWalk(engine, "x")
    walk.node(schema, {"spec": {"replicas": 3}}, cel.MISSING, "")
    assert [e.cause() for e in walk.errors] == [
        {"reason": "FieldValueForbidden", "message": "Forbidden: replicas 3 > 1", "field": "spec.replicas"}
    ]


def test_missing_keys_fail_the_rule_like_kube() -> None:
    outcome = cel.Engine().evaluate(cel.Rule("self.a.b == 1", message="m"), {"a": {}})
    assert outcome == cel.Outcome(cel.Status.FAILED, "no such key: b evaluating rule: m")


def test_rules_without_a_message_report_the_rule() -> None:
    outcome = cel.Engine().evaluate(cel.Rule("self.startsWith('x')"), "abc")
    assert outcome == cel.Outcome(cel.Status.FAILED, "failed rule: self.startsWith('x')")


@pytest.mark.parametrize(
    ("rule", "value", "expected"),
    [
        ("self.split('.') == ['a', 'b', 'c']", "a.b.c", True),
        ("self.split('-', 2) == ['eipalloc', 'x-y']", "eipalloc-x-y", True),
        ("self.split('-', 0) == []", "a-b", True),
        ("self.lowerAscii() == 'héllo'", "HéLLO", True),
        ("isIP(self)", "fe80::1%eth0", False),
        ("isIP(self)", "010.0.0.1", False),
        ("ip(self).family() == 6", "2001:db8::1", True),
        ("isCIDR(self)", "2001:db8::/32", True),
        ("isCIDR(self)", "2001:db8::", False),
        ("isURL(self)", "https://api.example.com:6443/x", True),
        ("isURL(self)", "not a url", False),
        ("format.dns1123Subdomain().validate(self).hasValue()", "a" * 254, True),
        ("format.dns1123Label().validate(self).hasValue()", "a.b", True),
        ("self.matches('^a+$')", "aaa", True),
        ("duration(self) >= duration('1ms')", "500us", False),
    ],
)
def test_kubernetes_cel_extensions(rule: str, value: Any, expected: bool) -> None:
    outcome = cel.Engine().evaluate(cel.Rule(rule), value)
    assert outcome.status is (cel.Status.PASSED if expected else cel.Status.FAILED), outcome


def test_transition_rules_need_an_old_value() -> None:
    rule = cel.Rule("self == oldSelf", message="immutable")
    engine = cel.Engine()
    assert rule.transition and not cel.Rule("self == 'x'").transition
    assert engine.evaluate(rule, "new").status is cel.Status.PASSED
    assert engine.evaluate(rule, "new", "old") == cel.Outcome(cel.Status.FAILED, "immutable")

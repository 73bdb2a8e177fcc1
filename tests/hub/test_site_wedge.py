"""A Site cannot wedge the controller (issue 30): each input limit (file names, size, depth) turns into Invalid with
the field and a message, in a bounded pass, and a good Site created at the same time is served. Over HTTPS against
the hub simulator, the Sites admitted by the shipped CRD (which cannot bound a map's keys or a free-form spec's depth:
apiextensions v1 has no `propertyNames`, and `x-kubernetes-preserve-unknown-fields` takes any shape)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from snoreloc_fleet.controller.metrics import FleetMetrics
from snoreloc_fleet.resource import site, siteinput

from snoreloc.adapters import kube
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import NS, SITES, Running, site_config, site_object, wait_phase

SOURCE = {"configMapKeyRef": {"name": "some-files", "key": "x"}}
BUDGET = 30.0  # seconds for every Site to be judged, on a loaded 2-core machine


def _with_files(name: str, *extra: str) -> dict[str, Any]:
    obj = site_object(name)
    obj["spec"]["files"].update({file: SOURCE for file in extra})
    return obj


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        value = {"a": value}
    return value


# name -> (the Site, the field its finding names, words of the message)
POISONED: dict[str, tuple[dict[str, Any], str, str]] = {
    "store-dotdot": (_with_files("store-dotdot", "../outside"), 'spec.files["../outside"]', "none of them"),
    "store-absolute": (_with_files("store-absolute", "/etc/passwd"), 'spec.files["/etc/passwd"]', "leading"),
    "store-nul": (_with_files("store-nul", "a\x00b"), 'spec.files["a\\x00b"]', "control"),
    "store-empty": (_with_files("store-empty", ""), 'spec.files[""]', "relative path"),
    "store-clash": (_with_files("store-clash", "a", "a/b"), "spec.files.a", "also the directory of a/b"),
    "store-large": (
        site_object("store-large", site_config("store-large", notes=["n" * 1024] * 1400)),
        "spec.siteConfig",
        "bytes",
    ),
    "store-deep": (
        site_object("store-deep", site_config("store-deep", deep=_nested(400))),
        "spec.siteConfig",
        "nested deeper",
    ),
}


def test_poisoned_sites_turn_invalid_with_the_field_and_a_good_one_is_served(
    hub: HubSimulator, admin: kube.Client, start_controller: Callable[..., Running]
) -> None:
    admin.create(kube.CONFIGMAPS, {"metadata": {"name": "some-files", "namespace": NS}, "data": {"x": "file"}})
    for obj, _, _ in POISONED.values():
        admin.create(SITES, obj)
    admin.create(SITES, site_object("store-good"))
    began = time.monotonic()
    metrics = FleetMetrics()
    running = start_controller(metrics=metrics)
    wait_phase(admin, "store-good", site.Phase.READY, timeout=BUDGET)
    for name, (_, field, words) in POISONED.items():
        status = wait_phase(admin, name, site.Phase.INVALID, timeout=BUDGET)["status"]
        assert status["reason"] == site.Reason.INVALID_SPEC, name
        findings = status["validation"]["errors"]
        assert findings[0]["path"] == field, (name, findings)
        assert words in findings[0]["message"], (name, findings)
        validated = {c["type"]: c for c in status["conditions"]}["Validated"]
        assert validated["message"].startswith(field)
    judged = time.monotonic() - began
    assert judged < BUDGET
    reconciles = running.controller.counters.reconciles
    time.sleep(2.5)  # two sweeps (1 s): each poisoned Site is reconciled again and converges again
    assert running.controller.counters.reconciles >= reconciles + len(POISONED)
    raised = [m for m in metrics.registry.collect() if m.name == "snoreloc_fleet_reconcile_errors"]
    assert [s for m in raised for s in m.samples if s.name.endswith("_total")] == [], "no reconcile raised"


def test_the_limits_are_the_nodes_loader_limits() -> None:
    from snoreloc.siteconfig import yamlpos  # noqa: PLC0415

    assert siteinput.MAX_BYTES == yamlpos.MAX_BYTES
    assert siteinput.MAX_DEPTH < yamlpos.MAX_DEPTH
    assert siteinput.MAX_VALUES == yamlpos.MAX_DOCUMENT_NODES

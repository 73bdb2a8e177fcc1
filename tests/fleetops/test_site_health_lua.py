"""Argo CD's health check for Sites (deploy/argocd/site-health.lua) run in a real Lua, against a Site in every phase
its status can show, each status made by the controller's own `controller.status.derive` from the inputs that
produce that phase (never a phase written by hand).

Argo CD runs a health script with gopher-lua, a Lua 5.1 (argoproj/argo-cd util/lua; util/health/lua.go calls
`ExecuteHealthLua` with the live object as the global `obj` and reads the returned table's `status` and
`message`); lupa's Lua 5.1 runtime is the closest real one. A Python dict reaches the script as nested tables,
lists as 1-based arrays (as gopher-lua's conversion of the unstructured object gives them).
"""

from __future__ import annotations

import datetime as dt
import pathlib
from typing import Any

import pytest
import yaml
from snoreloc_fleet.controller import status
from snoreloc_fleet.hub.sitemedium import Checked
from snoreloc_fleet.resource import site

from snoreloc import errors

lua51 = pytest.importorskip("lupa.lua51", reason="needs lupa (the fleet's test extra: pip install './fleet[test]')")

DEPLOY = pathlib.Path(site.__file__).resolve().parents[1] / "deploy" / "argocd"
SCRIPT = (DEPLOY / "site-health.lua").read_text()
ARGO_STATUSES = {"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}  # gitops-engine's codes
NOW = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)
DIGEST = "sha256:" + "b" * 64
VALID = Checked(problems=(), digest=DIGEST, files=("site-config.yaml",))
INVALID = Checked(problems=(errors.Problem("spec.siteConfig.domain", "is not a DNS name", line=4),), digest=DIGEST)
CREDENTIAL = {"serviceAccount": "site-s", "secret": "s-report", "issuedAt": "x", "expiresAt": "2027-02-22T22:00:00Z"}


def _report(state: str, *, minutes_ago: float = 1.0, digest: str = DIGEST, **extra: Any) -> dict[str, Any]:
    reported = (NOW - dt.timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"runState": state, "siteConfigDigest": digest, "reportedAt": reported, "step": "settle", **extra}


def _site(checked: Checked | None, agent: dict[str, Any] | None = None, generation: int = 3) -> dict[str, Any]:
    """A Site with the status the controller writes for these inputs (and the node's report beside it)."""
    derived = status.derive(
        status.Inputs(
            generation=3, checked=checked, credential=CREDENTIAL if checked and checked.valid else None,
            reporting_enabled=True, agent=agent, previous=[], now=NOW,
        )
    )  # fmt: skip
    if agent is not None:
        derived[site.STATUS_AGENT] = agent
    return {
        "apiVersion": site.API_VERSION,
        "kind": site.KIND,
        "metadata": {"name": "store-0412", "namespace": "fleet-emea", "generation": generation},
        "spec": {"siteConfig": {"domain": "sno1.store-0412.example.com"}, "suspend": checked is None},
        "status": derived,
    }


def _health(obj: dict[str, Any]) -> tuple[str, str]:
    lua = lua51.LuaRuntime(unpack_returned_tuples=True)
    lua.globals().obj = lua.table_from(obj, recursive=True)
    result = lua.execute(SCRIPT)
    return str(result["status"]), str(result["message"] or "")


CASES = [
    # (what, Site, phase the controller wrote, Argo CD's health, a word of the message)
    ("suspended", _site(None), "Pending", "Suspended", "spec.suspend"),
    ("invalid", _site(INVALID), "Invalid", "Degraded", "InvalidSiteConfig"),
    ("ready, no report", _site(VALID), "Ready", "Healthy", "NoReport"),
    ("ready, an older stick ran", _site(VALID, _report("done", digest="sha256:old")), "Ready", "Healthy", "new stick"),
    ("in progress", _site(VALID, _report("running")), "InProgress", "Progressing", "Running"),
    ("silent mid-run", _site(VALID, _report("running", minutes_ago=30)), "Stale", "Degraded", "no report since"),
    ("clock ahead", _site(VALID, _report("running", minutes_ago=-30)), "Stale", "Degraded", "ahead of the hub"),
    ("relocated", _site(VALID, _report("done")), "Relocated", "Healthy", "Done"),
    (
        "failed",
        _site(VALID, _report("failed", failure={"step": "settle", "message": "operators degraded"})),
        "Failed",
        "Degraded",
        "operators degraded",
    ),
]


@pytest.mark.parametrize(("what", "obj", "phase", "health", "word"), CASES, ids=[c[0] for c in CASES])
def test_the_health_of_a_site_in_each_phase(what: str, obj: dict[str, Any], phase: str, health: str, word: str) -> None:
    assert site.view(obj).status[site.STATUS_PHASE] == phase, what  # the controller's own verdict for these inputs
    found, message = _health(obj)
    assert (found, word in message) == (health, True), message


def test_every_phase_the_status_can_show_is_covered() -> None:
    assert {c[2] for c in CASES} == {p.value for p in site.Phase}
    assert {site.view(c[1]).status[site.STATUS_PHASE] for c in CASES} == {p.value for p in site.Phase}


def test_a_site_the_controller_has_not_seen_is_progressing() -> None:
    fresh = _site(VALID)
    del fresh["status"]
    assert _health(fresh)[0] == "Progressing"
    edited = _site(VALID, _report("done"), generation=4)  # edited since the controller wrote generation 3
    found, message = _health(edited)
    assert found == "Progressing" and "generation 4" in message


def test_the_health_is_always_one_argo_cd_knows() -> None:
    assert {_health(c[1])[0] for c in CASES} <= ARGO_STATUSES


def test_the_argocd_cm_patch_carries_the_same_script() -> None:
    patch = yaml.safe_load((DEPLOY / "argocd-cm-patch.yaml").read_text())
    assert patch["metadata"]["name"] == "argocd-cm"
    assert patch["data"][f"resource.customizations.health.{site.GROUP}_{site.KIND}"] == SCRIPT

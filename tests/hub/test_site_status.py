"""A Site's status from the controller's findings and the node's report: the phase table, conditions by Kubernetes
conventions (a transition time moves only when the status does), bounded findings. Pure functions, no API."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from snoreloc_fleet.controller import status
from snoreloc_fleet.hub.sitemedium import Checked
from snoreloc_fleet.resource import site

from snoreloc import errors

NOW = dt.datetime(2026, 11, 24, 22, 0, tzinfo=dt.UTC)
DIGEST = "sha256:" + "a" * 64
VALID = Checked(problems=(), digest=DIGEST, files=("site-config.yaml",))
CREDENTIAL = {"serviceAccount": "site-s", "secret": "s-report", "issuedAt": "x", "expiresAt": "2027-02-22T22:00:00Z"}


def _agent(state: str, *, digest: str = DIGEST, minutes_ago: float = 1.0, **extra: Any) -> dict[str, Any]:
    reported = (NOW - dt.timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"runState": state, "siteConfigDigest": digest, "reportedAt": reported, "step": "settle", **extra}


def _derive(checked: Checked | None = VALID, agent: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    inputs = status.Inputs(
        generation=kw.pop("generation", 3), checked=checked, credential=kw.pop("credential", CREDENTIAL),
        reporting_enabled=kw.pop("reporting_enabled", True), agent=agent, previous=kw.pop("previous", []),
        now=kw.pop("now", NOW), requested=kw.pop("requested", True), delivery=kw.pop("delivery", None),
    )  # fmt: skip
    return status.derive(inputs)


def _conditions(derived: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in derived["conditions"]}


@pytest.mark.parametrize(
    ("agent", "phase", "reason"),
    [
        (None, site.Phase.READY, site.Reason.NO_REPORT),
        (_agent("running"), site.Phase.IN_PROGRESS, site.Reason.RUNNING),
        (_agent("done"), site.Phase.RELOCATED, site.Reason.DONE),
        (_agent("done-with-warnings"), site.Phase.RELOCATED, site.Reason.DONE),
        (_agent("failed", failure={"step": "settle", "message": "boom"}), site.Phase.FAILED, site.Reason.RUN_FAILED),
        (_agent("rolled-back"), site.Phase.FAILED, site.Reason.RUN_FAILED),
        (_agent("running", minutes_ago=30), site.Phase.STALE, site.Reason.SILENT),
        (_agent("done", digest="sha256:old"), site.Phase.READY, site.Reason.DIGEST_MISMATCH),
        (_agent("running", digest="sha256:old"), site.Phase.IN_PROGRESS, site.Reason.RUNNING),
    ],
)
def test_the_phase_follows_the_nodes_report(
    agent: dict[str, Any] | None, phase: site.Phase, reason: site.Reason
) -> None:
    derived = _derive(agent=agent)
    assert (derived["phase"], derived["reason"]) == (phase.value, reason.value)
    assert derived["observedGeneration"] == 3
    assert all(c["observedGeneration"] == 3 for c in derived["conditions"])


def test_relocated_needs_the_digest_the_hub_issued() -> None:
    conditions = _conditions(_derive(agent=_agent("done", digest="sha256:old")))
    assert conditions["Relocated"] == ("False", "DigestMismatch")
    assert _conditions(_derive(agent=_agent("done")))["Relocated"] == ("True", "Done")


def test_a_long_wait_in_progress_is_not_stale_within_its_budget() -> None:
    waiting = {"step": "settle", "what": "operators", "elapsedSeconds": 60.0, "budgetSeconds": 3600.0}
    derived = _derive(agent=_agent("running", minutes_ago=30, waiting=waiting))
    assert derived["phase"] == site.Phase.IN_PROGRESS.value


def test_an_invalid_site_config_is_invalid_with_its_findings() -> None:
    problems = tuple(errors.Problem(f"spec.siteConfig.f{i}", f"fix {i}", line=i) for i in range(30))
    derived = _derive(Checked(problems=problems, digest=DIGEST), credential=None)
    assert (derived["phase"], derived["reason"]) == ("Invalid", "InvalidSiteConfig")
    conditions = _conditions(derived)
    assert conditions["Validated"] == ("False", "InvalidSiteConfig")
    assert conditions["MediaReady"] == ("False", "NotValid")
    assert len(derived["validation"]["errors"]) == site.MAX_FINDINGS
    assert derived["validation"]["more"] == 30 - site.MAX_FINDINGS
    assert derived["validation"]["errors"][0] == {"path": "spec.siteConfig.f0", "line": 0, "message": "fix 0"}
    assert "media" not in {k for k, v in derived.items() if v}


@pytest.mark.parametrize(
    ("checked", "reason"),
    [
        (Checked(problems=(), missing=(errors.Problem("spec.files.x", "missing"),)), "MissingInput"),
        (Checked(problems=(), inline=(errors.Problem("spec.siteConfig.pullSecret.inline", "inline"),)), "InlineSecret"),
    ],
)
def test_missing_inputs_and_inline_secrets_are_invalid(checked: Checked, reason: str) -> None:
    derived = _derive(checked, credential=None)
    assert (derived["phase"], derived["reason"]) == ("Invalid", reason)


def test_a_transition_time_moves_only_when_the_status_changes() -> None:
    first = _derive(agent=_agent("running"))
    later = NOW + dt.timedelta(minutes=5)
    again = _derive(agent=_agent("running", step="routes"), previous=first["conditions"], now=later)
    before = {c["type"]: c["lastTransitionTime"] for c in first["conditions"]}
    after = {c["type"]: c["lastTransitionTime"] for c in again["conditions"]}
    assert before == after
    done = _derive(agent=_agent("done"), previous=first["conditions"], now=later)
    moved = {c["type"] for c in done["conditions"] if c["lastTransitionTime"] != before[c["type"]]}
    assert moved == {"Relocated"}


def test_a_suspended_site_is_pending() -> None:
    assert _derive(checked=None) == {"observedGeneration": 3, "phase": "Pending", "reason": "Suspended"}


def test_reporting_disabled_still_makes_a_stick() -> None:
    conditions = _conditions(_derive(credential=None, reporting_enabled=False))
    assert conditions["MediaReady"] == ("True", "ReportingDisabled")


def test_deriving_twice_gives_the_same_status() -> None:
    first = _derive(agent=_agent("running"))
    assert _derive(agent=_agent("running"), previous=first["conditions"], now=NOW + dt.timedelta(seconds=30)) == first


def test_the_largest_status_stays_small() -> None:
    """Every list and string is bounded: the worst Site status (findings, warnings, a full node report) is a few
    tens of KiB, far below etcd's 1.5 MiB request limit, so 10,000 Sites stay a few hundred MiB."""
    long = "x" * 5000
    problems = tuple(errors.Problem(f"spec.siteConfig.{long}", long, line=1) for _ in range(200))
    checked = Checked(problems=problems, warnings=problems, digest=DIGEST)
    steps = [{"name": "n" * 128, "state": "done", "seconds": 1.0}] * 40
    agent = _agent("failed", steps=steps, warnings=["w" * 1024] * 20, todo="t" * 1024,
                   failure={"step": "s", "message": "m" * 1024, "hint": "h" * 1024})  # fmt: skip
    status = {**_derive(checked, agent=agent), "agent": agent}
    size = len(json.dumps(status))
    assert size < 64 * 1024, size
    assert all(len(c["message"]) <= site.MAX_CONDITION_MESSAGE for c in status["conditions"])


@pytest.mark.parametrize(
    ("requested", "credential", "media"),
    [
        (False, None, ("False", "NotRequested")),
        (True, None, ("False", "Revoked")),
        (True, CREDENTIAL, ("True", "CredentialIssued")),
    ],
)
def test_a_valid_site_is_ready_whether_or_not_its_stick_was_asked_for(
    requested: bool, credential: dict[str, str] | None, media: tuple[str, str]
) -> None:
    derived = _derive(credential=credential, requested=requested)
    assert (derived["phase"], derived["reason"]) == ("Ready", "NoReport")
    assert _conditions(derived)["MediaReady"] == media


def test_a_report_that_only_moves_the_step_leaves_the_controllers_part_unchanged() -> None:
    first = _derive(agent=_agent("running", stepsDone=2))
    later = NOW + dt.timedelta(seconds=40)
    moved = _agent("running", step="routes", stepsDone=3, minutes_ago=0.0)
    moved["reportedAt"] = later.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert _derive(agent=moved, previous=first["conditions"], now=later) == first


@pytest.mark.parametrize(
    ("record", "inserted", "read", "ejected"),
    [
        ({}, ("False", "NotInserted"), ("False", "NotInserted"), ("False", "NotInserted")),
        ({"state": "NoImageServer", "message": "no image server"}, ("False", "NoImageServer"),
         ("False", "NotInserted"), ("False", "NotInserted")),
        ({"state": "Failed", "problem": "BMCCredentials", "message": "refused", "retryAt": "t"},
         ("False", "BMCCredentials"), ("False", "NotInserted"), ("False", "NotInserted")),
        ({"state": "Inserted", "digest": DIGEST, "deadline": "t"}, ("True", "Inserted"), ("False", "WaitingForNode"),
         ("False", "Inserted")),
        ({"state": "Inserted", "digest": DIGEST, "problem": "BMCUnreachable", "message": "m"}, ("True", "Inserted"),
         ("False", "WaitingForNode"), ("False", "BMCUnreachable")),
        ({"state": "Ejected", "digest": DIGEST, "readAt": "t"}, ("False", "Ejected"), ("True", "Reported"),
         ("True", "Ejected")),
        ({"state": "TimedOut", "digest": DIGEST}, ("False", "Ejected"), ("False", "ReadTimeout"), ("True", "Ejected")),
    ],
)  # fmt: skip
def test_a_bmc_sites_conditions_say_where_its_medium_is(
    record: dict[str, Any], inserted: tuple[str, str], read: tuple[str, str], ejected: tuple[str, str]
) -> None:
    derived = _conditions(_derive(delivery=record))
    assert (derived["MediaInserted"], derived["NodeReadMedium"], derived["MediaEjected"]) == (inserted, read, ejected)
    assert "MediaInserted" not in _conditions(_derive()), "a stick Site has none of them"

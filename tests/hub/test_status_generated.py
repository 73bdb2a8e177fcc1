"""The controller's status derivation over generated hostile inputs (issue 30, seeded, deterministic): whatever a
node's report says (times naive, garbage, a year ahead or behind; any run state; waits of any plausible size;
messages carrying control characters and credentials) and whatever the findings quote, `status.derive` returns, the
status it writes passes the Site's own schema (checked with the hub simulator's validator, the one the hub admits
writes with), and no credential survives in it.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from typing import Any

from snoreloc_fleet.controller import status
from snoreloc_fleet.hub.sitemedium import Checked
from snoreloc_fleet.resource import site

from snoreloc import errors
from snoreloc_sim.kube.validation import Structural

SEED = 30
CASES = 500
NOW = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)
PASSWORD = "s3cr3t-Pw0rd"
TEXTS = ("ok", "bell\a", "esc \x1b[31m", "c1 \x85", "nul \x00", "cr\r", f"proxy user:{PASSWORD}@h", "x" * 5000,
         "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.c2ln", "tab\tline\n")  # fmt: skip
STATES = ("running", "done", "done-with-warnings", "failed", "rolled-back", "partial", "", "weird\a")
OFFSETS = (-400 * 86400, -3600, -901, -60, 0, 60, 299, 301, 86400, 365 * 86400)


def _when(rng: random.Random) -> str:
    kind = rng.random()
    moment = NOW + dt.timedelta(seconds=rng.choice(OFFSETS))
    if kind < 0.1:
        return moment.replace(tzinfo=None).isoformat()  # naive: no offset
    if kind < 0.15:
        return "not a time"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _agent(rng: random.Random, digest: str) -> dict[str, Any]:
    agent: dict[str, Any] = {
        "reportedAt": _when(rng),
        "runState": rng.choice(STATES),
        "step": rng.choice(TEXTS)[:128],
        "siteConfigDigest": digest if rng.random() < 0.7 else "sha256:other",
        "source": rng.choice(("node", "imported")),
    }
    if rng.random() < 0.5:
        seconds = rng.choice((0.0, 59.5, 3600.0, float(site.MAX_SECONDS)))
        agent["waiting"] = {"elapsedSeconds": seconds, "budgetSeconds": rng.choice((0.0, 600.0, seconds))}
    if rng.random() < 0.5:
        agent["failure"] = {"step": "api", "message": rng.choice(TEXTS)[:1024], "hint": rng.choice(TEXTS)[:1024]}
    return agent


def _checked(rng: random.Random) -> Checked:
    def problems(count: int) -> tuple[errors.Problem, ...]:
        return tuple(errors.Problem(f"spec.{rng.choice(TEXTS)[:40]}", rng.choice(TEXTS)) for _ in range(count))

    kind = rng.randrange(4)
    return Checked(
        problems=problems(rng.randrange(3)) if kind == 1 else (),
        refused=problems(rng.randrange(1, 30)) if kind == 2 else (),
        missing=problems(1) if kind == 3 else (),
        warnings=problems(rng.randrange(15)),
        digest="sha256:abc",
        files=("site-config.yaml",),
    )


def _status_schema() -> dict[str, Any]:
    schema: dict[str, Any] = site.crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    return schema


def test_generated_reports_and_findings_give_a_status_the_schema_admits() -> None:
    rng = random.Random(SEED)
    schema, validator = _status_schema(), Structural()
    phases: set[str] = set()
    for case in range(CASES):
        checked = _checked(rng)
        agent = _agent(rng, checked.digest) if rng.random() < 0.9 else None
        inputs = status.Inputs(
            generation=case + 1, checked=checked, credential=None, reporting_enabled=True, agent=agent,
            previous=[], now=NOW, requested=bool(case % 2),
        )  # fmt: skip
        derived = status.derive(inputs)
        if agent is not None:
            derived[site.STATUS_AGENT] = agent_as_sent(agent)
        refused = validator.check(schema, json.loads(json.dumps(derived)), "status")
        assert refused == [], (case, [e.render() for e in refused][:3])
        assert PASSWORD not in json.dumps(derived)
        phases.add(derived[site.STATUS_PHASE])
    assert phases >= {"Invalid", "Ready", "InProgress", "Stale", "Relocated", "Failed"}


def agent_as_sent(agent: dict[str, Any]) -> dict[str, Any]:
    """What the hub would hold: the node's own report only ever carries texts made to fit (`hubreport._text`)."""
    from snoreloc.engine import hubreport  # noqa: PLC0415

    fitted = dict(agent)
    for key in ("step", "runState"):
        fitted[key] = hubreport._text(agent[key], 32 if key == "runState" else hubreport.MAX_NAME)
    if "failure" in agent:
        fitted["failure"] = {k: hubreport._text(v) for k, v in agent["failure"].items()}
    when = status.when(agent["reportedAt"])
    fitted["reportedAt"] = (when or NOW).replace(tzinfo=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return fitted

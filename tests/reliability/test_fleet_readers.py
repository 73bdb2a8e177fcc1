"""The readers of node reports, by class: every reader x every hostile report, and the plausibility rules.

A report is data, not trust (issue 30): one node's report, however it reached the hub (the node, a hand-carried
file, an older hub whose schema bounded nothing), must not crash `fleet status` (table, JSON, CSV), `fleet why`
(text, JSON) or `fleet report`, nor freeze `fleet import-report`. `REPORTS` are hostile reports by class (numbers
out of range or not numbers, a string where a number belongs, a list where a mapping belongs and the reverse, deep
nesting, megabyte strings, a report dated in the future); each goes on a Site of an older hub (`olderhub`), over
HTTPS, and through every reader (`READERS`), and as a signed file through `import-report`. Each run's exit code
is in its documented set (never 70, "report the problem") and no traceback is printed; the hub readers show
garbage as unknown (exit 0) and name the implausible fields; import-report refuses it (65) and writes nothing.
"""

from __future__ import annotations

import datetime as dt
import json
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
from snoreloc_fleet.controller import reconcile
from snoreloc_fleet.state import fleetstate
from snoreloc_fleet.verbs import why as cli_why

from hub.conftest import NS
from reliability.olderhub import DIGEST, carried, fleet, keep_key, put_site, start, write_status
from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc_sim.hub.simulator import HubSimulator

NOW = dt.datetime.now(dt.UTC)
RECENT = (NOW - dt.timedelta(minutes=5)).isoformat(timespec="seconds")
MB = "x" * (1 << 20)


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"step": "settle"}
    for _ in range(depth):
        value = {"what": value}
    return value


def _good(**changes: Any) -> dict[str, Any]:
    """A plausible report of a finished run, with `changes` over it."""
    steps = [
        {"name": "preflight", "state": "done", "seconds": 60.0},
        {"name": "settle", "state": "done", "seconds": 600.0},
    ]
    report = {"reportedAt": RECENT, "agentVersion": "0.1.0", "source": "node", "siteConfigDigest": DIGEST,
              "runState": "done", "step": "settle", "stepsDone": 2, "stepsTotal": 2, "todo": "", "steps": steps,
              "warnings": [], "waiting": None, "failure": None, "exitCode": 0}  # fmt: skip
    return {**report, **changes}


def _steps(seconds: Any) -> list[dict[str, Any]]:
    return [{"name": "preflight", "state": "done", "seconds": seconds}, {"name": "settle", "state": "done"}]


REPORTS: dict[str, Any] = {
    "huge-seconds": _good(steps=_steps(1e300), waiting={"step": "settle", "what": "x", "elapsedSeconds": 1e300}),
    "negative-seconds": _good(steps=_steps(-5.0), waiting={"step": "s", "what": "x", "budgetSeconds": -600}),
    "nan-seconds": _good(steps=_steps(float("nan"))),
    "infinite-seconds": _good(steps=_steps(float("inf")), waiting={"elapsedSeconds": float("-inf")}),
    "string-seconds": _good(steps=_steps("12s"), waiting={"step": "s", "elapsedSeconds": "a while"}),
    "bool-seconds": _good(steps=_steps(True)),
    "string-counts": _good(stepsDone="three", stepsTotal=-1, exitCode=1e9),
    "huge-counts": _good(stepsDone=10**30, stepsTotal=1e300, exitCode=-1),
    "giant-integers": _good(stepsDone=10**400, steps=_steps(-(10**400)), waiting={"elapsedSeconds": 10**400}),
    "list-for-mapping": _good(waiting=["settle"], failure=["boom"], steps=[["preflight"], "settle", 7]),
    "mapping-for-list": _good(steps={"preflight": 60}, warnings={"a": "b"}),
    "string-for-list": _good(steps="preflight,settle", warnings="careful"),
    "mapping-for-text": _good(runState={"a": 1}, step=["settle"], todo={"do": "x"}, agentVersion=[1]),
    "agent-is-a-list": ["done", 1],
    "agent-is-a-string": "done",
    "deep-nesting": _good(waiting=_nested(200), failure=_nested(200)),
    "megabyte-strings": _good(todo=MB, failure={"step": "settle", "message": MB}, runState=MB[:200]),
    "too-many-steps": _good(steps=[{"name": f"s{i}", "state": "done", "seconds": 1.0} for i in range(5000)]),
    "future-report": _good(reportedAt="2999-01-01T00:00:00Z"),
    "not-a-time": _good(reportedAt="yesterday"),
    "number-for-time": _good(reportedAt=1e300),
}
# Whole statuses the controller would never write, as an older hub may serve them.
STATUSES: dict[str, dict[str, Any]] = {
    "status-shapes": {
        "phase": ["Failed"],
        "reason": {"a": 1},
        "conditions": {"type": "Ready"},
        "validation": {"errors": "spec.domain", "warnings": [1, None], "more": "many"},
    },
    "invalid-with-garbage-findings": {"phase": "Invalid", "validation": {"errors": {"0": {"path": "x"}}}},
    "findings-of-every-type": {"phase": "Invalid", "validation": {"errors": [None, 3, {"path": [1], "line": "x"}]}},
}


def _name(case: str) -> str:
    return f"r-{sorted([*REPORTS, *STATUSES]).index(case):02d}"


@pytest.fixture(scope="module")
def hostile_hub() -> Iterator[tuple[HubSimulator, kube.Client]]:
    """Site `r-NN` per case: Failed with the hostile report, or with the hostile status."""
    for hub, admin in start():
        for case, report in REPORTS.items():
            put_site(admin, _name(case), {"phase": "Failed", "reason": "RunFailed", "agent": report})
        for case, status in STATUSES.items():
            put_site(admin, _name(case), status)
        yield hub, admin


READERS: dict[str, list[str]] = {
    "status-table": ["status", "-n", NS],
    "status-json": ["status", "-n", NS, "-o", "json"],
    "status-csv": ["status", "-n", NS, "-o", "csv"],
    "why-text": ["why", "{site}", "-n", NS],
    "why-json": ["why", "{site}", "-n", NS, "-o", "json"],
    "report-html": ["report", "-n", NS, "--html", "{page}"],
}


@pytest.mark.parametrize("case", sorted([*REPORTS, *STATUSES]))
@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_holds_every_hostile_report(
    reader: str,
    case: str,
    hostile_hub: tuple[HubSimulator, kube.Client],
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [a.format(site=_name(case), page=tmp_path / "fleet.html") for a in READERS[reader]]
    capsys.readouterr()
    code = fleet(hostile_hub[0], *argv)
    captured = capsys.readouterr()
    assert code == 0, f"{reader} on {case}: exit {code}: {captured.err[-400:]}"
    assert "Traceback" not in captured.out + captured.err
    if reader == "why-text" and case in REPORTS:
        assert "implausible, shown as unknown: status.agent" in captured.out, captured.out[-600:]


@pytest.mark.parametrize("case", sorted(REPORTS))
def test_import_report_refuses_every_hostile_report_and_writes_nothing(
    case: str, hostile_hub: tuple[HubSimulator, kube.Client], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hub, admin = hostile_hub
    site = f"imp-{_name(case)}"
    put_site(admin, site, {"phase": "Ready", "media": {"digest": DIGEST}})
    keep_key(admin, site)
    before = admin.get(reconcile.site_ref(NS, site))["status"]
    capsys.readouterr()
    code = fleet(hub, "import-report", str(carried(tmp_path / "report.json", site, REPORTS[case])))
    captured = capsys.readouterr()
    assert code == 65, f"{case}: exit {code}: {captured.err[-400:]}"
    assert "Traceback" not in captured.err
    assert "hub.report" in captured.err and "nothing applied" in captured.err, "the field is named"
    assert admin.get(reconcile.site_ref(NS, site))["status"] == before


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"hub": {"namespace": "../kube-system", "name": "x", "report": {"a": 1}, "signature": "s"}}',
        '{"hub": {"namespace": "fleet", "name": ["x"], "report": {"a": 1}, "signature": "s"}}',
    ],
    ids=["deep-json", "namespace-not-a-name", "name-a-list"],
)
def test_import_report_refuses_a_file_no_node_wrote(
    text: str, hostile_hub: tuple[HubSimulator, kube.Client], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "report.json"
    path.write_text(text)
    capsys.readouterr()
    assert fleet(hostile_hub[0], "import-report", str(path)) == 65
    err = capsys.readouterr().err
    assert "Traceback" not in err and ("hub." in err or "not JSON" in err), err


# --- plausibility, by rule ------------------------------------------------------------------------------------------


def _import(hub: HubSimulator, tmp_path: pathlib.Path, site: str, when: str) -> int:
    return fleet(hub, "import-report", str(carried(tmp_path / f"{when[:19]}.json", site, _good(reportedAt=when))))


def _reported_at(admin: kube.Client, site: str) -> str:
    return str(admin.get(reconcile.site_ref(NS, site))["status"]["agent"]["reportedAt"])


def test_a_future_dated_report_on_the_site_does_not_freeze_imports(
    hostile_hub: tuple[HubSimulator, kube.Client], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A node whose clock once ran ahead left a report dated 2999: a real report still replaces it."""
    hub, admin = hostile_hub
    put_site(
        admin,
        "frozen",
        {"phase": "Failed", "media": {"digest": DIGEST}, "agent": _good(reportedAt="2999-01-01T00:00:00Z")},
    )
    keep_key(admin, "frozen")
    assert _import(hub, tmp_path, "frozen", RECENT) == 0
    assert "applied (done)" in capsys.readouterr().out
    assert _reported_at(admin, "frozen") == RECENT


def test_a_report_dated_ahead_of_the_clock_is_refused_one_within_the_skew_applied(
    hostile_hub: tuple[HubSimulator, kube.Client], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hub, admin = hostile_hub
    put_site(admin, "ahead", {"phase": "Ready", "media": {"digest": DIGEST}})
    keep_key(admin, "ahead")
    tomorrow = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).isoformat(timespec="seconds")
    assert _import(hub, tmp_path, "ahead", tomorrow) == 65
    assert "hub.report.reportedAt" in capsys.readouterr().err
    assert "agent" not in admin.get(reconcile.site_ref(NS, "ahead"))["status"]
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=fleetstate.SKEW / 2)).isoformat(timespec="seconds")
    assert _import(hub, tmp_path, "ahead", soon) == 0
    assert _reported_at(admin, "ahead") == soon


def test_newer_is_decided_by_time_not_by_the_text(
    hostile_hub: tuple[HubSimulator, kube.Client], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """11:00+02:00 is 09:00Z: a report of 10:00Z is newer, though its text sorts before."""
    hub, admin = hostile_hub
    held = (NOW - dt.timedelta(hours=2)).astimezone(dt.timezone(dt.timedelta(hours=2))).isoformat(timespec="seconds")
    newer = (NOW - dt.timedelta(hours=1)).isoformat(timespec="seconds").replace("+00:00", "Z")
    assert held > newer  # as text
    put_site(admin, "zones", {"phase": "Failed", "media": {"digest": DIGEST}, "agent": _good(reportedAt=held)})
    keep_key(admin, "zones")
    assert _import(hub, tmp_path, "zones", newer) == 0
    assert _reported_at(admin, "zones") == newer
    write_status(admin, "zones", {"agent": {"reportedAt": newer}})
    older = (NOW - dt.timedelta(hours=3)).isoformat(timespec="seconds")
    assert _import(hub, tmp_path, "zones", older) == 0
    assert "holds a newer report" in capsys.readouterr().out
    assert _reported_at(admin, "zones") == newer


def test_implausible_values_are_unknown_and_counted_never_a_figure() -> None:
    """Per rule: each implausible value is None (or empty) and named; a duration with one is unknown."""
    for case, report in REPORTS.items():
        read = fleetstate.report(report, NOW)
        assert read is not None and read.implausible, f"{case}: nothing flagged"
        for step in read.steps:
            assert step.seconds is None or 0 <= step.seconds <= fleetstate.MAX_SECONDS
        for value in (read.steps_done, read.steps_total):
            assert value is None or 0 <= value <= fleetstate.MAX_COUNT
        assert read.exit_code is None or 0 <= read.exit_code <= 255
        assert all(len(text) <= 1024 for text in (read.todo, read.run_state, read.step, *read.warnings))
        obj = {"metadata": {"namespace": NS, "name": case}, "status": {"phase": "Relocated", "agent": report}}
        duration = fleetstate.row(obj, now=NOW).duration
        assert duration is None or 0 <= duration <= fleetstate.MAX_SECONDS * 40, case
    good = fleetstate.report(_good(), NOW)
    assert good is not None and good.implausible == () and good.steps[0].seconds == 60.0
    assert fleetstate.row({"status": {"phase": "Relocated", "agent": _good()}}, now=NOW).duration == 660.0
    huge = {"status": {"phase": "Relocated", "agent": REPORTS["huge-seconds"]}}
    assert fleetstate.row(huge, now=NOW).duration is None


def test_status_counts_and_names_the_implausible_reports(
    hostile_hub: tuple[HubSimulator, kube.Client], capsys: pytest.CaptureFixture[str]
) -> None:
    hub, _admin = hostile_hub
    capsys.readouterr()
    assert fleet(hub, "status", "-n", NS, "-o", "json") == 0
    document = json.loads(capsys.readouterr().out)
    flagged = {row["name"]: row["implausible"] for row in document["sites"] if row["implausible"]}
    # status reads (and so judges) a report's time, run state, step, to-do, wait and failure; a report whose only
    # nonsense is in its steps, counts or warnings is flagged by `why` and `report`, which show those
    unread = {"nan-seconds", "bool-seconds", "string-counts", "huge-counts", "mapping-for-list", "string-for-list"}
    assert {_name(case) for case in REPORTS if case not in unread | {"too-many-steps"}} <= set(flagged)
    assert not {_name(case) for case in unread} & set(flagged)
    assert document["implausibleReports"] == len(flagged)
    assert "status.agent.reportedAt" in flagged[_name("future-report")]
    assert fleet(hub, "status", "-n", NS) == 0
    assert f"reports with implausible values (shown as unknown): {len(flagged)}" in capsys.readouterr().out


@pytest.mark.parametrize("limit", ["inf", "nan", "1e400", "-5m", "400d"])
def test_an_implausible_silent_limit_is_a_usage_error(
    limit: str, hostile_hub: tuple[HubSimulator, kube.Client], capsys: pytest.CaptureFixture[str]
) -> None:
    """`--silent-for` is a reader's number too: infinite, NaN, negative or over a year is refused (64), not 70."""
    with pytest.raises(SystemExit) as exited:  # argparse's usage error, as for any bad option
        fleet(hostile_hub[0], "status", "-n", NS, f"--silent-for={limit}")
    assert exited.value.code == 64
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--silent-for" in err


def test_a_report_time_that_cannot_be_believed_is_shown_as_unknown_not_never() -> None:
    ahead = {"status": {"phase": "InProgress", "agent": _good(reportedAt="2999-01-01T00:00:00Z")}}
    absent = {"status": {"phase": "InProgress", "agent": _good(reportedAt=None)}}
    fresh = {"status": {"phase": "InProgress", "agent": _good()}}
    ages = [fleetstate.row(obj, now=NOW).report_age(NOW) for obj in (ahead, absent, fresh)]
    assert ages == ["?", "never", "5m"]


def test_why_json_of_a_status_nested_deeper_than_python_prints_is_bad_input() -> None:
    """A kube-apiserver decodes JSON 10,000 levels deep; the hub simulator serves less, so this is a unit test of
    the last step: printing it is exit 65 naming the Site, not a RecursionError (70)."""
    deep: dict[str, Any] = {}
    for _ in range(5000):
        deep = {"x": deep}
    with pytest.raises(errors.ConfigError) as refused:
        cli_why.as_json({"metadata": {"name": "store-1"}, "status": deep})
    assert refused.value.exit_code == 65 and "store-1" in str(refused.value)
    assert cli_why.as_json({"status": _nested(200)}).startswith("{")


def test_an_answer_nested_past_the_decoder_is_unavailable_not_a_crash(hostile_hub: tuple[HubSimulator, Any]) -> None:
    """kube-apiserver stores JSON nested far deeper than Python's decoder follows (the simulator's own decoder stops
    first, so the answer is handed to the client's decoding as the hub would send it): 69 naming the request."""
    _hub, admin = hostile_hub
    deep = b'{"a":' * 5000 + b"1" + b"}" * 5000
    with pytest.raises(errors.UnavailableError, match="nested deeper") as caught:
        admin._decode("GET", "/apis/fleet.snoreloc.io/v1alpha1/sites", 200, {}, deep)
    assert caught.value.exit_code == errors.ExitCode.UNAVAILABLE
    assert admin._decode("GET", "/readyz", 200, {}, b"ok") == {"text": "ok"}

"""The typed journal: format 1 files still load, nothing process-local is stored, one source of timing rows, the
wait in progress reaches status.json and `snoreloc status`, and `status` maps every run state."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from snoreloc import errors, waits
from snoreloc.adapters import clock as clock_mod
from snoreloc.cli import main
from snoreloc.cli import status as status_cmd
from snoreloc.engine import journal, paths, report, runner
from snoreloc.siteconfig import model
from snoreloc.steps import base, context

from .conftest import FakeStep, Harness

V1_FIXTURE = Path(__file__).parent / "data" / "status-v1.json"  # written by snoreloc 0.1.0's journal code


def test_a_format_1_journal_loads_typed(tmp_path: Path) -> None:
    doc = journal.read(V1_FIXTURE)
    assert doc.state is journal.RunState.RUNNING
    assert doc.step_names() == ["preflight", "certificates", "settle", "routes"]
    assert doc.record("preflight").warnings == ["operator x degraded"]
    assert doc.record("preflight").skipped is not None
    assert doc.record("certificates").duration == pytest.approx(4.0)
    assert doc.record("settle").state is journal.StepState.RUNNING
    assert doc.record("routes").state is journal.StepState.PENDING
    assert set(doc.rollouts) == {"kube-apiserver"}
    assert doc.site == journal.SiteRef("store-0042", "ab12")


def test_a_format_1_journal_is_rewritten_as_format_2_without_process_state(tmp_path: Path, harness: Harness) -> None:
    path = tmp_path / "status.json"
    shutil.copy(V1_FIXTURE, path)
    jour = journal.Journal(path, harness.clock)
    jour.skip_step("preflight")
    stored = json.loads(path.read_text())
    assert stored["version"] == journal.FORMAT_VERSION == 2
    assert "_started_mono" not in path.read_text()
    assert stored["steps"]["certificates"]["changed"] == ["create secret openshift-config/snoreloc-api-cert"]
    assert journal.read(path).record("certificates") == journal.read(V1_FIXTURE).record("certificates")


def test_a_newer_format_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    path.write_text(json.dumps({"version": 3, "state": "done"}))
    with pytest.raises(errors.UnavailableError, match="journal format 3") as caught:
        journal.read(path)
    assert caught.value.hint and "newer" in caught.value.hint


def test_an_unknown_state_is_refused_plainly(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    path.write_text(json.dumps({"version": 2, "state": "exploded"}))
    with pytest.raises(errors.UnavailableError, match="cannot read"):
        journal.read(path)


def test_a_running_step_stores_no_monotonic_reading(harness: Harness) -> None:
    seen: list[str] = []

    class Peek(FakeStep):
        def apply(self, ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
            seen.append(harness.paths.status.read_text())
            return super().apply(ctx, plan)

    harness.steps[1] = Peek("beta", harness.inputs)
    harness.steps[1].sleep = 7.0
    ctx, jour = harness.context()
    runner.Runner(harness.steps, ctx, jour).run()
    assert '"state": "running"' in seen[0]
    assert "_started_mono" not in seen[0]
    assert journal.read(harness.paths.status).record("beta").duration == pytest.approx(7.0)


def test_analyze_and_the_report_show_the_same_timing_rows(harness: Harness, capsys: pytest.CaptureFixture[str]) -> None:
    harness.steps[0].sleep = 3.0
    ctx, jour = harness.context()
    runner.Runner(harness.steps, ctx, jour).run()
    runner.Runner(harness.steps, ctx, jour).run()  # the second run skips every step: skipped_at is set
    site = model.SiteConfig(name="site1", domain="edge.example.net")
    built = report.build(site, jour.doc)
    assert main.main(["analyze", "--root", str(harness.root), "--output", "json"]) == 0
    analyzed = json.loads(capsys.readouterr().out)["steps"]
    assert analyzed == built["steps"] == [row.as_json() for row in journal.timings(jour.doc)]
    assert analyzed[0]["seconds"] == pytest.approx(3.0)
    assert all(row["skipped_at"] for row in analyzed)


class WaitingStep(FakeStep):
    """Waits (through snoreloc.waits) until its third check, looking at status.json on the second."""

    def __init__(self, name: str, inputs: dict[str, Any], status_path: Path) -> None:
        super().__init__(name, inputs)
        self.status_path = status_path
        self.during: dict[str, Any] = {}
        self.checks = 0

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
        wait = waits.Wait(self.name, "the widget to turn green", budget=600.0, interval=30.0, report_every=60.0)
        waits.until(self._check, wait, ctx.clock)
        return base.StepOutcome()

    def _check(self) -> bool | None:
        self.checks += 1
        if self.checks == 2:
            self.during = json.loads(self.status_path.read_text())
        return True if self.checks == 3 else None


def test_the_wait_in_progress_is_journalled_and_cleared(harness: Harness) -> None:
    step = WaitingStep("beta", harness.inputs, harness.paths.status)
    harness.steps[1] = step
    ctx, jour = harness.context()
    runner.Runner(harness.steps, ctx, jour).run()
    waiting = step.during["waiting"]
    assert (waiting["step"], waiting["what"], waiting["budget"]) == ("beta", "the widget to turn green", 600.0)
    assert waiting["elapsed"] == 0.0 and waiting["since"]
    assert journal.read(harness.paths.status).waiting is None


def _write(the_paths: paths.Paths, doc: journal.Document) -> None:
    the_paths.ensure()
    the_paths.status.write_text(json.dumps(doc.to_storage()))


def test_status_long_and_json_show_the_current_wait(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    the_paths = paths.Paths.under(tmp_path)
    since = journal.datetime.fromisoformat("2026-11-20T09:00:00+00:00")
    wait = journal.WaitRecord(
        "settle", "clusteroperators to settle", 1200.0, since, 185.0, "kube-apiserver progressing"
    )
    doc = journal.Document(state=journal.RunState.RUNNING, order=["settle"], waiting=wait)
    doc.steps["settle"] = journal.StepRecord(state=journal.StepState.RUNNING)
    _write(the_paths, doc)
    main.main(["status", "--long", "--root", str(tmp_path)])
    out = capsys.readouterr().out
    assert "waiting: settle: clusteroperators to settle: 3m 05s of at most 20m 00s" in out
    assert "kube-apiserver progressing" in out
    main.main(["status", "--output", "json", "--root", str(tmp_path)])
    shown = json.loads(capsys.readouterr().out)["waiting"]
    assert shown == {**wait.to_storage(), "since": "2026-11-20T09:00:00.000+00:00"}


@pytest.mark.parametrize("state", list(journal.RunState))
def test_status_maps_every_run_state(tmp_path: Path, state: journal.RunState, capsys: pytest.CaptureFixture) -> None:
    the_paths = paths.Paths.under(tmp_path)
    _write(the_paths, journal.Document(state=state))
    code = main.main(["status", "--root", str(tmp_path), "--output", "json"])
    shown = json.loads(capsys.readouterr().out)
    assert shown["state"] == state.value
    running_without_lock = state in (journal.RunState.RUNNING, journal.RunState.ROLLING_BACK)
    assert shown["interrupted"] is running_without_lock
    assert code == (status_cmd.INTERRUPTED_EXIT if running_without_lock else status_cmd.exit_codes()[state])
    assert set(status_cmd.exit_codes()) == set(journal.RunState)


def test_the_route_table_is_saved_once_in_its_own_file_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    jour = journal.Journal(path, clock_mod.FakeClock())
    rows = [{"namespace": "shop", "name": f"r{i}", "result": "migrated", "new_host": "h"} for i in range(3000)]
    jour.start_step("routes", "f1")
    jour.finish_step("routes", base.StepOutcome(details={"routes": rows, "counts": {"migrated": 3000}}))
    jour.start_step("settle", "f2")  # every later save: status.json without the table

    stored = json.loads(path.read_text())["steps"]["routes"]["details"]
    assert "routes" not in stored and stored["counts"] == {"migrated": 3000}
    lines = (tmp_path / "routes.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == rows
    assert (tmp_path / "routes.jsonl").stat().st_mode & 0o777 == 0o600
    assert len(path.read_text()) < 4000
    doc = journal.read(path)
    assert doc.record("routes").details["routes"] == rows  # status, the report and analyze see the table
    assert report.build(model.SiteConfig(name="s", domain="x.example.com"), doc)["routes"] == rows


def test_a_journal_with_the_route_table_inline_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    rows = [{"namespace": "shop", "name": "r", "result": "migrated", "new_host": "r.apps.x"}]
    path.write_text(json.dumps({"version": 2, "steps": {"routes": {"state": "done", "details": {"routes": rows}}}}))
    assert journal.read(path).record("routes").details["routes"] == rows


def _table(results: list[tuple[str, bool]]) -> list[dict[str, str]]:
    rows = []
    for number, (result, earlier) in enumerate(results):
        row = {"namespace": "ns", "name": f"r{number}", "old_host": "h", "new_host": "h", "result": result}
        rows.append({**row, "earlier": "apps.a.example.com"} if earlier else row)
    return rows


def test_the_reports_route_counts_add_up_to_the_routes(tmp_path: Path) -> None:
    """Issue 35: 21 routes, counts adding up to 32 (those from an earlier site domain were counted beside the
    results). Now the counts by result are a partition (`route_total` = the routes) and the earlier-domain routes
    a separate, labelled view; a journal written before the fix reads the same way."""
    from snoreloc.steps.cluster import routes  # noqa: PLC0415

    table = _table([("migrated", True)] * 11 + [("moved by componentRoutes", False)] * 3 + [("untouched", False)] * 7)
    site = model.SiteConfig(name="s", domain="b.example.com")
    new = {"routes": table, "counts": routes.counts(table), routes.EARLIER_KEY: routes.from_earlier(table)}
    old = {"routes": table, "counts": {"migrated": 11, "moved by componentRoutes": 3, "untouched": 7}}
    old["counts"][routes.EARLIER_COUNT] = 11  # what the step wrote before issue 35
    for details in (new, old):
        doc = journal.Document(state=journal.RunState.DONE, order=["routes"])
        doc.steps["routes"] = journal.StepRecord(state=journal.StepState.DONE, details=details)
        rep = report.build(site, doc)
        assert sum(rep["route_counts"].values()) == rep["route_total"] == len(rep["routes"]) == 21
        assert rep["routes_from_earlier"] == 11
        line = next(line for line in report.render(rep).splitlines() if line.startswith("routes ("))
        assert line == (
            "routes (21: 11 migrated, 3 moved by componentRoutes, 7 untouched; "
            "11 of them from an earlier site's apps domain):"
        )

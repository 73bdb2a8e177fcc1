"""The run history: every run (bounded) is kept in status.json, a re-run that changes nothing no longer erases the
timeline, `analyze` shows the last run that did work unless `--run N` asks for another, and the journals of
earlier releases still read (as one run)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from snoreloc.adapters import clock as clock_mod
from snoreloc.cli import main
from snoreloc.engine import journal, paths, view
from snoreloc.steps import base

STEPS = ["csr", "domain", "settle"]
V1_FIXTURE = Path(__file__).parent / "data" / "status-v1.json"


def _run(jour: journal.Journal, clock: clock_mod.FakeClock, *, work: bool) -> None:
    jour.begin_run(site_name="site7", site_fingerprint="f", order=STEPS, mode="cluster-only")
    for name in STEPS:
        if work:
            jour.start_step(name, "d")
            clock.advance(10.0)
            jour.finish_step(name, base.StepOutcome())
        else:
            jour.skip_step(name)
    if work:
        jour.observe("kube-apiserver", True, clock.now())
        clock.advance(5.0)
        jour.observe("kube-apiserver", False, clock.now())
    jour.end_run(journal.RunState.DONE)
    clock.advance(60.0)


def root_of(the_paths: paths.Paths) -> str:
    return str(the_paths.state_dir.parent.parent.parent)


@pytest.fixture
def state(tmp_path: Path) -> tuple[paths.Paths, journal.Journal, clock_mod.FakeClock]:
    the_paths = paths.Paths.under(tmp_path)
    the_paths.ensure()
    clock = clock_mod.FakeClock()
    return the_paths, journal.Journal(the_paths.status, clock), clock


def test_a_rerun_that_changes_nothing_keeps_the_run_that_did_the_work(
    state: tuple[paths.Paths, journal.Journal, clock_mod.FakeClock], capsys: pytest.CaptureFixture[str]
) -> None:
    the_paths, jour, clock = state
    _run(jour, clock, work=True)
    _run(jour, clock, work=False)
    doc = journal.read(the_paths.status)
    assert len(doc.runs()) == 2 and doc.runs()[0].did_work() and not doc.did_work()

    number, shown = view.pick_run(doc)
    assert number == 1
    picture = view.timeline_of(view.facts(shown))
    assert {bar.label for bar in picture.bars} >= {*STEPS, "rollout: kube-apiserver"}

    assert main.main(["analyze", "--root", str(root_of(the_paths)), "--output", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["run"]["number"] == 1 and out["run"]["of"] == 2 and out["total_seconds"] == 30.0
    assert out["critical_chain"] == ["rollout: kube-apiserver"]
    assert main.main(["analyze", "--root", str(root_of(the_paths)), "--run", "-1"]) == 0
    assert "run 2 of 2" in capsys.readouterr().out
    assert main.main(["analyze", "--root", str(root_of(the_paths)), "--run", "3"]) == 64
    assert "keeps 2 run(s)" in capsys.readouterr().err


def test_the_history_is_bounded_and_a_rollback_is_a_run_of_its_own(
    state: tuple[paths.Paths, journal.Journal, clock_mod.FakeClock], monkeypatch: pytest.MonkeyPatch
) -> None:
    the_paths, jour, clock = state
    monkeypatch.setattr(journal, "MAX_HISTORY", 3)  # every save fsyncs: 25 runs would take seconds
    for _ in range(journal.MAX_HISTORY + 5):
        _run(jour, clock, work=True)
    jour.begin_rollback()
    jour.end_rollback(None)
    doc = journal.read(the_paths.status)
    runs = doc.runs()
    assert len(runs) == journal.MAX_HISTORY + 1
    assert runs[-1].state is journal.RunState.ROLLED_BACK and runs[-1].run is not None
    assert runs[-2].state is journal.RunState.DONE and runs[-2].steps["settle"].duration == 10.0
    assert all("details" not in step for entry in doc.history for step in entry["steps"].values())


def test_a_journal_of_an_earlier_release_reads_as_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    the_paths = paths.Paths.under(tmp_path)
    the_paths.ensure()
    shutil.copy(V1_FIXTURE, the_paths.status)
    doc = journal.read(the_paths.status)
    assert len(doc.runs()) == 1 and doc.history == []
    assert main.main(["analyze", "--root", str(tmp_path), "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["run"] == {**json.loads('{"number": 1, "of": 1}'), **_about(doc)}


def _about(doc: journal.Document) -> dict[str, str]:
    started = doc.run.started if doc.run else None
    mode = doc.run.mode if doc.run else ""
    return {"state": doc.state.value, "mode": mode, "started": started.isoformat(timespec="seconds") if started else ""}


def test_after_a_rollback_status_says_rolled_back_and_analyze_shows_the_relocation(
    state: tuple[paths.Paths, journal.Journal, clock_mod.FakeClock], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 35: after a successful rollback `status` exited 1 (documented as failed) and `analyze` showed the
    rollback's empty table (it waited for rollouts, so it "did work", but a rollback forgets every step)."""
    the_paths, jour, clock = state
    _run(jour, clock, work=True)
    jour.begin_rollback()
    jour.observe("kube-apiserver", True, clock.now())  # the rollback's restores set a rollout moving
    clock.advance(30.0)
    jour.observe("kube-apiserver", False, clock.now())
    jour.end_rollback(None)
    root = root_of(the_paths)

    assert main.main(["status", "--root", root]) == 4
    assert capsys.readouterr().out.startswith("status: rolled-back")
    assert main.main(["analyze", "--root", root, "--output", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["run"]["number"] == 1 and shown["run"]["mode"] == "cluster-only" and shown["total_seconds"] == 30.0
    assert [row["step"] for row in shown["steps"]] == STEPS
    assert main.main(["analyze", "--root", root]) == 0
    assert "run 2 (rollback, rolled-back) came after it: --run 2 shows it" in capsys.readouterr().out
    assert main.main(["analyze", "--root", root, "--run", "-1", "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["run"]["mode"] == "rollback"

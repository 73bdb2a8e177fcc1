"""The runner: order, fingerprints, resume, selection, deadlines, and the journal it keeps."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from snoreloc import errors
from snoreloc.engine import journal, runner
from snoreloc.steps import base

from .conftest import Harness


def run(h: Harness, **options: object) -> runner.Result:
    ctx, jour = h.context()
    return runner.Runner(h.steps, ctx, jour, runner.Options(**options)).run()  # type: ignore[arg-type]


def status(h: Harness) -> dict:
    return json.loads(h.paths.status.read_text())


def test_runs_steps_in_order_and_journals_each(harness: Harness) -> None:
    order: list[str] = []
    ctx, jour = harness.context()
    runner.Runner(harness.steps, ctx, jour, progress=lambda step, what: order.append(f"{step}:{what}")).run()
    assert [o for o in order if o.endswith(":done")] == ["alpha:done", "beta:done", "gamma:done"]
    doc = status(harness)
    assert doc["state"] == "done"
    assert doc["order"] == ["alpha", "beta", "gamma"]
    assert {name: rec["state"] for name, rec in doc["steps"].items()} == dict.fromkeys(doc["order"], "done")
    assert doc["steps"]["beta"]["changed"] == ["update thing beta"]
    assert doc["steps"]["alpha"]["fingerprint"].startswith("sha256:")
    assert doc["site_config"]["fingerprint"].startswith("sha256:")


def test_rerun_with_same_inputs_skips_after_verify(harness: Harness) -> None:
    run(harness)
    for step in harness.steps:
        step.calls.clear()
    result = run(harness)
    assert result.actions == dict.fromkeys(["alpha", "beta", "gamma"], "skipped")
    assert all(step.calls == ["verify"] for step in harness.steps)


def test_changed_inputs_rerun_only_that_step(harness: Harness) -> None:
    run(harness)
    for step in harness.steps:
        step.calls.clear()
    harness.inputs["beta"] = 2
    result = run(harness)
    assert result.actions == {"alpha": "skipped", "beta": "ran", "gamma": "skipped"}
    assert harness.steps[1].calls == ["plan", "apply", "verify"]


def test_unchanged_step_that_no_longer_verifies_runs_again(harness: Harness) -> None:
    run(harness)
    harness.steps[2].verify_ok = False
    harness.steps[2].calls.clear()
    with pytest.raises(errors.TemporaryError):
        run(harness)
    assert harness.steps[2].calls == ["verify", "plan", "apply", "verify"]


def test_force_reruns_everything(harness: Harness) -> None:
    run(harness)
    result = run(harness, force=True)
    assert set(result.actions.values()) == {"ran"}


def test_step_runs_only_that_step(harness: Harness) -> None:
    result = run(harness, step="beta")
    assert result.actions == {"beta": "ran"}
    assert status(harness)["state"] == "partial"
    assert harness.steps[0].calls == []


def test_from_starts_at_the_step(harness: Harness) -> None:
    result = run(harness, start_from="beta")
    assert list(result.actions) == ["beta", "gamma"]


def test_unknown_step_is_a_usage_error(harness: Harness) -> None:
    with pytest.raises(errors.UsageError, match="no step named 'delta'"):
        run(harness, step="delta")


def test_failure_is_journalled_with_hint_and_resume_continues(harness: Harness) -> None:
    harness.steps[1].fail_with = errors.TemporaryError("cluster busy", hint="run again")
    with pytest.raises(errors.TemporaryError):
        run(harness)
    doc = status(harness)
    assert doc["state"] == "failed"
    account = "What was changed: this run changed alpha (update thing alpha); the 1 step from gamma on did not run."
    message = f"cluster busy. {account}"  # issue 35: the journal's account of what the run changed
    assert doc["steps"]["beta"]["error"] == {"message": message, "hint": "run again", "exit_code": 75}
    assert doc["steps"]["gamma"]["state"] == "pending"
    harness.steps[1].fail_with = None
    result = run(harness)
    assert result.actions == {"alpha": "skipped", "beta": "ran", "gamma": "ran"}
    assert status(harness)["state"] == "done"


def test_dry_run_plans_without_journalling(harness: Harness) -> None:
    result = run(harness, dry_run=True)
    assert [p.step for p in result.plans] == ["alpha", "beta", "gamma"]
    assert all(step.calls == ["plan"] for step in harness.steps)
    assert not harness.paths.status.exists()


def test_whole_run_deadline_stops_the_next_step(harness: Harness) -> None:
    harness.steps[0].sleep = 5000.0  # a FakeClock: no real time passes
    ctx, jour = harness.context(total=3600)
    with pytest.raises(errors.WaitTimeout, match="beta: timed out after 3600s waiting for the whole-run deadline"):
        runner.Runner(harness.steps, ctx, jour).run()


def test_wait_for_is_bounded_and_names_step_and_target(harness: Harness) -> None:
    ctx, _ = harness.context()
    calls = []

    def never() -> None:
        calls.append(harness.clock.monotonic())
        return None

    with pytest.raises(errors.WaitTimeout, match="settle: timed out after 1200s waiting for the API"):
        base.wait_for(ctx, "settle", "the API", 1200, never, poll=10)
    assert len(calls) == 121  # 0, 10, ..., 1200: a 20-minute wait in milliseconds
    assert harness.clock.monotonic() == pytest.approx(1200)


def test_wait_for_rides_out_temporary_errors(harness: Harness) -> None:
    ctx, _ = harness.context()
    answers = iter([errors.TemporaryError("API restarting"), None, "ready"])

    def probe() -> str | None:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert base.wait_for(ctx, "settle", "the API", 60, probe, poll=1) == "ready"


def test_wait_for_is_bounded_by_the_run_deadline(harness: Harness) -> None:
    ctx, _ = harness.context(total=100)
    with pytest.raises(errors.WaitTimeout, match="after 100s"):
        base.wait_for(ctx, "settle", "operators", 1800, lambda: None, poll=5)


def test_status_file_is_replaced_atomically(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    run(harness)
    before = harness.paths.status.read_text()

    def crash(src: str, dst: str) -> None:
        raise OSError("power cut")

    monkeypatch.setattr(os, "replace", crash)
    _ctx, jour = harness.context()
    with pytest.raises(OSError, match="power cut"):
        jour.skip_step("alpha")
    assert harness.paths.status.read_text() == before
    assert [p.name for p in harness.paths.state_dir.iterdir() if p.name.startswith(".")] == []


def test_status_is_complete_json_at_every_transition(harness: Harness) -> None:
    seen: list[dict] = []

    class Peek(type(harness.steps[0])):  # type: ignore[misc]
        def apply(self, ctx, plan):  # type: ignore[no-untyped-def]
            seen.append(json.loads(harness.paths.status.read_text()))
            return super().apply(ctx, plan)

    harness.steps[1] = Peek("beta", harness.inputs)
    run(harness)
    assert seen[0]["state"] == "running"
    assert seen[0]["steps"]["alpha"]["state"] == "done"
    assert seen[0]["steps"]["beta"]["state"] == "running"
    assert oct(harness.paths.status.stat().st_mode & 0o777) == "0o600"


def test_rollouts_ledger_round_trips(harness: Harness) -> None:
    _ctx, jour = harness.context()
    jour.begin_run(site_name="s", site_fingerprint="x", order=["a"], mode="cluster-only")
    jour.start_step("a", "fp")
    jour.finish_step(
        "a", base.StepOutcome(rollouts=dict.fromkeys(("kube-apiserver", "mcp/master"), harness.clock.now()))
    )
    reread = journal.Journal(harness.paths.status, harness.clock)
    assert set(reread.pending()) == {"kube-apiserver", "mcp/master"}
    reread.settled(["kube-apiserver"])
    assert set(journal.Journal(harness.paths.status, harness.clock).pending()) == {"mcp/master"}


def test_corrupt_status_is_reported_plainly(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    path.write_text("{not json")
    with pytest.raises(errors.UnavailableError, match="cannot read"):
        journal.read(path)

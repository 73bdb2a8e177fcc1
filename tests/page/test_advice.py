"""The technician's one line (`view.todo`) in every state a journal can hold, and in the two a dead process leaves
(a relocation or a rollback cut off): `status`, the progress page and the banner's builder all give the same right
line, and only a run that is going says "wait"."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from snoreloc import errors, safefile
from snoreloc.cli import main
from snoreloc.engine import journal, lock, page, paths, view

State = journal.RunState
# What the line must say in each state (and for a run no process holds any more), and what it must not.
EXPECTED: dict[tuple[State, bool], str] = {
    (State.NEW, False): "Nothing has run yet",
    (State.RUNNING, False): "Wait: the relocation is running",
    (State.RUNNING, True): "run `snoreloc run` to resume",
    (State.DONE, False): "Nothing to do: the relocation is done",
    (State.DONE_WITH_WARNINGS, False): "Done with warnings",
    (State.FAILED, False): "Call support with the bundle",
    (State.PARTIAL, False): "Call support with the bundle",
    (State.ROLLING_BACK, False): "Wait: the rollback is running",
    (State.ROLLING_BACK, True): "run `snoreloc rollback` again to finish it",
    (State.ROLLED_BACK, False): "the host network stays at the site",
    (State.ROLLBACK_FAILED, False): "run `snoreloc rollback` again",
}


def test_every_journal_state_has_its_own_line() -> None:
    assert {state for state, _cut in EXPECTED} == set(State)


def _document(state: State) -> journal.Document:
    doc = journal.Document(state=state, order=["domain"])
    failed = state in (State.FAILED, State.PARTIAL, State.ROLLBACK_FAILED)
    doc.steps["domain"] = journal.StepRecord(state=journal.StepState.FAILED if failed else journal.StepState.DONE)
    if failed:
        exit_code = errors.ExitCode.TEMPORARY if state is State.ROLLBACK_FAILED else errors.ExitCode.INTERNAL
        doc.error = journal.ErrorRecord("it broke", errors.SnorelocError.default_hint, int(exit_code))
    return doc


@pytest.mark.parametrize(("state", "cut_off"), list(EXPECTED))
def test_status_and_the_page_give_the_right_line(
    state: State, cut_off: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    the_paths = paths.Paths.under(tmp_path)
    the_paths.ensure()
    safefile.write(the_paths.status, json.dumps(_document(state).to_storage()))
    held = lock.RunLock(the_paths.lock) if not cut_off and state in (State.RUNNING, State.ROLLING_BACK) else None
    if held is not None:
        held.__enter__()
    try:
        main.main(["status", "--root", str(tmp_path), "--output", "json"])
    finally:
        if held is not None:
            held.__exit__(None, None, None)
    shown = json.loads(capsys.readouterr().out)
    line = shown["now"]
    assert EXPECTED[(state, cut_off)] in line, line
    going = state in (State.RUNNING, State.ROLLING_BACK) and not cut_off
    assert line.startswith("Wait") is going
    assert ("relocation is running" in line) is (state is State.RUNNING and not cut_off)

    facts = view.facts(journal.read(the_paths.status))
    if not cut_off:  # the page and the banner read the journal of a live process: the same line
        assert view.todo_of(facts) == line
        assert html.escape(line) in page.render(view.progress(facts), "")


REFUSAL_HINT = "Rename or delete Secret openshift-config/snoreloc-api-cert if it is no longer needed, or add the label"


def test_a_refusal_with_a_fix_says_the_fix_not_call_support(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    the_paths = paths.Paths.under(tmp_path)
    the_paths.ensure()
    doc = _document(State.FAILED)
    doc.error = journal.ErrorRecord("certificates: it is the user's", REFUSAL_HINT, int(errors.ExitCode.INTERNAL))
    doc.steps["domain"].error = doc.error
    safefile.write(the_paths.status, json.dumps(doc.to_storage()))
    main.main(["status", "--root", str(tmp_path)])
    out = capsys.readouterr().out
    assert f"now: Fix this, then run `snoreloc run` again: {REFUSAL_HINT}" in out
    assert "Call support" not in out
    facts = view.facts(journal.read(the_paths.status))
    assert html.escape(REFUSAL_HINT) in page.render(view.progress(facts), "")
    banner = view.todo("failed", step="certificates", exit_code=int(errors.ExitCode.INTERNAL), hint=REFUSAL_HINT)
    assert banner == view.todo_of(facts)  # the node's banner is given the same line (engine.node.Reporter.failed)


def test_a_rollback_that_failed_with_a_fix_says_the_fix_and_to_roll_back_again() -> None:
    hint = "Restore or drop the object that file held by hand, remove the file, and re-run `snoreloc rollback`."
    line = view.todo("rollback-failed", exit_code=int(errors.ExitCode.UNAVAILABLE), hint=hint)
    assert line == f"Fix this, then run `snoreloc rollback` again: {hint}"
    generic = view.todo("rollback-failed", exit_code=70, hint=errors.SnorelocError.default_hint)
    assert generic.startswith("The rollback failed: call support")

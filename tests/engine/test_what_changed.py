"""Issue 35 item 2: a verdict says what the run changed, from the journal, never a fixed "nothing was changed". The
runner adds the account to a failing step's message (what this run's steps changed, what earlier runs' changed
that is still in place, which steps did not run); the journal keeps the same words."""

from __future__ import annotations

from pathlib import Path

import pytest

from snoreloc import errors
from snoreloc.adapters import clock as clock_mod
from snoreloc.engine import journal, runner
from snoreloc.steps import base

from .conftest import Harness

ORDER = ["network", "node-dns", "kubelet", "api", "csr", "preflight", "certificates", "routes"]


def _journal(tmp_path: Path, clock: clock_mod.FakeClock | None = None) -> journal.Journal:
    jour = journal.Journal(tmp_path / "status.json", clock or clock_mod.FakeClock())
    jour.begin_run(site_name="s", site_fingerprint="f", order=ORDER, mode="node")
    return jour


def _done(jour: journal.Journal, name: str, *changed: str) -> None:
    jour.start_step(name, "fp")
    jour.finish_step(name, base.StepOutcome(changed=changed))


def test_a_refusal_after_host_steps_names_what_they_changed_and_what_did_not_run(tmp_path: Path) -> None:
    jour = _journal(tmp_path)
    _done(jour, "network", "applied and committed the site network (eno1.120)")
    _done(jour, "node-dns", "set store042.example.net in /etc/default/x; restarted dnsmasq.service")
    _done(jour, "kubelet", "started kubelet")
    _done(jour, "api")  # waited, changed nothing: not named
    _done(jour, "csr", "approve CSR csr-1", "approve CSR csr-2")

    text = journal.what_changed(jour.doc, "preflight")

    assert text == (
        "What was changed: this run changed network (applied and committed the site network (eno1.120)), "
        "node-dns (set store042.example.net in /etc/default/x; restarted dnsmasq.service), kubelet (started "
        "kubelet), csr (approve CSR csr-1; approve CSR csr-2); the 2 steps from certificates on did not run."
    )
    assert "nothing" not in text


def test_a_run_that_changed_nothing_says_so_and_earlier_runs_changes_are_told_apart(tmp_path: Path) -> None:
    clock = clock_mod.FakeClock()
    jour = _journal(tmp_path, clock)
    _done(jour, "network", "applied and committed the site network (eno1.120)")
    _done(jour, "routes", *(f"route ns/r{i}" for i in range(1000)))
    jour.end_run(journal.RunState.DONE)
    clock.sleep(60)  # the next run starts later
    jour.begin_run(site_name="s", site_fingerprint="f", order=ORDER, mode="node")
    jour.skip_step("network")

    text = journal.what_changed(jour.doc, "csr")

    assert text.startswith("What was changed: this run changed nothing; earlier runs changed (still in place) ")
    assert "routes (route ns/r0; route ns/r1; route ns/r2; and 997 more)" in text
    assert "the 3 steps from preflight on did not run" in text
    before_a_run = journal.what_changed(jour.doc, new_run=True)
    assert before_a_run.startswith("What was changed: this run changed nothing; earlier runs changed")


def test_the_runner_adds_the_account_to_the_failing_steps_message_and_journal(harness: Harness) -> None:
    alpha, beta, gamma = harness.steps
    beta.fail_with = errors.UnavailableError("beta: refused")
    ctx, jour = harness.context()
    with pytest.raises(errors.UnavailableError) as caught:
        runner.Runner([alpha, beta, gamma], ctx, jour).run()

    account = "What was changed: this run changed alpha (update thing alpha); the 1 step from gamma on did not run."
    assert caught.value.message == f"beta: refused. {account}"
    assert str(caught.value) == caught.value.message
    recorded = journal.read(harness.paths.status)
    assert recorded.record("beta").error is not None and recorded.record("beta").error.message == caught.value.message
    assert recorded.error is not None and recorded.error.message == caught.value.message

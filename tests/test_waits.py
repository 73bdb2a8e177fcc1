"""`snoreloc.waits`: every wait is bounded, says what it waits for while it waits, and publishes itself."""

from __future__ import annotations

import logging

import pytest

from snoreloc import errors, waits
from snoreloc.adapters import clock


def _messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "snoreloc.progress"]


def test_returns_the_first_value_and_reports_once_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    clk = clock.FakeClock()
    answers = iter([None] * 30 + ["ready"])
    wait = waits.Wait("settle", "the operators to settle", budget=600, interval=5)
    with caplog.at_level(logging.INFO, logger="snoreloc.progress"):
        assert waits.until(lambda: next(answers), wait, clk) == "ready"
    assert clk.monotonic() == 150
    assert _messages(caplog) == [
        "settle: waiting for the operators to settle: 0s of at most 10m 00s",
        "settle: waiting for the operators to settle: 1m 00s of at most 10m 00s",
        "settle: waiting for the operators to settle: 2m 00s of at most 10m 00s",
    ]


def test_a_temporary_error_is_not_yet_and_its_message_is_shown(caplog: pytest.LogCaptureFixture) -> None:
    clk = clock.FakeClock()

    def check() -> str | None:
        if clk.monotonic() < 20:
            raise errors.TemporaryError("kube-apiserver Progressing=True")
        return "ok"

    with caplog.at_level(logging.INFO, logger="snoreloc.progress"):
        assert waits.until(check, waits.Wait("preflight", "a healthy cluster", 60, interval=10), clk) == "ok"
    assert _messages(caplog) == ["preflight: waiting for a healthy cluster: 0s of at most 1m 00s; "
                                 "kube-apiserver Progressing=True"]  # fmt: skip


def test_the_budget_bounds_the_wait_and_the_timeout_names_the_last_reason() -> None:
    clk = clock.FakeClock()

    def check() -> None:
        raise errors.TemporaryError("insights Degraded=True")

    with pytest.raises(errors.WaitTimeout) as caught:
        waits.until(check, waits.Wait("settle", "the operators", 120, interval=50, hint="look at insights"), clk)
    assert clk.monotonic() == 120, "the last sleep is cut to the budget"
    assert caught.value.step == "settle"
    assert caught.value.waited_for == "the operators (last seen: insights Degraded=True)"
    assert caught.value.hint == "look at insights"


def test_other_errors_end_the_wait_at_once() -> None:
    clk = clock.FakeClock()

    def check() -> None:
        raise errors.ConfigError("bad input")

    with pytest.raises(errors.ConfigError):
        waits.until(check, waits.Wait("x", "y", 600), clk)
    assert clk.monotonic() == 0


def test_subscribers_see_the_wait_and_its_end() -> None:
    clk = clock.FakeClock()
    seen: list[waits.Waiting | None] = []
    unsubscribe = waits.subscribe(seen.append)
    try:
        answers = iter([None, None, 1])
        waits.until(lambda: next(answers), waits.Wait("api", "the API", 300, interval=5), clk)
    finally:
        unsubscribe()
    assert [(s.step, s.what, s.budget, s.elapsed) for s in seen if s is not None] == [("api", "the API", 300, 0.0)]
    assert seen[-1] is None, "the end of the wait is published"
    waits.until(lambda: 1, waits.Wait("api", "the API", 300), clk)
    assert len(seen) == 2, "an unsubscribed listener hears nothing more"


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (59.4, "59s"), (60, "1m 00s"), (185, "3m 05s"), (3720, "1h 02m")]
)
def test_durations_read_like_a_console_line(seconds: float, text: str) -> None:
    assert waits.duration(seconds) == text


def test_checks_start_one_interval_apart_however_long_each_takes() -> None:
    """A slow check (an API answering slowly, a TLS dial) does not stretch the interval: what the wait is for is
    seen at most one interval after it happened (issue 14: the settle's poll lag lies on the critical chain)."""
    clk = clock.FakeClock()
    started: list[float] = []

    def slow_check() -> str | None:
        started.append(clk.monotonic())
        clk.advance(2)  # the check itself takes 2 of the 5 seconds
        return "done" if len(started) == 4 else None

    assert waits.until(slow_check, waits.Wait("settle", "the cluster", 600, interval=5), clk) == "done"
    assert started == [0, 5, 10, 15]
    assert clk.sleeps == [3, 3, 3]


def test_a_check_slower_than_the_interval_is_followed_by_half_an_interval() -> None:
    """A struggling API is never polled back to back."""
    clk = clock.FakeClock()
    answers = iter([None, None, "ok"])

    def slower_than_the_interval() -> str | None:
        clk.advance(8)
        return next(answers)

    assert waits.until(slower_than_the_interval, waits.Wait("x", "y", 600, interval=5), clk) == "ok"
    assert clk.sleeps == [2.5, 2.5]

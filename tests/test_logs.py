"""Logging at the default verbosity: warnings, and the progress of every wait (console and journald alike)."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from snoreloc import logs, waits
from snoreloc.adapters import clock


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    yield
    logs.setup(0, io.StringIO())


@pytest.mark.parametrize("systemd", [False, True])
def test_default_level_shows_progress_and_warnings_only(systemd: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if systemd:
        monkeypatch.setenv("JOURNAL_STREAM", "8:1234")
    else:
        monkeypatch.delenv("JOURNAL_STREAM", raising=False)
        monkeypatch.delenv("INVOCATION_ID", raising=False)
    out = io.StringIO()
    logs.setup(0, out)
    logging.getLogger("snoreloc.engine.runner").info("an ordinary detail")
    logging.getLogger("snoreloc.progress").debug("a progress detail")
    logging.getLogger("snoreloc.steps.cluster.settle").warning("a warning")
    fake = clock.FakeClock()
    waits.until(lambda: True if fake.monotonic() >= 90 else None, waits.Wait("api", "the API", 600.0, 30.0), fake)
    text = out.getvalue()
    assert "an ordinary detail" not in text and "a progress detail" not in text
    assert "a warning" in text
    assert text.count("api: waiting for the API: ") == 2  # at the start and a minute later
    assert "1m 00s of at most 10m 00s" in text
    if systemd:
        assert "<6>snoreloc.progress: api: waiting for the API" in text


def test_verbose_shows_info_and_the_file_log_ends_with_its_block(tmp_path: Path) -> None:
    out = io.StringIO()
    logs.setup(1, out)
    logging.getLogger("snoreloc.engine").info("an ordinary detail")
    assert "an ordinary detail" in out.getvalue()
    path = tmp_path / "snoreloc.log"
    with logs.file_log(path):
        logging.getLogger("snoreloc.engine").debug("debug detail")
    logging.getLogger("snoreloc.engine").debug("after the block")
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert "debug detail" in path.read_text() and "after the block" not in path.read_text()
    assert "debug detail" not in out.getvalue()


def test_a_record_after_the_verb_finds_no_closed_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 35: a verb run in-process (tests, the demo) left the `snoreloc` handler holding the stderr of its day;
    once that stream was closed (pytest closes each test's capture), every later record printed "--- Logging error
    ---" and "ValueError: I/O operation on closed file" from sanitize.py. The handler now writes to the stderr of
    the moment."""
    from snoreloc.cli import main  # noqa: PLC0415

    during = io.StringIO()
    monkeypatch.setattr("sys.stderr", during)
    assert main.main(["schema"]) == 0
    during.close()  # as pytest closes the capture of a finished test
    after = io.StringIO()
    monkeypatch.setattr("sys.stderr", after)
    logging.getLogger("snoreloc.engine").warning("a record from a thread the verb left behind")
    text = after.getvalue()
    assert "Logging error" not in text and "closed file" not in text, text
    assert "a record from a thread the verb left behind" in text

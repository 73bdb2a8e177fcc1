"""Numbers in status.json by class (issue 30): every garbage value in every numeric (and time) field x every reader
verb.

status.json is written by snoreloc alone, but a state directory survives disks, hand edits and other versions: a
negative, huge, non-finite or non-numeric value where a number belongs must never make `status` or `analyze` exit
70 ("report the problem"). The journal reads every number through one plausibility check (`journal.plausible`):
an implausible one is unknown, shown as such, and the verb exits as the run's state says (69 only for a file it
cannot read at all, as documented)."""

from __future__ import annotations

import copy
import json
import math
import pathlib
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from snoreloc.adapters.clock import SystemClock
from snoreloc.cli import main
from snoreloc.engine import metrics, page, timeline
from snoreloc.siteconfig import model

GARBAGE: dict[str, Any] = {
    "negative": -5,
    "negative-huge": -1e300,
    "huge": 1e300,
    "big-int": 2**70,
    "nan": math.nan,
    "infinity": math.inf,
    "minus-infinity": -math.inf,
    "numeric-string": "12",
    "word": "abc",
    "bool": True,
    "list": [1],
    "object": {"a": 1},
    "null": None,
    "naive-time": "2026-01-01T00:00:05",  # no zone: UTC, as snoreloc writes
    "not-a-time": "yesterday",
    "year-zero": "0000-01-01T00:00:00",
}
T0, T1 = "2026-01-01T00:00:00.000+00:00", "2026-01-01T00:00:10.000+00:00"
STEP = {"state": "done", "started": T0, "finished": T1, "duration": 10.0, "error": None, "warnings": ["w"]}
FAILED = {**STEP, "state": "failed", "error": {"message": "boom", "hint": "fix", "exit_code": 75}}
RUN = {"pid": 4242, "started": T0, "finished": None, "mode": "cluster"}
WAIT = {"step": "settle", "what": "operators", "budget": 1800.0, "since": T0, "elapsed": 12.0, "detail": "d"}
BASE: dict[str, Any] = {
    "version": 2,
    "state": "running",
    "order": ["preflight", "settle"],
    "steps": {"preflight": STEP, "settle": FAILED},
    "run": RUN,
    "error": {"message": "boom", "hint": "fix", "exit_code": 75},
    "waiting": WAIT,
    "rollouts": {},
    "rollout_log": [{"name": "kube-apiserver", "started": T0, "finished": T1, "start_seen": True}],
    "wait_log": [{"step": "settle", "what": "operators", "budget": 1800.0, "started": T0, "finished": T1}],
    "history": [{"version": 2, "state": "done", "order": ["preflight"], "steps": {"preflight": STEP}, "run": RUN}],
}
# Where a number belongs (a path into BASE).
FIELDS: dict[str, tuple[Any, ...]] = {
    "step-duration": ("steps", "preflight", "duration"),
    "step-exit-code": ("steps", "settle", "error", "exit_code"),
    "run-pid": ("run", "pid"),
    "run-exit-code": ("error", "exit_code"),
    "wait-budget": ("waiting", "budget"),
    "wait-elapsed": ("waiting", "elapsed"),
    "wait-log-budget": ("wait_log", 0, "budget"),
    "history-duration": ("history", 0, "steps", "preflight", "duration"),
    "history-pid": ("history", 0, "run", "pid"),
    "step-started": ("steps", "preflight", "started"),
    "run-started": ("run", "started"),
    "wait-since": ("waiting", "since"),
    "history-started": ("history", 0, "run", "started"),
    "rollout-log-finished": ("rollout_log", 0, "finished"),
    "rollout-log-started": ("rollout_log", 0, "started"),
    "wait-log-started": ("wait_log", 0, "started"),
}
VERBS: dict[str, list[str]] = {
    "status": ["status"],
    "status-long": ["status", "--long"],
    "status-json": ["status", "--output", "json"],
    "analyze": ["analyze"],
    "analyze-json": ["analyze", "--output", "json"],
    "analyze-svg": ["analyze", "--svg", "{state}/timeline.svg"],
}
# The state says: a run that says "running" with no process holding the lock was cut off (`status` exits 1).
EXPECTED_EXIT = {"status": 1, "analyze": 0}
PAGE_READERS = ("page", "metrics")  # the progress page and its /metrics, read from the same journal
# Whole records that are not records: the file is then not a journal this version can read (69), or the record
# is unknown; never 70.
RECORDS: dict[str, tuple[Any, ...]] = {
    "step-record": ("steps", "preflight"),
    "run-record": ("run",),
    "error-record": ("error",),
    "waiting-record": ("waiting",),
    "rollout-log-entry": ("rollout_log", 0),
    "wait-log-entry": ("wait_log", 0),
    "history-entry": ("history", 0),
    "history-step-record": ("history", 0, "steps", "preflight"),
}


def _poisoned(field: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    *parents, last = FIELDS.get(field) or RECORDS[field]
    holder = doc
    for key in parents:
        holder = holder[key]
    holder[last] = value
    return doc


def _strict(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in JSON output")

    return json.loads(text, parse_constant=refuse)


def _state(tmp_path: pathlib.Path, field: str, garbage: str) -> pathlib.Path:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "status.json").write_text(json.dumps(_poisoned(field, GARBAGE[garbage])))
    return state


def _verb(verb: str, state: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main.main([*(arg.format(state=state) for arg in VERBS[verb]), "--state-dir", str(state)])
    out, err = capsys.readouterr()
    return code, out, err


def _shown(out: str) -> None:
    assert "1e+300" not in out and "e+21" not in out and "inf" not in out.lower().replace("info", "")


@pytest.mark.parametrize("verb", sorted(VERBS))
@pytest.mark.parametrize("field", sorted(FIELDS))
@pytest.mark.parametrize("garbage", sorted(GARBAGE))
def test_garbage_numbers_never_exit_70(
    garbage: str, field: str, verb: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = _state(tmp_path, field, garbage)
    code, out, err = _verb(verb, state, capsys)
    assert code == EXPECTED_EXIT[VERBS[verb][0]], (code, err)
    assert "internal error" not in err and err == ""
    if verb.endswith("json"):
        _strict(out)  # no NaN or Infinity: what a script reads must be JSON
    _shown(out)
    if verb.endswith("svg"):
        ET.parse(state / "timeline.svg")  # a well-formed picture


@pytest.mark.parametrize("reader", PAGE_READERS)
@pytest.mark.parametrize("field", sorted(FIELDS))
@pytest.mark.parametrize("garbage", sorted(GARBAGE))
def test_the_page_and_its_metrics_read_garbage_numbers(
    garbage: str, field: str, reader: str, tmp_path: pathlib.Path
) -> None:
    state = _state(tmp_path, field, garbage)
    source = page.Source(state / "status.json", model.SiteConfig(name="s", domain="e.example.com"), SystemClock())
    try:
        if reader == "metrics":
            text = metrics.exposition(source).decode()
            assert "NaN" not in text and "Inf" not in text
            list(text_string_to_metric_families(text))
        else:
            progress, picture = source()
            _shown(page.render(progress, timeline.svg(picture)))
    finally:
        source.unsubscribe()


@pytest.mark.parametrize("verb", sorted(VERBS))
@pytest.mark.parametrize("record", sorted(RECORDS))
@pytest.mark.parametrize("garbage", sorted(GARBAGE))
def test_a_record_that_is_not_one_is_unreadable_or_unknown_never_70(
    garbage: str, record: str, verb: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = _state(tmp_path, record, garbage)
    code, out, err = _verb(verb, state, capsys)
    assert code in (EXPECTED_EXIT[VERBS[verb][0]], 69), (code, err)
    assert "internal error" not in err
    if code == 69:
        assert "cannot read" in err and "Remove the file to start afresh" in err
    elif verb.endswith("json"):
        _strict(out)

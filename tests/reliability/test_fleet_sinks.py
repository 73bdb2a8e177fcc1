"""Every fleet sink, by class: each hostile string in every text field of a Site's status, through every sink.

The strings are the agent's (`test_sinks.HOSTILE`: terminal escapes, BEL, NUL, bidi, a lone surrogate, markup) and
formula cells (`FORMULAS`). Each string `s` is put, with a marker, at the start of every text field of one Site's
status (reason, condition, finding, and every text of the node's report) and as the phase of another, on an older
hub that keeps any status (`olderhub`); each sink (`SINKS`: `fleet status` as table, JSON and CSV, `fleet why` as
text and JSON, `fleet report`'s page, `fleet import-report`'s output) then runs once over all of them, over HTTPS,
as a person runs it. No sink may pass a control character raw; each shows every string (its marker); its output is
UTF-8; the page holds no element or attribute the input named; every CSV cell is neutralised (OWASP). A new sink is
one entry in `SINKS`.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import pathlib
import urllib.request
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from typing import Any

import pytest
from snoreloc_fleet.controller import metrics, reconcile

from hub.conftest import NS
from reliability.olderhub import DIGEST, carried, fleet, keep_key, put_site, start
from reliability.test_sinks import FORBIDDEN, HOSTILE
from snoreloc import sanitize
from snoreloc.adapters import clock, kube
from snoreloc_sim.hub.simulator import HubSimulator

FORMULAS: dict[str, str] = {
    "formula-hyperlink": '=HYPERLINK("http://x","y")',
    "formula-plus": "+cmd|' /C calc'!A0",
    "formula-at": "@SUM(1)",
    "formula-minus": "-2+3",
    "formula-tab": "\t=1",
    "formula-cr": "\r=1",
}
STRINGS = sorted({**HOSTILE, **FORMULAS}.items())


def _marked(index: int, text: str, field: str) -> str:
    """`text` first (a formula must start the cell), then the marker a sink must show."""
    return f"{text}MARK{index:02d}{field}"


def _report(index: int, text: str, now: dt.datetime) -> dict[str, Any]:
    """A node's report (`hubreport.snapshot`'s fields) whose every text is hostile."""

    def t(field: str) -> str:
        return _marked(index, text, field)

    return {
        "reportedAt": (now - dt.timedelta(minutes=5)).isoformat(timespec="seconds"),
        "agentVersion": t("version"),
        "source": "node",
        "siteConfigDigest": DIGEST,
        "runState": t("run"),
        "step": t("step"),
        "stepsDone": 1,
        "stepsTotal": 2,
        "todo": t("todo"),
        "steps": [{"name": t("s1"), "state": "done", "seconds": 60.0}, {"name": t("s2"), "state": t("st")}],
        "warnings": [t("warn")],
        "waiting": {"step": t("ws"), "what": t("what"), "elapsedSeconds": 30.0, "budgetSeconds": 600.0},
        "failure": {"step": t("fs"), "message": t("msg"), "hint": t("hint")},
        "exitCode": 70,
    }


def _status(index: int, text: str, now: dt.datetime) -> dict[str, Any]:
    condition = {"type": "Ready", "status": "False", "reason": _marked(index, text, "cr"),
                 "message": _marked(index, text, "cm"), "lastTransitionTime": "2026-11-24T10:00:00Z"}  # fmt: skip
    finding = {"path": _marked(index, text, "path"), "message": _marked(index, text, "fm"), "line": 3}
    return {
        "phase": "Failed",
        "reason": _marked(index, text, "reason"),
        "conditions": [condition],
        "validation": {"errors": [finding], "warnings": [], "more": 0},
        "agent": _report(index, text, now),
    }


@pytest.fixture(scope="module")
def hostile_hub() -> Iterator[tuple[HubSimulator, kube.Client]]:
    """Per string `i`: Site `bad-i` (Failed, every text hostile), `odd-i` (its phase hostile), and `imp-i` (Ready,
    with a report key and a stick's digest, for import-report)."""
    now = dt.datetime.now(dt.UTC)
    for hub, admin in start():
        for index, (_name, text) in enumerate(STRINGS):
            put_site(admin, f"bad-{index:02d}", _status(index, text, now))
            put_site(admin, f"odd-{index:02d}", {"phase": _marked(index, text, "phase")})
            put_site(admin, f"imp-{index:02d}", {"phase": "Ready", "media": {"digest": DIGEST}})
            keep_key(admin, f"imp-{index:02d}")
        yield hub, admin


def _names(prefix: str) -> list[str]:
    return [f"{prefix}-{index:02d}" for index in range(len(STRINGS))]


def _run(capsys: pytest.CaptureFixture[str], hub: HubSimulator, *argv: str, codes: tuple[int, ...] = (0,)) -> str:
    capsys.readouterr()
    code = fleet(hub, *argv)
    captured = capsys.readouterr()
    assert code in codes, f"fleet {' '.join(argv)}: exit {code}: {captured.err[-500:]}"
    assert "Traceback" not in captured.err
    return captured.out + captured.err


def _status_table(hub: HubSimulator, _tmp: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> str:
    return _run(capsys, hub, "status", "-n", NS)


def _status_json(hub: HubSimulator, _tmp: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> str:
    out = _run(capsys, hub, "status", "-n", NS, "-o", "json")
    json.loads(out)
    return out


def _status_csv(hub: HubSimulator, _tmp: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> str:
    return _run(capsys, hub, "status", "-n", NS, "-o", "csv")


def _why(hub: HubSimulator, _tmp: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> str:
    return "".join(_run(capsys, hub, "why", name, "-n", NS) for name in _names("bad") + _names("odd"))


def _why_json(hub: HubSimulator, _tmp: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> str:
    outs = [_run(capsys, hub, "why", name, "-n", NS, "-o", "json") for name in _names("bad") + _names("odd")]
    for out in outs:
        json.loads(out)
    return "".join(outs)


def _page(hub: HubSimulator, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> str:
    page = tmp_path / "fleet.html"
    _run(capsys, hub, "report", "-n", NS, "--html", str(page))
    return page.read_text(encoding="utf-8")


def _import(hub: HubSimulator, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> str:
    """Each string's report carried back for `imp-i`; one a node cannot sign (a lone surrogate) is refused (65)."""
    now = dt.datetime.now(dt.UTC)
    shown = []
    for index, (name, text) in enumerate(STRINGS):
        site = f"imp-{index:02d}"
        path = carried(tmp_path / f"{site}.json", site, _report(index, text, now))
        codes = (65,) if name == "lone-surrogate" else (0,)
        out = _run(capsys, hub, "import-report", str(path), codes=codes)
        shown.append(out if codes == (0,) else _marked(index, "", "refused") + out)
    return "".join(shown)


def _metrics(hub: HubSimulator, _tmp: pathlib.Path, _capsys: pytest.CaptureFixture[str]) -> str:
    """The controller's `/metrics` (its Sites-by-phase labels) once it has seen every Site, scraped over HTTP."""
    admin = kube.Client.from_kubeconfig(str(hub.kubeconfig_path), clock=clock.SystemClock())
    try:
        observed = metrics.FleetMetrics()
        for obj in admin.list(reconcile.SITES, NS):
            observed.observe(obj)
    finally:
        admin.close()
    served = metrics.serve(observed, 0, "127.0.0.1")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{served.port}/metrics", timeout=10) as answer:
            assert answer.status == 200
            return str(answer.read().decode("utf-8"))
    finally:
        served.stop()


SINKS: dict[str, Callable[[HubSimulator, pathlib.Path, pytest.CaptureFixture[str]], str]] = {
    "status-table": _status_table,
    "status-json": _status_json,
    "status-csv": _status_csv,
    "why-text": _why,
    "why-json": _why_json,
    "report-html": _page,
    "import-report": _import,
    "controller-metrics": _metrics,
}
# The page's own elements (its head, tables, badges, the pictures' SVG, the timelines' details and its one script).
PAGE_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "span", "a", "table", "tr", "th"}
PAGE_TAGS |= {"td", "code", "svg", "defs", "pattern", "path", "rect", "line", "text", "g", "details", "summary"}
PAGE_TAGS |= {"script"}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes |= {name for name, _value in attrs}


def _check_csv(shown: str) -> None:
    for row in csv.reader(io.StringIO(shown)):
        for cell in row:
            assert not cell.startswith(sanitize.FORMULA_STARTS), f"a formula cell: {cell[:80]!r}"


def _check_page(shown: str) -> None:
    parser = _Tags()
    parser.feed(shown)
    assert set(parser.tags) <= PAGE_TAGS, set(parser.tags) - PAGE_TAGS
    assert parser.tags.count("script") == 1, "only the page's own script"
    assert not {a for a in parser.attributes if a.startswith("on")}, parser.attributes


@pytest.mark.parametrize("sink", sorted(SINKS))
def test_every_fleet_sink_shows_every_hostile_string_harmlessly(
    sink: str,
    hostile_hub: tuple[HubSimulator, kube.Client],
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    shown = SINKS[sink](hostile_hub[0], tmp_path, capsys)
    missing = [name for index, (name, _text) in enumerate(STRINGS) if f"MARK{index:02d}" not in shown]
    assert not missing, f"{sink} did not show {missing}"
    raw = FORBIDDEN.search(shown)
    assert raw is None, f"{sink} passed {raw.group()!r} raw near {shown[max(0, raw.start() - 60) : raw.end() + 20]!r}"
    shown.encode("utf-8")  # a lone surrogate would make the file or the terminal unwritable
    if sink == "status-csv":
        _check_csv(shown)
    if sink == "report-html":
        _check_page(shown)


@pytest.mark.parametrize("name", sorted({**HOSTILE, **FORMULAS}))
def test_csv_cells_and_metric_labels_are_neutralised(name: str) -> None:
    """The per-kind sanitisers themselves, on each string at the start, middle and end of a value."""
    text = {**HOSTILE, **FORMULAS}[name]
    for value in (text, f"x{text}", f"{text}x"):
        cell, label = sanitize.csv_cell(value), sanitize.label(value)
        for out in (cell, label):
            assert not FORBIDDEN.search(out) and "\n" not in out and "\t" not in out
            out.encode("utf-8")
        assert not cell.startswith(sanitize.FORMULA_STARTS)
        assert cell.lstrip("'") == label, "the cell is the label, defused, and nothing else changed"
    assert sanitize.csv_cell("store-042") == "store-042" and sanitize.label("Relocated") == "Relocated"

"""Strings bound for a person, by class: every hostile string through every sink, and the page server's bounds.

A site name, an object's name or an error the API returned can carry a terminal escape, a bidirectional override,
a byte XML forbids, or markup. Every sink a person reads (`SINKS`: the terminal through `snoreloc status`, the
progress page's HTML, the timeline SVG, the console banner, a log line) gets every string in `HOSTILE`; none may
pass a control character through raw, and the HTML and SVG must stay well-formed with no element the input named.
A new sink is one entry in `SINKS`.
"""

from __future__ import annotations

import http.client
import json
import pathlib
import re
import socket
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from html.parser import HTMLParser

import pytest

from snoreloc import logs, sanitize
from snoreloc.adapters import command, console, fs
from snoreloc.cli import main
from snoreloc.engine import page, view
from snoreloc.engine import timeline as drawing

HOSTILE: dict[str, str] = {
    "csi-clear-screen": "site\x1b[2J\x1b[Hgone",
    "osc-window-title": "site\x1b]0;owned\x07",
    "c1-csi": "site\x9b31mred",
    "carriage-return-overwrite": "ok\rFAILED",
    "nul-and-bell": "a\x00b\x07c",
    "backspace": "abc\x08\x08\x08xyz",
    "bidi-override": "invoice\u202egnp.exe",
    "bidi-isolate": "a\u2066b\u2069c",
    "line-separator": "one\u2028two",
    "lone-surrogate": "bad\ud800half",
    "xml-non-character": "x\uffffy",
    "script-tag": "</title><script>alert(1)</script>",
    "attribute-break": '"\' onload="alert(1)',
    "svg-in-text": "<svg onload=alert(1)>",
    "entity": "&amp;&#x1b;&lt;",
}
# Raw characters no sink may pass: every control but line feed and tab, the bidi controls, the XML non-characters.
FORBIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufffe\uffff\ud800-\udfff]"
)


def _journal_with(text: str) -> dict[str, object]:
    error = {"message": text, "hint": text, "exit_code": 70}
    step = {"state": "failed", "started": "2026-01-01T00:00:00+00:00", "error": error, "warnings": [text]}
    steps = {"preflight": step}
    return {
        "version": 2,
        "state": "failed",
        "order": ["preflight"],
        "steps": steps,
        "site": {"name": text, "fingerprint": "f", "path": None},
        "run": {"pid": 1, "started": "2026-01-01T00:00:00+00:00", "finished": None, "mode": "cluster"},
        "error": {"step": "preflight", "message": text, "hint": text, "exit_code": 70},
        "rollouts": {},
    }


def _terminal(text: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> str:
    """`snoreloc status --long` over a journal whose strings (site, error, hint, warning) are hostile."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "status.json").write_text(json.dumps(_journal_with(text)))
    main.main(["status", "--long", "--state-dir", str(state)])
    captured = capsys.readouterr()
    return captured.out + captured.err


def _progress(text: str) -> view.Progress:
    row = view.StepRow(name=text, state="failed", started=text, seconds=1.0, note=text, error=text, hint=text)
    wait = view.CurrentWait(step=text, what=text, elapsed=1.0, budget=2.0, detail=text)
    return view.Progress(
        site=text, state="failed", steps=(row,), todo=text, current=wait, warnings=(text,), error=text, hint=text
    )


def _timeline(text: str) -> drawing.Timeline:
    bar = drawing.Bar(label=text, start=0.0, end=2.0)
    return drawing.Timeline(title=text, bars=(bar,), waits=(drawing.WaitMark(text, text, 0.5, 1.0),), end=2.0)


def _html(text: str, _tmp: pathlib.Path, _capsys: pytest.CaptureFixture[str]) -> str:
    return page.render(_progress(text), drawing.svg(_timeline(text)))


def _svg(text: str, _tmp: pathlib.Path, _capsys: pytest.CaptureFixture[str]) -> str:
    return drawing.svg(_timeline(text))


def _banner(text: str, tmp_path: pathlib.Path, _capsys: pytest.CaptureFixture[str]) -> str:
    host = fs.HostFS(tmp_path)
    console.Banner(host, command.FakeRunner().on(["agetty"])).failed(text, text, text)
    return host.read_text(console.ISSUE_FILE)


def _log_line(text: str, _tmp: pathlib.Path, _capsys: pytest.CaptureFixture[str]) -> str:
    import logging  # noqa: PLC0415

    record = logging.LogRecord("snoreloc.test", logging.WARNING, __file__, 1, "object %s failed", (text,), None)
    logs.RedactingFilter().filter(record)
    return str(record.msg)


SINKS: dict[str, Callable[[str, pathlib.Path, pytest.CaptureFixture[str]], str]] = {
    "terminal": _terminal,
    "page-html": _html,
    "svg": _svg,
    "console-banner": _banner,
    "log-line": _log_line,
}
MARKUP_SINKS = {"page-html", "svg"}
PAGE_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "b", "span", "a", "ul", "li", "table"}
PAGE_TAGS |= {"tr", "th", "td", "code", "svg", "defs", "pattern", "path", "rect", "line", "text", "g"}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes |= {name for name, _value in attrs}


@pytest.mark.parametrize("sink", sorted(SINKS))
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_no_sink_passes_a_control_character_or_markup(
    sink: str, name: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = SINKS[sink](f"MARK{HOSTILE[name]}", tmp_path, capsys)
    assert "MARK" in shown, f"{sink} did not show the string at all: {shown[:300]!r}"
    assert not FORBIDDEN.search(shown), f"{sink} passed {FORBIDDEN.search(shown)!r} raw"
    shown.encode("utf-8")  # a lone surrogate would make the page or the file unwritable
    if sink == "svg":
        root = ET.fromstring(shown)  # well-formed XML, or the picture is blank
        assert not [e for e in root.iter() if e.tag.endswith("script")]
    if sink in MARKUP_SINKS:
        parser = _Tags()
        parser.feed(shown)
        assert parser.tags <= PAGE_TAGS | {"pattern", "title"}, parser.tags - PAGE_TAGS
        assert "onload" not in parser.attributes


def test_visible_keeps_plain_text_and_shows_each_control_once() -> None:
    assert sanitize.visible("plain text, ünïcode, tabs\tand\nlines") == "plain text, ünïcode, tabs\tand\nlines"
    assert sanitize.visible("a\x1b[2Jb\r\u202e\x85") == "a\\x1b[2Jb\\r\\u202e\\x85"
    assert sanitize.visible("a\nb\t", keep_lines=False) == "a\\nb\\t"
    assert sanitize.html("<a href='x'>&\x07") == "&lt;a href=&#x27;x&#x27;&gt;&amp;\\x07"


# --- the page server: a whole-request deadline, a cap on connections ------------------------------------------------


def _content() -> tuple[view.Progress, drawing.Timeline]:
    return _progress("store-042"), _timeline("store-042")


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[page.PageServer]:
    monkeypatch.setattr(page, "REQUEST_DEADLINE", 1.0)
    monkeypatch.setattr(page, "MAX_CONNECTIONS", 2)
    serving = page.PageServer(("127.0.0.1", 0), _content).start()
    yield serving
    serving.stop()


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except ConnectionError:
        return True
    return True


def test_a_trickling_request_is_cut_off_at_the_deadline(server: page.PageServer) -> None:
    """Each byte within the idle timeout, so only a whole-request deadline ends it."""
    sock = socket.create_connection(("127.0.0.1", server.port))
    started = time.monotonic()
    try:
        for byte in b"GET / HTTP/1.1\r\nX-Slow: ":
            try:
                sock.send(bytes([byte]))
            except OSError:
                break
            if time.monotonic() - started > 5:
                break
            time.sleep(0.2)
        assert _closed_within(sock, 3.0)
    finally:
        sock.close()
    assert time.monotonic() - started < 5.0


def test_connections_past_the_cap_are_closed_and_the_page_still_serves(server: page.PageServer) -> None:
    idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(2)]
    time.sleep(0.2)  # both are being served (waiting for their request line)
    extra = socket.create_connection(("127.0.0.1", server.port))
    try:
        assert _closed_within(extra, 0.8), "a connection past the cap was kept"
    finally:
        extra.close()
        for sock in idle:
            sock.close()
    time.sleep(0.3)  # their slots are free again
    client = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    client.request("GET", "/")
    assert client.getresponse().status == 200
    client.close()


# --- every verb's terminal output passes the sanitiser ----------------------------------------------------------------

# The least argv each verb's parser takes (positional arguments, required options); a new verb is added here.
VERB_ARGV: dict[str, list[str]] = {
    "validate": ["site-config.yaml"],
    "make-media": ["site-config.yaml"],
    "render-machineconfig": ["--host-install", "--no-internal-ip"],
    "admin-access": ["init", "--dir", "owner"],
}


@pytest.mark.parametrize("verb", [name for name, _module in main.BUILTIN_COMMANDS])
def test_every_verb_prints_through_the_sanitiser(verb: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever a verb prints, to stdout or stderr, passes `sanitize.TerminalStream`: the verb runs with both
    wrapped (a stand-in for its body records the streams it sees; test_no_sink_... shows what the wrapper does)."""
    module = main._load(dict(main.BUILTIN_COMMANDS)[verb])
    seen: list[bool] = []

    def body(_args: object) -> int:
        seen.append(isinstance(sys.stdout, sanitize.TerminalStream) and isinstance(sys.stderr, sanitize.TerminalStream))
        return 0

    monkeypatch.setattr(module, "run", body)
    assert main.main([verb, *VERB_ARGV.get(verb, [])]) == 0
    assert seen == [True]
    assert not isinstance(sys.stdout, sanitize.TerminalStream), "the streams are given back after the verb"

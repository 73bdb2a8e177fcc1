"""The progress page: a read-only web page the agent serves on the node while it runs, for the person at the site.

That person often holds only a phone on the site network and has no shell on the node, so the page is plain HTML
that reloads itself every few seconds (no JavaScript), fits a narrow screen, and shows what the console banner
shows plus the steps, the current wait and the timeline picture. It answers GET and HEAD only (405 otherwise),
never carries a secret (every text in it went through `snoreloc.redact`, and the response is redacted once more as
a whole), shows every text through `snoreloc.sanitize` (controls visible, markup escaped), bounds each request as a
whole (`REQUEST_DEADLINE`) and the connections served at once (`MAX_CONNECTIONS`), and stops by itself `keep`
seconds after the run ends.

The default port, 8090, is none of the ports OpenShift uses on a control-plane node's host network (the router's
80/443/1936, the API's 6443, etcd, kubelet and the 9000-9999 and 10250-10260 service ranges: openshift/openshift-docs
snippets/network-flow-matrix.csv) and lies outside the NodePort range 30000-32767.
"""

from __future__ import annotations

import contextlib
import http.server
import logging
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from snoreloc import redact, sanitize, waits
from snoreloc.adapters import clock as clock_mod
from snoreloc.engine import journal, metrics, report, view
from snoreloc.engine import timeline as drawing
from snoreloc.siteconfig import model

__all__ = ["DEFAULT_PORT", "Content", "PageServer", "Source", "render", "url"]

LOG = logging.getLogger(__name__)

DEFAULT_PORT = model.ProgressPage().port
REFRESH_SECONDS = 5
# A whole request, from accept to the last byte sent, may take this long: a client that trickles its request a byte
# at a time (each byte resetting the idle timeout) is cut off here instead of holding a thread for ever.
REQUEST_DEADLINE = 15.0
# At most this many connections are served at once; more are closed at once (the page is for a few phones).
MAX_CONNECTIONS = 16
STYLE = """
body{font-family:sans-serif;margin:0 auto;padding:0.5em;max-width:60em;line-height:1.35}
h1{font-size:1.3em;margin:0.3em 0} .todo{font-size:1.15em;padding:0.6em;border-radius:0.3em;background:#eef}
.failed .todo{background:#fdd} .done .todo{background:#dfd} table{border-collapse:collapse;width:100%}
td,th{text-align:left;padding:0.25em 0.4em;border-bottom:1px solid #ddd;vertical-align:top}
.state-failed{color:#9d1c1c;font-weight:bold} .state-running{color:#1c4e9d;font-weight:bold}
.small{color:#555;font-size:0.9em} svg,img{max-width:100%;height:auto} .hint{font-weight:bold}
"""

Content = Callable[[], tuple[view.Progress, drawing.Timeline]]


def _e(text: object) -> str:
    return sanitize.html(text)


def _steps(progress: view.Progress) -> str:
    rows = []
    for step in progress.steps:
        took = waits.duration(step.seconds) if step.seconds is not None else ""
        detail = _e(step.note)
        if step.error:
            detail = f"{_e(step.error)} <span class='hint'>{_e(step.hint)}</span>"
        rows.append(
            f"<tr><td>{_e(step.name)}</td><td class='state-{_e(step.state)}'>{_e(step.state)}</td>"
            f"<td>{_e(step.started)}</td><td>{_e(took)}</td><td class='small'>{detail}"
            "</td></tr>"
        )
    head = "<tr><th>step</th><th>state</th><th>started (UTC)</th><th>took</th><th></th></tr>"
    return f"<table>{head}{''.join(rows)}</table><p class='small'>took: {_e(progress.seconds)}</p>"


def _wait(current: view.CurrentWait | None) -> str:
    if current is None:
        return ""
    detail = f" <span class='small'>({_e(current.detail)})</span>" if current.detail else ""
    return (
        f"<p id='wait'>Waiting in <b>{_e(current.step)}</b> for {_e(current.what)}: "
        f"{_e(waits.duration(current.elapsed))} of at most {_e(waits.duration(current.budget))}{detail}</p>"
    )


def _outcome(progress: view.Progress) -> str:
    parts = []
    if progress.console_url:
        url = _e(progress.console_url)
        parts.append(f"<p id='console'>Web console: <a href='{url}'>{url}</a></p>")
    if progress.error:
        parts.append(f"<p id='error'>What failed: {_e(progress.error)}</p>")
        if progress.hint:
            parts.append(f"<p class='hint'>Likely fix: {_e(progress.hint)}</p>")
    if progress.warnings:
        items = "".join(f"<li>{_e(w)}</li>" for w in progress.warnings)
        parts.append(f"<h2>Warnings</h2><ul id='warnings'>{items}</ul>")
    return "".join(parts)


def render(progress: view.Progress, picture: str) -> str:
    """The whole page. `picture` is the timeline SVG (drawn by `engine.timeline`, so free of markup from input)."""
    mood = "failed" if progress.state in ("failed", "interrupted", "partial") else progress.state.split("-")[0]
    refresh = f"<meta http-equiv='refresh' content='{REFRESH_SECONDS}'>" if progress.state in ("new", "running") else ""
    page = (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"{refresh}<title>snoreloc: {_e(progress.site)}</title><style>{STYLE}</style></head>"
        f"<body class='{_e(mood)}'><h1>Relocation of site {_e(progress.site)}: {_e(progress.state)}</h1>"
        f"<p class='todo' id='todo'>{_e(progress.todo)}</p>{_wait(progress.current)}{_outcome(progress)}"
        f"<h2>Steps</h2>{_steps(progress)}<h2>Timeline</h2>{picture}"
        "<p class='small'>Read-only page served by snoreloc on this node. Details: "
        "<code>snoreloc status --long</code>.</p></body></html>\n"
    )
    return redact.redact(page)


class Source:
    """What the page shows, read afresh for every request: the journal file and the wait in progress."""

    def __init__(self, status: Path, site: model.SiteConfig, clock: clock_mod.Clock) -> None:
        self.status = status
        self.site = site
        self.clock = clock
        self.waiting: waits.Waiting | None = None
        self.unsubscribe = waits.subscribe(self._notice)

    def _notice(self, state: waits.Waiting | None) -> None:
        self.waiting = state

    def __call__(self) -> tuple[view.Progress, drawing.Timeline]:
        doc = journal.read(self.status)
        run = view.facts(doc)
        now = self.clock.now()
        console = report.console_url(self.site, doc)
        shown = view.progress(run, site=self.site.name, console_url=console, waiting=self.waiting, now=now)
        return shown, view.timeline_of(run, now=now)


def _addresses(network: Mapping[str, Any] | None) -> Iterator[str]:
    for interface in (network or {}).get("interfaces") or []:
        for family in ("ipv4", "ipv6"):
            for address in (interface.get(family) or {}).get("address") or []:
                yield f"[{address['ip']}]" if family == "ipv6" else str(address["ip"])


def url(site: model.SiteConfig, host: str, port: int) -> str:
    """Where a phone on the site network finds the page: the node's first static address from the site-config."""
    if host in ("", "0.0.0.0", "::"):  # noqa: S104 (the page is meant for the site network)
        host = next(_addresses(site.network), "<this node's address>")
    return f"http://{host}:{port}/"


@dataclass(frozen=True)
class _Reply:
    status: int
    body: bytes
    kind: str


class _Handler(http.server.BaseHTTPRequestHandler):
    """GET and HEAD of `/` (the page), `/timeline.svg` and `/metrics` (`engine.metrics`); all else is refused."""

    server: _Server
    server_version = "snoreloc-progress"
    sys_version = ""
    timeout = 10  # seconds a connection may stay idle: a stalled client does not hold a thread for long
    _deadline: threading.Timer

    def setup(self) -> None:
        super().setup()
        self._deadline = threading.Timer(REQUEST_DEADLINE, self._cut_off)
        self._deadline.daemon = True
        self._deadline.start()

    def _cut_off(self) -> None:
        LOG.debug("progress page: cut off a request still unfinished after %.0f s", REQUEST_DEADLINE)
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def finish(self) -> None:
        self._deadline.cancel()
        with contextlib.suppress(OSError):  # the deadline may have shut the socket under a buffered write
            super().finish()

    def _reply(self) -> _Reply:
        if self.path.split("?")[0] not in ("/", "/timeline.svg", "/metrics"):
            return _Reply(404, b"not found\n", "text/plain; charset=utf-8")
        if self.path.startswith("/metrics"):
            return _Reply(200, metrics.exposition(self.server.content), metrics.CONTENT_TYPE)
        progress, picture = self.server.content()
        svg = drawing.svg(picture)
        if self.path.startswith("/timeline.svg"):
            return _Reply(200, redact.redact(svg).encode(), "image/svg+xml")
        return _Reply(200, render(progress, svg).encode(), "text/html; charset=utf-8")

    def _send(self, with_body: bool) -> None:
        try:
            reply = self._reply()
        except Exception:
            LOG.exception("progress page")
            reply = _Reply(500, b"the page could not be drawn; see `snoreloc status`\n", "text/plain; charset=utf-8")
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.kind)
        self.send_header("Content-Length", str(len(reply.body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
        self.end_headers()
        if with_body:
            self.wfile.write(reply.body)

    def do_GET(self) -> None:
        self._send(with_body=True)

    def do_HEAD(self) -> None:
        self._send(with_body=False)

    def _refuse(self) -> None:
        body = b"read-only: GET and HEAD only\n"
        self.send_response(405)
        self.send_header("Allow", "GET, HEAD")
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_TRACE = do_CONNECT = _refuse

    def log_message(self, format: str, *args: object) -> None:
        LOG.debug("progress page: " + format, *args)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], content: Content) -> None:
        super().__init__(address, _Handler)
        self.content = content
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve in a thread while fewer than MAX_CONNECTIONS are being served; else close the connection."""
        if not self._slots.acquire(blocking=False):
            LOG.debug("progress page: %d connections already open; closed one from %s", MAX_CONNECTIONS, client_address)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class PageServer:
    """Serves the page from a daemon thread; `finish(keep)` stops it `keep` seconds later, `stop()` at once."""

    def __init__(self, address: tuple[str, int], content: Content, on_stop: Callable[[], None] = lambda: None) -> None:
        self._server = _Server(address, content)
        self._thread = threading.Thread(target=self._server.serve_forever, name="progress-page", daemon=True)
        self._stopped = threading.Event()
        self._stopping = threading.Lock()
        self._timer: threading.Timer | None = None
        self.on_stop = on_stop
        self.keep = 0.0
        self.stopping_at = ""

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> PageServer:
        self._thread.start()
        return self

    def finish(self, keep: float) -> None:
        """The run has ended: keep serving its final state for `keep` seconds, then stop."""
        if self._timer is not None:
            self._timer.cancel()
        self.keep = max(keep, 0.0)
        self.stopping_at = (datetime.now(UTC) + timedelta(seconds=self.keep)).strftime("%H:%M:%S UTC")
        self._timer = threading.Timer(self.keep, self.stop)
        self._timer.daemon = True
        self._timer.start()

    def stop(self) -> None:
        with self._stopping:
            if self._stopped.is_set():
                return
            if self._timer is not None:
                self._timer.cancel()
            self._server.shutdown()
            self._server.server_close()
            self.on_stop()
            self._stopped.set()

    def wait(self, timeout: float) -> bool:
        """Block until the page has stopped, at most `timeout` seconds; True when it has."""
        return self._stopped.wait(timeout)

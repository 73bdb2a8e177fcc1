"""The simulated kube-apiserver's HTTPS side: the listener, bearer tokens, outages and injected faults.

The agent and its tests talk to the simulator with the official `kubernetes` client and `kubectl`, unmodified, so
everything they rely on is answered as kube-apiserver answers it: the URL layout (core `/api/v1`, groups under
`/apis`, namespaced and cluster-scoped, `status`/`approval` subresources), discovery documents, `Status` bodies
with reason, details and causes, list envelopes with a resourceVersion, label and field selectors, `dryRun`,
`fieldValidation`, the three patch dialects (see `patch`), and `Warning` headers.

Three layers, outermost first:
- `_Handler`/`_HttpServer`: HTTP/1.1 over TLS on 127.0.0.1; drops connections when told to (outage, faults).
- `Front`: availability (scripted outages), authentication (the bearer token, or a client certificate judged
  per request against a live CA bundle: `clientauth`), injected faults (see `faults`).
- `api.Api`: the resource semantics over `model.Store`, with admission hooks and schema validation before a write
  (one module per concern under `kube.api`); the values passed between the layers are in `messages`.

Deliberate simplifications: `watch=true` streams are served (chunked JSON lines of change events, bounded by
`timeoutSeconds`, at most `api.reads.MAX_WATCH_SECONDS`) but keep no history: a watch starts from "now" whatever
resourceVersion it names. Namespaces live and die as in `namespaces` (Terminating, content first). `as=Table`
requests get plain JSON (kubectl then prints client-side). Server-side apply (`apply`)
is served on main resources, not on subresources.
"""

from __future__ import annotations

import contextlib
import hmac
import http.client
import http.server
import json
import logging
import socket
import socketserver
import ssl
import struct
import threading
from collections.abc import Callable
from http import HTTPStatus
from typing import Any, Protocol

from snoreloc_sim.kube import clientauth, faults, model
from snoreloc_sim.kube.api import Api
from snoreloc_sim.kube.messages import Request, Response, dry_run, error_response, status_body

Obj = dict[str, Any]
LOG = logging.getLogger(__name__)

PUBLIC_PATHS = frozenset({"/readyz", "/livez", "/healthz", "/version"})
HANDSHAKE_SECONDS = 10.0
IDLE_SECONDS = 120.0
MAX_HEADER_LINE = 65536  # the limits http.client applies to a header block
MAX_HEADERS = 100


# availability, auth and faults -----------------------------------------------------------------------------------


class Front:
    """What stands before the resource semantics: outages, authentication, injected faults.

    A request is authenticated by the bearer token or, when `client_cas` is given, by a client certificate that
    `client_cas` verifies at that moment; either is enough, as kube-apiserver's union of authenticators.
    `serve` returns None when the connection must be dropped without a response (an outage in "refuse" mode, a
    reset or a hang fault).
    """

    def __init__(
        self,
        api: Api,
        token: str,
        availability: model.Availability,
        recorder: model.Recorder,
        injector: faults.Injector | None = None,
        *,
        client_cas: clientauth.Verifier | None = None,
    ) -> None:
        self.api = api
        self._token = token
        self._client_cas = client_cas
        self.availability = availability
        self.recorder = recorder
        self.injector = injector

    def serve(self, request: Request) -> Response | None:
        mode = self.availability.down()
        if mode == "refuse":
            return None
        if mode is not None:
            return _unavailable("the kube-apiserver is restarting", 5)
        public = request.path in PUBLIC_PATHS
        if not public and not self._authorized(request):
            return error_response(model.ApiError(401, "Unauthorized", "Unauthorized"))
        decision = self._decide(request, public)
        if decision is not None and decision.action is not faults.Action.NONE:
            return self._inject(decision)
        if not public:
            self.recorder.request(write=request.method != "GET" and not dry_run(request))
        return self.api.handle(request, conflict=decision is not None and decision.conflict)

    def _authorized(self, request: Request) -> bool:
        scheme, _, token = request.authorization.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), self._token.encode()):
            return True
        return self._client_cas is not None and self._client_cas.user(request.client_cert) is not None

    def _decide(self, request: Request, public: bool) -> faults.Decision | None:
        injector = self.injector
        if injector is None or (public and not injector.spec.health):
            return None
        decision = injector.decide(write=request.method in ("PUT", "PATCH"))
        if decision.latency:
            injector.stopped.wait(decision.latency)
        return decision

    def _inject(self, decision: faults.Decision) -> Response | None:
        assert self.injector is not None
        retry_after = self.injector.spec.retry_after
        action = decision.action
        if action is faults.Action.ERROR_500:
            error = model.ApiError(500, "InternalError", "Internal error occurred: injected fault")
            return error_response(error)
        if action is faults.Action.ERROR_503:
            return _unavailable("injected fault", retry_after)
        if action is faults.Action.ERROR_429:
            error = model.ApiError(
                429,
                "TooManyRequests",
                "the server has received too many requests and has asked us to try again later",
                details={"retryAfterSeconds": retry_after},
            )
            return Response(429, status_body(error), headers={"Retry-After": str(retry_after)})
        if action is faults.Action.HANG:
            self.injector.hang()
        return None


def _unavailable(message: str, retry_after: int) -> Response:
    error = model.ApiError(503, "ServiceUnavailable", message, details={"retryAfterSeconds": retry_after})
    return Response(503, status_body(error), headers={"Retry-After": str(retry_after)})


# HTTP over TLS -------------------------------------------------------------------------------------------------------


class Service(Protocol):
    def serve(self, request: Request) -> Response | None: ...


class RouterService:
    """The ingress router's listener: any request gets 200 and a short body; what matters is its certificate."""

    def serve(self, request: Request) -> Response | None:
        return Response(200, "snoreloc-sim router\n")


class _HttpServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    """A threaded HTTP server whose connections go through TLS in their own thread (a slow handshake never blocks
    the accept loop) and can be dropped wholesale on stop or refused during an outage."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int, service: Service, context: ssl.SSLContext, refuse: Callable[[], bool]) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.service = service
        self.context = context
        self.refuse = refuse
        self._live: set[ssl.SSLSocket] = set()
        self._live_lock = threading.Lock()

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.refuse():
            _reset(request)
            return
        request.settimeout(HANDSHAKE_SECONDS)
        try:
            connection = self.context.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            return
        connection.settimeout(IDLE_SECONDS)
        with self._live_lock:
            self._live.add(connection)
        try:
            _Handler(connection, client_address, self)
        except OSError:
            pass
        finally:
            with self._live_lock:
                self._live.discard(connection)
            connection.close()

    def drop_all(self) -> None:
        """Shut down every open connection (a restarting kube-apiserver drops its watches)."""
        with self._live_lock:
            live = list(self._live)
        for connection in live:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


def _reset(connection: socket.socket) -> None:
    """Close so the peer sees a reset, not a clean end of stream."""
    with contextlib.suppress(OSError):
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        connection.close()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # A buffered writer: a response's headers and body leave in one TLS record and one send, flushed after each
    # request (a watch flushes each event). Kept with TCP_NODELAY, as a real kube-apiserver (Go) sets it, so that
    # a write larger than the buffer is not held back by Nagle and delayed ACKs (~40 ms).
    wbufsize = -1
    disable_nagle_algorithm = True
    server: _HttpServer
    raw_requestline: bytes  # set by http.server before parse_request
    fields: dict[str, str]  # the request's header fields by lower-case name, set by parse_request
    server_version = "snoreloc-sim"
    sys_version = ""

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        LOG.debug("%s " + format, self.address_string(), *args)

    def parse_request(self) -> bool:
        """The request line and header fields. Read here rather than by `http.server`, which hands every header
        block to the `email` parser, at a cost per request close to that of admitting a write. What clients of an
        API server send is plain: `METHOD target HTTP/1.x`, then `Name: value` lines; anything else is refused
        with 400 (431 for an oversized block), and the connection closed."""
        # Until the line is read, replies (400) use HTTP/1.1 with a status line, as Go's net/http answers.
        self.command, self.request_version, self.close_connection = "", self.protocol_version, True
        self.requestline = self.raw_requestline.decode("iso-8859-1").rstrip("\r\n")
        words = self.requestline.split()
        if not words:
            return False
        if len(words) != 3 or words[2] not in ("HTTP/1.0", "HTTP/1.1"):
            self.send_error(HTTPStatus.BAD_REQUEST, f"Bad request line ({self.requestline!r})")
            return False
        self.command, target, self.request_version = words
        self.path = "/" + target.lstrip("/") if target.startswith("//") else target
        pairs = self._header_fields()
        if isinstance(pairs, HTTPStatus):
            self.send_error(pairs)
            return False
        self.fields = {name.lower(): value for name, value in pairs}  # what `_serve` reads (the last one wins)
        self.headers = fields = http.client.HTTPMessage()  # http.server's own view, in order, duplicates kept
        for name, value in pairs:
            fields[name] = value
        connection = self.fields.get("connection", "").lower()
        http10 = self.request_version == "HTTP/1.0"
        self.close_connection = connection == "close" or (http10 and connection != "keep-alive")
        if not http10 and self.fields.get("expect", "").lower() == "100-continue":
            go_on = self.handle_expect_100()
            self.wfile.flush()  # the client waits for the interim reply before it sends the body
            return go_on
        return True

    def _header_fields(self) -> list[list[str]] | HTTPStatus:
        """Every `Name: value` line up to the blank one, in order (a folded line continues the one before)."""
        pairs: list[list[str]] = []
        for _ in range(MAX_HEADERS + 1):
            raw = self.rfile.readline(MAX_HEADER_LINE + 1)
            if len(raw) > MAX_HEADER_LINE:
                return HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE
            line = raw.decode("iso-8859-1").rstrip("\r\n")
            if not line:
                return pairs
            if line[0] in " \t" and pairs:
                pairs[-1][1] += line
                continue
            name, colon, value = line.partition(":")
            if not colon or not name or name != name.strip():
                return HTTPStatus.BAD_REQUEST
            pairs.append([name, value.lstrip(" \t")])
        return HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE

    def _serve(self) -> None:
        length = int(self.fields.get("content-length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        client_cert = self.connection.getpeercert(binary_form=True) or b""
        reply = self.server.service.serve(Request.parse(self.command, self.path, self.fields, body, client_cert))
        if reply is None:
            self.close_connection = True
            _reset(self.connection)
        elif reply.stream is not None:
            self._send_stream(reply)
        else:
            self._send(reply)

    def _head(self, reply: Response, content_type: str) -> None:
        self.send_response(reply.code)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache, private")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        for warning in reply.warnings:
            self.send_header("Warning", f'299 - "{warning.replace(chr(34), chr(39))}"')

    def _send(self, reply: Response) -> None:
        if isinstance(reply.body, str):
            payload, content_type = reply.body.encode(), "text/plain; charset=utf-8"
        elif isinstance(reply.body, bytes):  # JSON encoded already (the hub's lists: `hub.encodings`)
            payload, content_type = reply.body, "application/json"
        else:
            payload, content_type = json.dumps(reply.body).encode(), "application/json"
        self._head(reply, content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _send_stream(self, reply: Response) -> None:
        assert reply.stream is not None
        self._head(reply, "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        for event in reply.stream:
            line = json.dumps(event).encode() + b"\n"
            self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True


class Listener:
    """One TLS listener on 127.0.0.1 (port 0: a free port), served from a background thread."""

    def __init__(
        self, service: Service, context: ssl.SSLContext, *, port: int = 0, refuse: Callable[[], bool] | None = None
    ) -> None:
        self._server = _HttpServer(port, service, context, refuse or (lambda: False))
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def drop_connections(self) -> None:
        """Close every open connection, watches included, and keep listening."""
        self._server.drop_all()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.drop_all()
        self._server.server_close()
        self._thread.join(timeout=5)

"""A BMC vendor's quirks in front of sushy-tools' emulator: an HTTPS reverse proxy that forwards to the emulator
(basic auth passed through, so the login is still the emulator's) and answers the way one vendor's Redfish service
does, as sushy's source describes it (`sushy/resources/manager/virtual_media.py`, sushy 5.14). The emulator behaves
like a well-mannered BMC and cannot provoke these answers, so the tests of sushy's vendor fallbacks put this in
front of it.

The quirks (one per proxy, `Quirk`):

- `LENOVO`: the VirtualMedia resource has no InsertMedia/EjectMedia actions, answers `Allow: GET, PATCH` and an
  `ETag`, and takes a PATCH of `Image`/`Inserted` instead, refusing one without the current ETag in `If-Match` with
  412. sushy's fallback: `_get_insert_media_uri`/`_get_eject_media_uri` (lines 86-110) PATCH the resource itself when
  `_allow_patch()` finds PATCH in `Allow`, with `If-Match: <_get_etag()>` (`insert_media` lines 245-252, `eject_media`
  lines 304-313). Upstream: sushy commit d7da81d3 ("fix-virtual-media-fallback": "required for Lenovo ThinkSystem
  machines (i.e. SD530, ..) that only implement the PATCH method") and b87bc544 ("fix-missing-etags": the ETag in the
  PATCH). Lenovo XCC answering 412 to a PATCH whose If-Match does not match: ansible-collections/community.general
  PR #11270. sushy-tools' own PATCH of a VirtualMedia takes only `VerifyCertificate`
  (`sushy_tools/emulator/controllers/virtual_media.py`, `virtual_media_patch`), so the proxy turns an accepted PATCH
  into the emulator's InsertMedia or EjectMedia action.
- `LENOVO_STRICT`: as `LENOVO`, but 412 even with the right If-Match (a firmware whose ETag handling is broken, as in
  community.general PR #3268): sushy has no fallback for it, the hub must name it.
- `TRANSFER_PROTOCOL`: InsertMedia without `TransferProtocolType` is refused 400 with
  `Base.1.x.ActionParameterMissing` naming `#/TransferProtocolType` in `RelatedProperties`. sushy's fallback:
  `is_transfer_protocol_required` (lines 112-140) and the retry in `insert_media` (lines 262-276) that names "HTTPS"
  for an https image. Upstream: sushy commit cccdff58 ("add-virtual-media-transfer-protocol") and 92bee3df
  ("action-parameter-missing": `Base.1.12.ActionParameterMissing` with RelatedProperties).
- `HPE_EJECT`: EjectMedia POSTed with no body is refused 415 (HPE iLO); with `{}` it is done. sushy's fallback:
  `eject_media` lines 316-323 post `{}` after a 415 or 400. Upstream: sushy commit 9bd1d6b0
  ("fix-eject-media-empty-dict": "HPE iLO ... for eject virtual media need to pass empty dictionary otherwise throws
  Unsupported media type error").

Every request the proxy saw is kept (`seen`), so a test can tell the fallback was taken.
"""

from __future__ import annotations

import contextlib
import enum
import http.server
import json
import re
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from .bmcemu import SYSTEM, Emulator

_DEVICE = re.compile(r"^/redfish/v1/(Systems|Managers)/[^/]+/VirtualMedia/[^/]+$")
_ACTION = re.compile(
    r"^/redfish/v1/(Systems|Managers)/[^/]+/VirtualMedia/[^/]+/Actions/VirtualMedia\.(?P<verb>InsertMedia|EjectMedia)$"
)
_PASSED = ("Content-Type", "WWW-Authenticate", "Location", "OData-Version")


class Quirk(enum.Enum):
    LENOVO = "lenovo"
    LENOVO_STRICT = "lenovo-strict"
    TRANSFER_PROTOCOL = "transfer-protocol"
    HPE_EJECT = "hpe-eject"


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    body: Any  # the JSON body, None when there was none
    if_match: str | None
    status: int


@dataclass
class Proxy:
    quirk: Quirk
    upstream: str  # https://127.0.0.1:PORT of the emulator
    ca_file: Path
    seen: list[Seen] = field(default_factory=list)
    etag: int = 1
    lock: threading.Lock = field(default_factory=threading.Lock)

    def tag(self) -> str:
        return f'"{self.etag}"'


def redfish_error(status: int, message_id: str, message: str, related: list[str] | None = None) -> tuple[int, bytes]:
    """A Redfish error body (DSP0266 "Error responses"), as sushy's `HTTPError` reads it."""
    info: dict[str, Any] = {"MessageId": message_id, "Message": message, "Severity": "Critical"}
    if related is not None:
        info["RelatedProperties"] = related
    return status, json.dumps(
        {"error": {"code": message_id, "message": message, "@Message.ExtendedInfo": [info]}}
    ).encode()


def _passed(response: requests.Response) -> dict[str, str]:
    return {k: response.headers[k] for k in _PASSED if k in response.headers}


def _handler(proxy: Proxy) -> type[http.server.BaseHTTPRequestHandler]:
    session = requests.Session()
    verify = str(proxy.ca_file)  # per request: a session's `verify` loses to REQUESTS_CA_BUNDLE

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _body(self) -> tuple[bytes, Any]:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                return raw, json.loads(raw) if raw else None
            except ValueError:
                return raw, None

        def _forward(self, method: str, path: str, body: Any, raw: bool = False) -> requests.Response:
            headers = {k: v for k, v in self.headers.items() if k in ("Authorization", "Accept", "Content-Type")}
            data = body if raw else (json.dumps(body).encode() if body is not None else None)
            if data is not None:
                headers["Content-Type"] = "application/json"
            return session.request(method, proxy.upstream + path, data=data, headers=headers, timeout=60, verify=verify)

        def _answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            if body and "Content-Type" not in (headers or {}):
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")  # one request a connection: no reuse racing a close
            self.end_headers()
            self.wfile.write(body)

        def _handle(self) -> None:
            raw, body = self._body()
            path = self.path
            status, answer, headers = self._quirk(path, raw, body)
            with proxy.lock:
                proxy.seen.append(Seen(self.command, path, body, self.headers.get("If-Match"), status))
            self._answer(status, answer, headers)

        def _quirk(self, path: str, raw: bytes, body: Any) -> tuple[int, bytes, dict[str, str]]:
            lenovo = proxy.quirk in (Quirk.LENOVO, Quirk.LENOVO_STRICT)
            action = _ACTION.match(path)
            if lenovo and _DEVICE.match(path):
                return self._lenovo_device(path, body)
            if lenovo and action:  # the actions are not there
                status, error = redfish_error(404, "Base.1.8.ResourceMissingAtURI", f"{path} was not found.")
                return status, error, {}
            inserting = action is not None and action["verb"] == "InsertMedia" and self.command == "POST"
            if proxy.quirk is Quirk.TRANSFER_PROTOCOL and inserting and "TransferProtocolType" not in (body or {}):
                status, error = redfish_error(
                    400, "Base.1.8.ActionParameterMissing",
                    "The action InsertMedia requires the parameter TransferProtocolType to be present in the "
                    "request body.", ["#/TransferProtocolType"])  # fmt: skip
                return status, error, {}
            if proxy.quirk is Quirk.HPE_EJECT and action and action["verb"] == "EjectMedia" and not raw:
                status, error = redfish_error(415, "Base.1.8.UnsupportedMediaType", "Unsupported media type.")
                return status, error, {}
            response = self._forward(self.command, path, raw or None, raw=True)
            return response.status_code, response.content, _passed(response)

        def _lenovo_device(self, path: str, body: Any) -> tuple[int, bytes, dict[str, str]]:
            if self.command == "GET":
                response = self._forward("GET", path, None)
                document = response.json()
                document.pop("Actions", None)
                with proxy.lock:
                    tag = proxy.tag()
                return response.status_code, json.dumps(document).encode(), {"Allow": "GET, PATCH", "ETag": tag}
            if self.command != "PATCH":
                return 405, b"", {"Allow": "GET, PATCH"}
            with proxy.lock:
                current = proxy.tag()
            if proxy.quirk is Quirk.LENOVO_STRICT or self.headers.get("If-Match") != current:
                image = (body or {}).get("Image")  # some BMCs quote the request: the hub must not show the URL
                status, error = redfish_error(
                    412, "Base.1.12.PreconditionFailed",
                    "The ETag supplied did not match the ETag required to change this resource."
                    + (f" (Image {image})" if image else ""))  # fmt: skip
                return status, error, {}
            if (body or {}).get("Image"):
                wanted = {k: body[k] for k in ("Image", "Inserted", "WriteProtected") if k in body}
                response = self._forward("POST", f"{path}/Actions/VirtualMedia.InsertMedia", wanted)
            else:
                response = self._forward("POST", f"{path}/Actions/VirtualMedia.EjectMedia", {})
            if response.status_code < 300:
                with proxy.lock:
                    proxy.etag += 1
            return response.status_code, response.content, _passed(response)

        do_GET = do_POST = do_PATCH = do_DELETE = _handle

    return Handler


@contextlib.contextmanager
def quirky(emulator: Emulator, quirk: Quirk, cert: Path, key: Path) -> Iterator[tuple[Emulator, Proxy]]:
    """The emulator behind a proxy with `quirk`, on a port of its own (the emulator's TLS identity: `cert`, `key`):
    the proxy as the BMC the Site names (an `Emulator` whose address is the proxy's), and what it saw."""
    upstream = emulator.address.removeprefix("redfish-virtualmedia+").removesuffix(SYSTEM)
    proxy = Proxy(quirk, upstream, emulator.ca_file)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(proxy))
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, name=f"bmc-quirk-{quirk.value}", daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        address = f"redfish-virtualmedia+https://127.0.0.1:{port}{SYSTEM}"
        yield Emulator(address, emulator.ca_file, emulator.downloads), proxy
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)

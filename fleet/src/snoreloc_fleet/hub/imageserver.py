"""The hub's image server: each BMC-delivered Site's configuration image over HTTPS, to the holder of its signed URL.

The controller grants an image when it inserts it into a Site's BMC (`Grants.grant`: the Site, the medium digest and
the image's bytes, built in memory by `hub.mediaimage`) and revokes the grant when it ejects it or the Site changes;
the server answers each request with `hub.imageurl.check`: 200 with the image, 403 for a URL the hub never made,
410 for one that is no longer good (expired, an older medium, nothing granted). Nothing is written to disk, so no
other Site's image can be read from a shared directory; grants live in the controller's memory (a restarted
controller grants again when it re-inserts). Each answer is logged with the Site and the verdict, never with the
signature or the image; downloads are counted per grant for the Site's status.

A download counts once the whole image was sent: the answer carries the image's `Content-Length` and is written in
`CHUNK`s, so a transfer cut midway (the server stopped, the connection dropped) is one the BMC can tell is short
(its HTTP client reads fewer bytes than announced, and fails), and one the count does not hold. A stopping server
gives downloads under way `STOP_GRACE` seconds, then cuts them. The BMC fetches again at the same URL (its retry,
or the cycle's insert after a failure) and gets the whole image.

aiohttp, which kopf already brings, serves it: in the controller's own event loop (`start`), or in a thread of its
own (`serve_in_thread`, for tests and a stand-alone Deployment).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus

from aiohttp import web

from snoreloc_fleet.hub import imageurl

LOG = logging.getLogger(__name__)
# the connections that fetched an image: cut when the server stops (aiohttp closes them politely, and a TLS close
# waits for a peer that may never answer, past the end of the server's loop, leaving the BMC hanging on a socket)
CONNECTIONS = web.AppKey("connections", weakref.WeakSet[asyncio.BaseTransport])
CHUNK = 256 * 1024  # bytes written at a time (a cut transfer stops between two)
STOP_GRACE = 5.0  # seconds a stopping server waits for downloads under way before it cuts them


@dataclass
class Grant:
    digest: str
    image: bytes = field(repr=False)
    downloads: int = 0


class Grants:
    """What may be downloaded now, per Site (namespace, name). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_site: dict[tuple[str, str], Grant] = {}

    def grant(self, namespace: str, name: str, digest: str, image: bytes, downloads: int = 0) -> None:
        """Serve `image` for the Site's medium `digest`; `downloads`: counted before (a restarted controller's)."""
        with self._lock:
            self._by_site[(namespace, name)] = Grant(digest, image, downloads)

    def revoke(self, namespace: str, name: str) -> None:
        with self._lock:
            self._by_site.pop((namespace, name), None)

    def current(self, namespace: str, name: str) -> Grant | None:
        with self._lock:
            return self._by_site.get((namespace, name))

    def downloads(self, namespace: str, name: str) -> int:
        found = self.current(namespace, name)
        return found.downloads if found else 0

    def image(self, namespace: str, name: str, digest: str) -> bytes | None:
        """The granted image of that digest; None when nothing is granted for it."""
        with self._lock:
            found = self._by_site.get((namespace, name))
            return found.image if found is not None and found.digest == digest else None

    def downloaded(self, namespace: str, name: str, digest: str) -> None:
        """Count one whole download of the image of `digest` (not when the grant changed meanwhile)."""
        with self._lock:
            found = self._by_site.get((namespace, name))
            if found is not None and found.digest == digest:
                found.downloads += 1


Answered = Callable[[str, int], None]  # (the Site's namespace of a whole download, "" for a refusal; the HTTP status)


def _refusals(application: web.Application, answered: Answered) -> None:
    """Tell `answered` of each refusal as its headers go out (aiohttp's `on_response_prepare` signal), with no
    namespace: a refused URL's claim is the requester's to choose."""

    async def prepared(_request: web.Request, response: web.StreamResponse) -> None:
        if response.status >= HTTPStatus.BAD_REQUEST:
            answered("", response.status)

    application.on_response_prepare.append(prepared)


def _part(request: web.Request, size: int) -> range | None:
    """The bytes a GET asks for: the whole image, or the one range of its `Range` header (RFC 9110 section 14.2, as
    aiohttp's `http_range` parses it; BMCs that stream virtual media read by ranges); None when unsatisfiable."""
    try:
        wanted = request.http_range
    except ValueError:  # a Range header aiohttp cannot read (several ranges, not bytes): the whole image, as RFC
        return range(size)  # 9110 allows a server that ignores it
    part = range(size)[wanted]
    return part if len(part) > 0 and part.step == 1 else None


async def _send(
    request: web.Request, body: bytes, site: tuple[str, str, str], grants: Grants, answered: Answered | None
) -> web.StreamResponse:
    """The granted image, or the part of it asked for; counted as a download once its last byte is sent."""
    part = _part(request, len(body))
    if part is None:
        headers = {"Content-Range": f"bytes */{len(body)}"}
        return web.Response(status=HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE, headers=headers)
    response = web.StreamResponse(headers={"Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"})
    if part != range(len(body)):
        response.set_status(HTTPStatus.PARTIAL_CONTENT)
        response.headers["Content-Range"] = f"bytes {part.start}-{part.stop - 1}/{len(body)}"
    response.content_length = len(part)
    if request.method == "HEAD":  # a BMC asking the size first (aiohttp's add_get answers HEAD): not a download
        await response.prepare(request)
        return response
    if request.transport is not None:  # aiohttp lets go of it when it stops: `stop` cuts it
        request.app[CONNECTIONS].add(request.transport)
    await response.prepare(request)
    for start in range(part.start, part.stop, CHUNK):  # cancelled or failing midway: not counted
        await response.write(body[start : min(start + CHUNK, part.stop)])
    await response.write_eof()
    if part.stop == len(body):  # the image's last byte sent: a whole read (a BMC streaming by ranges ends here)
        grants.downloaded(*site)
        if answered is not None:
            answered(site[0], HTTPStatus.OK)
    LOG.info("image %s %s/%s: bytes %d-%d of %d sent", request.remote, site[0], site[1], part.start,
             part.stop - 1, len(body))  # fmt: skip
    return response


def app(
    key: bytes, grants: Grants, now: Callable[[], float] = time.time, answered: Answered | None = None
) -> web.Application:
    """The server's routes; `answered` (the controller's metrics) is told of each whole download (with the Site's
    namespace, as counted for its status) and each refusal."""

    async def image(request: web.Request) -> web.StreamResponse:
        claimed = imageurl.parse(request.path_qs)
        granted = grants.current(claimed[0].namespace, claimed[0].name) if claimed else None
        answer = imageurl.check(key, request.path_qs, now(), granted.digest if granted else None)
        LOG.info("image %s %s: %s", request.remote, int(answer.verdict), answer.reason)
        if answer.verdict is not imageurl.Verdict.OK or answer.grant is None:
            return web.Response(status=int(answer.verdict), text=f"{answer.verdict.name.lower()}\n")
        site = (answer.grant.namespace, answer.grant.name, answer.grant.digest)
        body = grants.image(*site)
        if body is None:  # revoked between the check and now
            return web.Response(status=int(imageurl.Verdict.GONE), text="gone\n")
        return await _send(request, body, site, grants, answered)

    async def refused(request: web.Request) -> web.StreamResponse:
        LOG.info("image %s 403: not an image URL of this hub", request.remote)
        return web.Response(status=403, text="forbidden\n")

    application = web.Application()
    application[CONNECTIONS] = weakref.WeakSet()
    application.router.add_get(imageurl.PATH_PREFIX + "/{tail:.*}", image)
    application.router.add_route("*", "/{tail:.*}", refused)
    if answered is not None:
        _refusals(application, answered)
    return application


@dataclass
class Running:
    port: int
    stop: Callable[[], None]


def serve_in_thread(
    key: bytes,
    grants: Grants,
    context: ssl.SSLContext,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    grace: float = STOP_GRACE,
    answered: Answered | None = None,
) -> Running:
    """Serve on `port` (0: an ephemeral one) in a thread of its own event loop; `stop()` ends it, giving downloads
    under way `grace` seconds. `answered`: told of each whole download and each refusal (the controller's
    metrics)."""
    loop = asyncio.new_event_loop()
    started = threading.Event()
    holder: dict[str, object] = {}

    async def begin() -> None:
        application = app(key, grants, answered=answered)
        holder["connections"] = application[CONNECTIONS]
        runner = web.AppRunner(application, access_log=None, shutdown_timeout=grace)
        await runner.setup()
        site = web.TCPSite(runner, host, port, ssl_context=context)
        await site.start()
        holder["runner"] = runner
        holder["port"] = runner.addresses[0][1]
        started.set()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(begin())
        loop.run_forever()

    thread = threading.Thread(target=run, name="image-server", daemon=True)
    thread.start()
    if not started.wait(10):
        raise RuntimeError("the image server did not start within 10 s")

    def stop() -> None:
        runner = holder.pop("runner", None)
        if runner is None:  # stopped already
            return
        assert isinstance(runner, web.AppRunner)

        connections = holder["connections"]
        assert isinstance(connections, weakref.WeakSet)

        async def end() -> None:
            await runner.cleanup()  # downloads under way get `grace`, then are cancelled
            for transport in list(connections):
                transport.abort()
            await asyncio.sleep(0.05)  # the cut connections' sockets close in the loop's next turns

        asyncio.run_coroutine_threadsafe(end(), loop).result(2 * grace + 10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)

    bound = holder["port"]
    assert isinstance(bound, int)
    return Running(bound, stop)

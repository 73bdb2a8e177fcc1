"""The hub's image server: each BMC-delivered Site's configuration image over HTTPS, to the holder of its signed URL.

The controller grants an image when it inserts it into a Site's BMC (`Grants.grant`: the Site, the medium digest and
the image's bytes, built in memory by `hub.mediaimage`) and revokes the grant when it ejects it or the Site changes;
the server answers each request with `hub.imageurl.check`: 200 with the image, 403 for a URL the hub never made,
410 for one that is no longer good (expired, an older medium, nothing granted). Nothing is written to disk, so no
other Site's image can be read from a shared directory; grants live in the controller's memory (a restarted
controller grants again when it re-inserts). Each answer is logged with the Site and the verdict, never with the
signature or the image; downloads are counted per grant for the Site's status.

aiohttp, which kopf already brings, serves it: in the controller's own event loop (`start`), or in a thread of its
own (`serve_in_thread`, for tests and a stand-alone Deployment).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web

from snoreloc_fleet.hub import imageurl

LOG = logging.getLogger(__name__)


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

    def take(self, namespace: str, name: str, digest: str) -> bytes | None:
        """The granted image of that digest, counted as one download; None when nothing is granted for it."""
        with self._lock:
            found = self._by_site.get((namespace, name))
            if found is None or found.digest != digest:
                return None
            found.downloads += 1
            return found.image


Answered = Callable[[str, int], None]  # (the served Site's namespace, "" unless 200; the HTTP status) per answer


def _observe(application: web.Application, answered: Answered) -> None:
    """Call `answered` as each answer's headers go out (aiohttp's `on_response_prepare` signal), the handlers
    untouched: the namespace only of an image served (its URL was verified), never a refused URL's claim."""

    async def prepared(request: web.Request, response: web.StreamResponse) -> None:
        claimed = imageurl.parse(request.path_qs) if response.status == 200 else None
        answered(claimed[0].namespace if claimed else "", response.status)

    application.on_response_prepare.append(prepared)


def app(
    key: bytes, grants: Grants, now: Callable[[], float] = time.time, answered: Answered | None = None
) -> web.Application:
    async def image(request: web.Request) -> web.StreamResponse:
        claimed = imageurl.parse(request.path_qs)
        granted = grants.current(claimed[0].namespace, claimed[0].name) if claimed else None
        answer = imageurl.check(key, request.path_qs, now(), granted.digest if granted else None)
        LOG.info("image %s %s: %s", request.remote, int(answer.verdict), answer.reason)
        if answer.verdict is not imageurl.Verdict.OK or answer.grant is None:
            return web.Response(status=int(answer.verdict), text=f"{answer.verdict.name.lower()}\n")
        body = grants.take(answer.grant.namespace, answer.grant.name, answer.grant.digest)
        if body is None:  # revoked between the check and now
            return web.Response(status=int(imageurl.Verdict.GONE), text="gone\n")
        return web.Response(body=body, content_type="application/octet-stream")

    async def refused(request: web.Request) -> web.StreamResponse:
        LOG.info("image %s 403: not an image URL of this hub", request.remote)
        return web.Response(status=403, text="forbidden\n")

    application = web.Application()
    application.router.add_get(imageurl.PATH_PREFIX + "/{tail:.*}", image)
    application.router.add_route("*", "/{tail:.*}", refused)
    if answered is not None:
        _observe(application, answered)
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
    answered: Answered | None = None,
) -> Running:
    """Serve on `port` (0: an ephemeral one) in a thread of its own event loop; `stop()` ends it. `answered`: told
    of each answer (the controller's metrics)."""
    loop = asyncio.new_event_loop()
    started = threading.Event()
    holder: dict[str, object] = {}

    async def begin() -> None:
        runner = web.AppRunner(app(key, grants, answered=answered), access_log=None)
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
        runner = holder["runner"]
        assert isinstance(runner, web.AppRunner)
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)

    bound = holder["port"]
    assert isinstance(bound, int)
    return Running(bound, stop)

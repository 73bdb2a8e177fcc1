"""The BMC faults of issue 36 item 4 the emulator cannot provoke alone: vendor quirks that sushy's fallbacks answer
(Lenovo's PATCH with If-Match, a BMC that needs the transfer protocol named, HPE's eject with `{}`), through a quirk
proxy in front of sushy-tools' emulator (`bmcquirks`), at the `hub.redfish.Bmc` level and through the controller's
cycle; a quirk sushy does not answer, named for the owner; the hub's image server stopped in the middle of a
download and started again; a BMC that accepts the connection and never answers, given up within the bound."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import logging
import os
import pathlib
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
from snoreloc_fleet.hub import imageserver, imageurl, mediaimage, redfish
from snoreloc_fleet.resource import delivery, site

from snoreloc import logs
from snoreloc.adapters import kube
from snoreloc.siteconfig import medium
from snoreloc_sim.hub.simulator import HubSimulator

from .bmcemu import PASSWORD, SYSTEM, USERNAME, Emulator, _free_port, bmc, tls
from .bmcquirks import Proxy, Quirk, quirky
from .conftest import NS, SITES, Running, get_site, site_client, wait_for
from .test_bmc_cycle import _bmc_site, _conditions, _image_server, _record, _until_condition, _until_state
from .test_redfish_bmc import KEY, TREE, _site_bmc, served

__all__ = ["bmc", "served"]  # the fixtures, imported for pytest

DEVICE = f"{SYSTEM}/VirtualMedia/Cd"  # sushy-tools' fake driver's CD device


def _tls(tmp_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """The emulator's own TLS identity (bmcemu made it under tmp_path): the proxy presents it, as the BMC would."""
    return tmp_path / "bmc-tls/tls.crt", tmp_path / "bmc-tls/tls.key"


def _client(emulator: Emulator, timeout: float = redfish.TIMEOUT) -> redfish.Bmc:
    return redfish.Bmc(_site_bmc(emulator), redfish.Login(USERNAME, PASSWORD), str(emulator.ca_file), timeout)


def _granted(served: tuple[str, imageserver.Grants, pathlib.Path], tree: dict[str, bytes] = TREE) -> tuple[str, bytes]:
    """The tree's image granted to fleet/store-042, and its signed URL."""
    base, grants, _ = served
    digest, image = medium.digest(tree), mediaimage.build(tree)
    grants.grant("fleet", "store-042", digest, image)
    return imageurl.url(base, KEY, imageurl.Grant("fleet", "store-042", digest, int(time.time()) + 600)), image


def _held(emulator: Emulator) -> dict[str, bytes]:
    """The files of the image the BMC downloaded (the only one)."""
    (iso,) = emulator.downloaded()
    return mediaimage.files(iso.read_bytes())


def _base(emulator: Emulator) -> str:
    return emulator.address.removeprefix("redfish-virtualmedia+").removesuffix(SYSTEM)


def _steps(proxy: Proxy, method: str, suffix: str) -> list[tuple[Any, str | None, int]]:
    """What the proxy saw of `method` on paths ending with `suffix`: body, If-Match, the status it answered."""
    return [(s.body, s.if_match, s.status) for s in proxy.seen if s.method == method and s.path.endswith(suffix)]


def test_a_lenovo_like_bmc_is_patched_with_if_match_by_sushys_fallback(
    bmc: Emulator, served: tuple[str, imageserver.Grants, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    url, _ = _granted(served)
    with quirky(bmc, Quirk.LENOVO, *_tls(tmp_path)) as (lenovo, proxy):
        device = requests.get(_base(lenovo) + DEVICE, auth=(USERNAME, PASSWORD), verify=str(bmc.ca_file), timeout=10)
        assert "Actions" not in device.json() and device.headers["Allow"] == "GET, PATCH" and device.headers["ETag"]
        blind = requests.patch(_base(lenovo) + DEVICE, json={"Image": url, "Inserted": True},
                               auth=(USERNAME, PASSWORD), verify=str(bmc.ca_file), timeout=10)  # fmt: skip
        assert blind.status_code == 412, "the quirk as modelled: a PATCH without If-Match is refused"

        client = _client(lenovo)
        client.insert(url)
        assert client.media() == redfish.Media(True, url) and _held(bmc) == TREE
        assert served[1].downloads("fleet", "store-042") == 1
        ((body, if_match, status),) = [s for s in _steps(proxy, "PATCH", "/Cd") if s[2] != 412]
        assert body == {"Image": url, "Inserted": True, "WriteProtected": True} and if_match and status == 204
        assert not _steps(proxy, "POST", "InsertMedia"), "no action to post to: the PATCH was the way"

        client.eject()
        assert client.media().inserted is False
        assert _steps(proxy, "PATCH", "/Cd")[-1] == ({"Image": None, "Inserted": False}, '"2"', 204)


def test_a_bmc_that_needs_the_transfer_protocol_named_is_asked_again_with_https(
    bmc: Emulator, served: tuple[str, imageserver.Grants, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    url, _ = _granted(served)
    with quirky(bmc, Quirk.TRANSFER_PROTOCOL, *_tls(tmp_path)) as (picky, proxy):
        client = _client(picky)
        client.insert(url)
        assert client.media().inserted and _held(bmc) == TREE
        tried = [(body.get("TransferProtocolType"), status) for body, _, status in _steps(proxy, "POST", "InsertMedia")]
        assert tried == [(None, 400), ("HTTPS", 204)], "refused without the protocol, done with it"
        assert served[1].downloads("fleet", "store-042") == 1, "the refused request fetched nothing"


def test_an_hpe_like_bmc_ejects_when_posted_an_empty_object(
    bmc: Emulator, served: tuple[str, imageserver.Grants, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    url, _ = _granted(served)
    with quirky(bmc, Quirk.HPE_EJECT, *_tls(tmp_path)) as (hpe, proxy):
        client = _client(hpe)
        client.insert(url)
        assert client.media().inserted
        client.eject()
        assert client.media().inserted is False
        assert [(body, status) for body, _, status in _steps(proxy, "POST", "EjectMedia")] == [(None, 415), ({}, 204)]


def test_a_quirk_sushy_does_not_answer_is_refused_with_the_bmcs_message(
    bmc: Emulator, served: tuple[str, imageserver.Grants, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    url, _ = _granted(served)
    with quirky(bmc, Quirk.LENOVO_STRICT, *_tls(tmp_path)) as (strict, proxy):
        with pytest.raises(redfish.BmcError) as caught:
            _client(strict).insert(url)
        assert caught.value.problem is redfish.Problem.REFUSED
        assert "HTTP 412" in str(caught.value) and "ETag supplied did not match" in str(caught.value)
        assert [(bool(m), s) for _, m, s in _steps(proxy, "PATCH", "/Cd")] == [(True, 412)], "sent with If-Match"
    assert bmc.downloaded() == []


def _report_read(hub: HubSimulator, emulator: Emulator, name: str) -> None:
    """What the node does once it has read the medium: report, with the kubeconfig the medium carries, the digest."""
    (iso,) = emulator.downloaded()
    files = mediaimage.files(iso.read_bytes())
    node = site_client(hub, files[medium.HUB_FILE], f"{name}.kubeconfig")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    agent = {"runState": "running", "step": "network", "source": "node", "reportedAt": stamp,
             "siteConfigDigest": medium.digest({k: v for k, v in files.items() if k != medium.HUB_FILE})}  # fmt: skip
    try:
        node.request("PATCH", kube.Ref(SITES, name, NS).path("status"), body={"status": {site.STATUS_AGENT: agent}},
                     content_type=kube.MERGE_PATCH, retry=False)  # fmt: skip
    finally:
        node.close()


@pytest.mark.simonly
def test_a_lenovo_like_site_is_inserted_read_and_ejected_through_the_cycle(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    bmc: Emulator,
    tmp_path: pathlib.Path,
) -> None:
    start_controller(image_server=_image_server(tmp_path))
    with quirky(bmc, Quirk.LENOVO, *_tls(tmp_path)) as (lenovo, proxy):
        _bmc_site(admin, lenovo, tmp_path, "store-060", PASSWORD)
        _until_condition(admin, "store-060", "MediaInserted", ("True", "Inserted"))
        assert _record(admin, "store-060")["downloads"] == 1
        _report_read(hub, bmc, "store-060")
        final = _until_condition(admin, "store-060", "MediaEjected", ("True", "Ejected"))
        assert _conditions(final)["NodeReadMedium"] == ("True", "Reported")
        patched = [(body, status) for body, _, status in _steps(proxy, "PATCH", "/Cd")]
        assert patched[-1] == ({"Image": None, "Inserted": False}, 204) and len(patched) == 2, (
            "in by PATCH, out by PATCH"
        )
        assert _client(lenovo).media().inserted is False


@pytest.fixture
def controller_log() -> Iterator[io.StringIO]:
    """What the controller's log shows: every record through its handler (`fleet controller`'s `log_to`), which
    masks the secrets the process registered, other libraries' records too."""
    shown = io.StringIO()
    handler = logs.make_handler(shown)
    logging.getLogger().addHandler(handler)
    try:
        yield shown
    finally:
        logging.getLogger().removeHandler(handler)


@pytest.mark.simonly
def test_a_bmc_refusing_even_with_if_match_is_named_with_its_message_and_retried(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    bmc: Emulator,
    tmp_path: pathlib.Path,
    caplog: pytest.LogCaptureFixture,
    controller_log: io.StringIO,
) -> None:
    caplog.set_level(logging.INFO)
    start_controller(image_server=_image_server(tmp_path))
    with quirky(bmc, Quirk.LENOVO_STRICT, *_tls(tmp_path)) as (strict, proxy):
        _bmc_site(admin, strict, tmp_path, "store-061", PASSWORD)
        shown = _until_condition(admin, "store-061", "MediaInserted", ("False", "BMCRefused"))
        message = next(c["message"] for c in shown["status"]["conditions"] if c["type"] == "MediaInserted")
        assert "HTTP 412" in message and "ETag supplied did not match" in message, "the BMC's own words"
        retried = wait_for("a second attempt", lambda: (r := _record(admin, "store-061")).get("attempts", 0) >= 2 and r)
        assert retried["state"] == "Failed" and retried["retryAt"] and bmc.downloaded() == []
        urls = [body["Image"] for body, _, _ in _steps(proxy, "PATCH", "/Cd") if (body or {}).get("Image")]
        assert len(urls) >= 2, "retried, with back-off"
    signature = urllib.parse.parse_qs(urllib.parse.urlsplit(urls[0]).query)["signature"][0]
    events = admin.request("GET", f"/api/v1/namespaces/{NS}/events")
    warned = [(e["type"], e["reason"]) for e in events["items"] if e["involvedObject"]["name"] == "store-061"]
    assert warned == [("Warning", "BMCRefused")], "one Event, not one a retry"
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("snoreloc"))
    assert "Image https://" in caplog.text, "sushy's own warning quotes the BMC's answer, URL and all"
    for text in (json.dumps(get_site(admin, "store-061")), json.dumps(events), ours, controller_log.getvalue()):
        assert signature not in text and PASSWORD not in text


class Throttle:
    """A TCP relay between the BMC and the image server (TLS passes through untouched) that passes the server's bytes
    slowly, so the test can stop the server while a download is under way, or (`hold`) passes only the first `hold`
    bytes of each connection and ends it when the server does, so a small image is cut short too; `sent` counts what
    reached the BMC, `held` what the relay kept from it."""

    def __init__(self, upstream_port: int, rate: int = 16 * 1024, hold: int | None = None) -> None:
        self.upstream_port, self.rate, self.hold = upstream_port, rate, hold
        self.sent = self.held = 0
        self.fast = False
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with self.listener:
            while True:
                try:
                    client, _ = self.listener.accept()
                except OSError:
                    return
                upstream = socket.socket()
                upstream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rate)  # the server can run ahead little
                try:
                    upstream.connect(("127.0.0.1", self.upstream_port))
                except OSError:  # the server is down: so is the relay's connection
                    client.close()
                    upstream.close()
                    continue
                threading.Thread(target=self._pump, args=(client, upstream, False, None), daemon=True).start()
                threading.Thread(target=self._pump, args=(upstream, client, True, self.hold), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, slow: bool, hold: int | None) -> None:
        passed = 0
        try:
            while data := source.recv(self.rate):
                kept = data if hold is None else data[: max(0, hold - passed)]
                sink.sendall(kept)
                passed += len(kept)
                if slow:
                    self.sent, self.held = self.sent + len(kept), self.held + len(data) - len(kept)
                    if not self.fast:
                        time.sleep(0.005)
        except OSError:
            pass
        finally:
            for end in (source, sink):  # shutdown, not only close: it wakes the other pump and tells the peer
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
                end.close()

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def image_tls(tmp_path: pathlib.Path) -> Iterator[tuple[ssl.SSLContext, pathlib.Path]]:
    keys = tls(tmp_path / "hub-tls")
    yield keys.context(), tmp_path / "hub-tls/ca.crt"


def test_an_image_server_stopped_mid_download_counts_nothing_and_serves_the_whole_image_again_at_the_same_url(
    bmc: Emulator, image_tls: tuple[ssl.SSLContext, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    context, hub_ca = image_tls
    port = _free_port()
    tree = {**TREE, "bulk.bin": os.urandom(8 * 1024 * 1024)}  # big enough to be under way for seconds
    digest, image = medium.digest(tree), mediaimage.build(tree)
    grants = imageserver.Grants()
    grants.grant("fleet", "store-042", digest, image)
    running = imageserver.serve_in_thread(KEY, grants, context, port=port, grace=0.1)
    throttle = Throttle(port)
    grant = imageurl.Grant("fleet", "store-042", digest, int(time.time()) + 600)
    url = imageurl.url(f"https://127.0.0.1:{throttle.port}", KEY, grant)
    client = _client(bmc)
    outcome: list[BaseException | None] = []

    def insert() -> None:
        try:
            client.insert(url)
            outcome.append(None)
        except redfish.BmcError as exc:
            outcome.append(exc)

    try:
        inserting = threading.Thread(target=insert)
        inserting.start()
        wait_for("the download under way", lambda: throttle.sent > 512 * 1024, 20, 0.02)
        running.stop()  # the controller's image server goes away mid-download
        throttle.fast = True
        inserting.join(30)
        (failed,) = outcome
        assert isinstance(failed, redfish.BmcError), "the BMC could tell the image was cut short"
        assert grants.downloads("fleet", "store-042") == 0, "a cut download is not counted"
        assert client.media().inserted is False and bmc.downloaded() == [], "no partial ISO became the medium"
        leftovers = [p for p in bmc.downloads.rglob("*") if p.is_file()]
        assert all(p.stat().st_size < len(image) for p in leftovers), "what the BMC kept of it is short"

        again = imageserver.Grants()  # a restarted controller: the same key (its Secret), the grant made again
        again.grant("fleet", "store-042", digest, image)
        running = imageserver.serve_in_thread(KEY, again, context, port=port, grace=0.1)
        client.insert(url)  # the BMC fetches again at the same URL
        assert client.media() == redfish.Media(True, url) and _held(bmc) == tree, "the whole image"
        assert again.downloads("fleet", "store-042") == 1
        whole = requests.get(url, verify=str(hub_ca), timeout=30)
        assert whole.headers["Content-Length"] == str(len(image)) == str(len(whole.content)), "a short read shows"
        assert again.downloads("fleet", "store-042") == 2
    finally:
        throttle.close()
        running.stop()


def test_a_bmc_that_never_answers_is_unreachable_within_the_bound(tmp_path: pathlib.Path) -> None:
    """sushy is given `hub.redfish`'s timeout: a BMC that takes the connection (TLS and all) and then says nothing
    holds a BMC worker at most `longest_wait`, and is named unreachable."""
    keys = tls(tmp_path / "silent-tls")
    context = keys.context()
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        with listener:
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                try:
                    held.append(context.wrap_socket(conn, server_side=True))  # the handshake, then silence
                except (OSError, ssl.SSLError):
                    conn.close()

    threading.Thread(target=accept, daemon=True).start()
    ca = tmp_path / "silent-tls/ca.crt"
    silent = delivery.Bmc(f"https://127.0.0.1:{listener.getsockname()[1]}", SYSTEM, "x", True, None,
                          delivery.Power.ON)  # fmt: skip
    bound = redfish.longest_wait(1.0)
    caught: list[BaseException] = []

    def attempt() -> None:
        try:
            redfish.Bmc(silent, redfish.Login(USERNAME, PASSWORD), str(ca), timeout=1.0).media()
        except BaseException as exc:
            caught.append(exc)

    began = time.monotonic()
    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(bound + 10)
    took = time.monotonic() - began
    listener.close()
    for conn in held:
        conn.close()
    assert not thread.is_alive(), f"still waiting after {took:.1f} s (bound {bound:.1f} s)"
    (error,) = caught
    assert isinstance(error, redfish.BmcError) and error.problem is redfish.Problem.UNREACHABLE, repr(error)
    assert took <= bound + 5, (took, bound)
    print(f"\nsilent BMC: unreachable after {took:.1f} s (bound {bound:.1f} s at a 1 s timeout)")


@pytest.mark.simonly
def test_a_controller_restarted_mid_download_inserts_the_whole_image_again_and_the_site_ends_read_and_ejected(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    bmc: Emulator,
    tmp_path: pathlib.Path,
) -> None:
    """The controller (its image server with it) stops while the BMC is fetching the image: the BMC holds no medium
    from the cut transfer; the controller started again inserts the image again, the BMC gets the whole of it, and
    the Site ends read and ejected, its count saying one whole download."""
    port = _free_port()
    relay = Throttle(port, hold=32 * 1024)  # the first 32 KiB of each connection reach the BMC, then nothing
    served = dataclasses.replace(_image_server(tmp_path), port=port, base=f"https://127.0.0.1:{relay.port}")
    first = start_controller(image_server=served)
    try:
        _bmc_site(admin, bmc, tmp_path, "store-062", PASSWORD)
        wait_for("the BMC fetching the image", lambda: relay.held > 0, 60, 0.05)
        first.stop()  # mid-download: the server goes, the BMC's transfer ends short
        assert bmc.downloaded() == [] and _client(bmc).media().inserted is False, "no partial ISO became the medium"
        relay.hold = None  # what the BMC reaches now passes whole
        start_controller(image_server=served)
        record = _until_state(admin, "store-062", "Inserted")["status"][site.STATUS_DELIVERY]
        assert record["downloads"] == 1, "one whole download"
        assert medium.HUB_FILE in _held(bmc), "the whole image: the node reads it as it reads a stick"
        _report_read(hub, bmc, "store-062")
        final = _until_condition(admin, "store-062", "MediaEjected", ("True", "Ejected"))
        assert _conditions(final)["NodeReadMedium"] == ("True", "Reported")
        assert final["status"][site.STATUS_DELIVERY]["downloads"] == 1
        assert _client(bmc).media().inserted is False
    finally:
        relay.close()

"""The hub's BMC adapter (`hub.redfish`, sushy) against sushy-tools' Redfish emulator over HTTPS with basic auth, and
the hub's image server (`hub.imageserver`) it downloads from (issue 36 item 4's real parts): the emulator's
InsertMedia really fetches the signed URL, once; the image it holds is the site's, under the agent's label; eject
and the grant's revocation make the URL answer 410; a forged one 403; wrong credentials, an unreachable BMC and an
untrusted certificate are each named for the fleet owner, never with the password."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from snoreloc_fleet.hub import imageserver, imageurl, mediaimage, redfish
from snoreloc_fleet.resource import delivery

from snoreloc.siteconfig import discovery, medium

from .bmcemu import PASSWORD, USERNAME, Emulator, bmc, tls

__all__ = ["bmc"]  # the fixture, imported for pytest

KEY = bytes(range(32))
TREE = {medium.SITE_CONFIG_NAME: b"apiVersion: snoreloc.io/v1alpha1\nkind: SiteConfig\n", "pull-secret.json": b"{}"}


def _site_bmc(emulator: Emulator) -> delivery.Bmc:
    found, problems = delivery.read({"delivery": {"method": "bmc", "bmc": {
        "address": emulator.address, "credentialsName": "store-bmc"}}})  # fmt: skip
    assert problems == [] and found.bmc is not None
    return found.bmc


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, imageserver.Grants, Path]]:
    keys = tls(tmp_path / "hub-tls")
    grants = imageserver.Grants()
    running = imageserver.serve_in_thread(KEY, grants, keys.context())
    try:
        yield f"https://127.0.0.1:{running.port}", grants, tmp_path / "hub-tls/ca.crt"
    finally:
        running.stop()


def test_the_bmc_downloads_the_signed_image_once_and_the_url_dies_with_the_eject(
    bmc: Emulator, served: tuple[str, imageserver.Grants, Path]
) -> None:
    base, grants, hub_ca = served
    image = mediaimage.build(TREE)
    digest = medium.digest(TREE)
    grants.grant("fleet", "store-042", digest, image)
    url = imageurl.url(base, KEY, imageurl.Grant("fleet", "store-042", digest, int(time.time()) + 600))
    client = redfish.Bmc(_site_bmc(bmc), redfish.Login(USERNAME, PASSWORD), verify=str(bmc.ca_file))

    assert client.media() == redfish.Media(False, None)
    asked = requests.head(url, verify=str(hub_ca), timeout=10)  # some BMCs ask the size first
    assert asked.status_code == 200 and int(asked.headers["Content-Length"]) == len(image)
    assert grants.downloads("fleet", "store-042") == 0, "a HEAD is not a download"
    client.insert(url)
    assert client.media().inserted and grants.downloads("fleet", "store-042") == 1
    (fetched,) = bmc.downloaded()
    assert mediaimage.label(fetched.read_bytes()) == discovery.LABEL
    assert mediaimage.files(fetched.read_bytes()) == TREE, "the BMC holds the site's files as a stick would"

    client.eject()
    grants.revoke("fleet", "store-042")
    assert client.media().inserted is False
    replayed = requests.get(url, verify=str(hub_ca), timeout=10)
    assert replayed.status_code == 410
    expired = imageurl.url(base, KEY, imageurl.Grant("fleet", "store-042", digest, int(time.time()) - 1))
    grants.grant("fleet", "store-042", digest, image)
    assert requests.get(expired, verify=str(hub_ca), timeout=10).status_code == 410
    forged = url.replace("store-042", "store-043")
    assert requests.get(forged, verify=str(hub_ca), timeout=10).status_code == 403
    assert grants.downloads("fleet", "store-042") == 0, "a new grant counts from zero; refused requests never count"


def test_inserting_again_replaces_the_image(bmc: Emulator, served: tuple[str, imageserver.Grants, Path]) -> None:
    base, grants, _ = served
    client = redfish.Bmc(_site_bmc(bmc), redfish.Login(USERNAME, PASSWORD), verify=str(bmc.ca_file))
    for version in (b"1", b"2"):
        tree = {**TREE, "version": version}
        digest = medium.digest(tree)
        grants.grant("fleet", "store-042", digest, mediaimage.build(tree))
        client.insert(imageurl.url(base, KEY, imageurl.Grant("fleet", "store-042", digest, int(time.time()) + 60)))
    assert client.media().inserted
    newest = max(bmc.downloaded(), key=lambda p: p.stat().st_mtime)
    assert mediaimage.files(newest.read_bytes())["version"] == b"2"


def _powered_within(client: redfish.Bmc, seconds: float) -> bool:
    """Hardware takes its time (the emulator's fake system applies a power change 1-11 s later)."""
    deadline = time.monotonic() + seconds
    while not client.powered():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def test_power_on_then_restart(bmc: Emulator) -> None:
    client = redfish.Bmc(_site_bmc(bmc), redfish.Login(USERNAME, PASSWORD), verify=str(bmc.ca_file))
    assert client.powered() is False  # the fake system starts off
    client.power(delivery.Power.ON)
    assert _powered_within(client, 20)
    client.power(delivery.Power.ON)  # already on: nothing to do
    assert client.powered() is True
    client.power(delivery.Power.RESTART)
    assert _powered_within(client, 20)


def test_bmc_failures_are_named_for_the_owner_without_the_password(bmc: Emulator, tmp_path: Path) -> None:
    site = _site_bmc(bmc)
    cases = {
        redfish.Problem.CREDENTIALS: lambda: redfish.Bmc(site, redfish.Login(USERNAME, "wrong-" + PASSWORD),
                                                         verify=str(bmc.ca_file)).media(),
        redfish.Problem.CERTIFICATE: lambda: redfish.Bmc(site, redfish.Login(USERNAME, PASSWORD), verify=True).media(),
        redfish.Problem.UNREACHABLE: lambda: redfish.Bmc(
            delivery.Bmc("https://127.0.0.1:9", site.system_path, "x", True, None, delivery.Power.ON),
            redfish.Login(USERNAME, PASSWORD), verify=True).media(),
    }  # fmt: skip
    for problem, attempt in cases.items():
        with pytest.raises(redfish.BmcError) as caught:
            attempt()
        assert caught.value.problem is problem, (problem, str(caught.value))
        assert PASSWORD not in str(caught.value) and caught.value.advice


def test_a_bmc_that_streams_by_ranges_gets_each_part_and_one_download_at_the_last_byte(
    served: tuple[str, imageserver.Grants, Path],
) -> None:
    """BMCs that stream virtual media read the image by HTTP ranges (RFC 9110 section 14): each range is answered
    206 with its Content-Range, the read counts once, when the image's last byte goes out; a range past the end is
    416; no Range is the whole image, 200, as before."""
    base, grants, hub_ca = served
    image = mediaimage.build(TREE)
    digest = medium.digest(TREE)
    grants.grant("fleet", "store-042", digest, image)
    url = imageurl.url(base, KEY, imageurl.Grant("fleet", "store-042", digest, int(time.time()) + 600))

    def get(wanted: str | None) -> requests.Response:
        headers = {"Range": wanted} if wanted else {}
        return requests.get(url, headers=headers, verify=str(hub_ca), timeout=10)

    def counted(expected: int) -> bool:  # the server counts once write_eof returns, a moment after the client read
        deadline = time.monotonic() + 5
        while grants.downloads("fleet", "store-042") != expected and time.monotonic() < deadline:
            time.sleep(0.02)
        return grants.downloads("fleet", "store-042") == expected

    half = len(image) // 2
    first = get(f"bytes=0-{half - 1}")
    assert first.status_code == 206 and first.headers["Content-Range"] == f"bytes 0-{half - 1}/{len(image)}"
    assert first.headers["Accept-Ranges"] == "bytes"
    time.sleep(0.2)
    assert grants.downloads("fleet", "store-042") == 0, "a part without the last byte is not a read"
    rest = get(f"bytes={half}-")
    assert rest.status_code == 206 and rest.headers["Content-Range"] == f"bytes {half}-{len(image) - 1}/{len(image)}"
    assert first.content + rest.content == image
    assert counted(1), "one read: the part with the last byte"
    assert get("bytes=-16").content == image[-16:] and counted(2)
    beyond = get(f"bytes={len(image) + 10}-")
    assert beyond.status_code == 416 and beyond.headers["Content-Range"] == f"bytes */{len(image)}"
    whole = get(None)
    assert whole.status_code == 200 and whole.content == image and counted(3)

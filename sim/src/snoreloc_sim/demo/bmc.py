"""Servers delivered through their BMC (issue 36), for the fleet demo and the hub's zero-touch tests: sushy-tools'
Redfish emulator (the BMC metal3 and Ironic test with) as a server's BMC, and the server itself played.

`launched` runs the emulator with its fake system driver on 127.0.0.1 over HTTPS with basic auth: a System with
power and a virtual CD/DVD whose InsertMedia really downloads the image, under the emulator's TMPDIR
(`Emulator.downloaded`). `bmc_objects` is what a fleet owner writes for such a server: the login Secret, the BMC's
CA in a ConfigMap, and the Site's `spec.delivery` in the metal3 BareMetalHost shape. `play_the_server` is what the
server does once the hub has inserted its image and powered it on: it reads the medium (the ISO the emulator
downloaded), as the agent's discovery reads a stick, into the node's /etc/snoreloc.

Like the rest of `snoreloc_sim.demo`, this sits outside the product layers and may import the agent's face, the
fleet and the simulator. sushy-tools is a test extra (`fleet[test]`, the Makefile installs it): without it `launched`
raises `errors.UnavailableError` and the demo delivers its sites by stick.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bcrypt
from snoreloc_fleet.hub import mediaimage, redfish
from snoreloc_fleet.resource import delivery
from snoreloc_fleet.verbs import make_media as makemedia

from snoreloc.siblings import certs, clock, errors, fs, medium, safefile, waits

USERNAME, PASSWORD = "admin", "bmc-password-never-shown"
SYSTEM = "/redfish/v1/Systems/27946b59-9e44-4fa7-8e91-f3527a1ef094"  # sushy-tools' fake driver's DEFAULT_UUID
START_BUDGET = 30.0  # seconds for the emulator to answer on its port
_MEDIUM = safefile.Kind("ISO the emulated BMC downloaded", 64 * 1024 * 1024)


def emulator_binary() -> Path | None:
    """sushy-tools' `sushy-emulator` beside this Python (the venv's), else on PATH; None when not installed."""
    beside = Path(sys.executable).with_name("sushy-emulator")
    if beside.exists():
        return beside
    found = shutil.which("sushy-emulator")
    return Path(found) if found else None


@dataclass(frozen=True)
class Tls:
    ca: bytes
    cert: Path
    key: Path

    def context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, self.key)
        return context


def tls(where: Path) -> Tls:
    """A CA and a serving certificate for localhost and 127.0.0.1 in `where` (tls.crt, tls.key 0600, ca.crt)."""
    now = dt.datetime.now(dt.UTC)
    ca, ca_key = certs.issue_ca("demo BMC and hub CA", now=now)
    chain, key = certs.issue_serving(ca, ca_key, ["localhost", "127.0.0.1"], now=now)
    safefile.write(where / "tls.crt", chain, mode=0o644, make_parents=True, sync=False)
    safefile.write(where / "tls.key", key, mode=0o600, sync=False)
    safefile.write(where / "ca.crt", ca, mode=0o644, sync=False)
    return Tls(ca, where / "tls.crt", where / "tls.key")


@dataclass(frozen=True)
class Emulator:
    address: str  # redfish-virtualmedia+https://127.0.0.1:PORT/redfish/v1/Systems/ID
    ca_file: Path
    downloads: Path

    def downloaded(self) -> list[Path]:
        return sorted(p for p in self.downloads.rglob("*.iso") if p.is_file())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(port: int, ca_file: Path) -> bool:
    context = ssl.create_default_context(cafile=str(ca_file))
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/redfish/v1", timeout=2, context=context):
            return True
    except urllib.error.HTTPError:
        return True  # it answered (a 401: the root wants no login on a real BMC, some emulator versions do)
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def launched(where: Path, port: int | None = None) -> Iterator[Emulator]:
    """sushy-tools' emulator on `port` (None: a free one) until the block ends; its files under `where`, its TLS
    files made once (an emulator started again there is the same BMC). UnavailableError when it is not installed
    or does not answer within START_BUDGET seconds (its log is in `where`)."""
    binary = emulator_binary()
    if binary is None:
        raise errors.UnavailableError(
            "sushy-tools' Redfish emulator (sushy-emulator) is not installed", hint="pip install sushy-tools"
        )
    if not (where / "bmc-tls/ca.crt").exists():
        tls(where / "bmc-tls")
    cert, key, ca_file = where / "bmc-tls/tls.crt", where / "bmc-tls/tls.key", where / "bmc-tls/ca.crt"
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    safefile.write(where / "htpasswd", f"{USERNAME}:{hashed}\n", mode=0o600, sync=False)
    safefile.write(where / "emulator.conf", f"SUSHY_EMULATOR_AUTH_FILE = {str(where / 'htpasswd')!r}\n", sync=False)
    downloads = where / "bmc-downloads"
    downloads.mkdir(exist_ok=True)
    port = port or free_port()
    argv = [str(binary), "--fake", "-i", "127.0.0.1", "-p", str(port), "--config", str(where / "emulator.conf"),
            "--ssl-certificate", str(cert), "--ssl-key", str(key)]  # fmt: skip
    env = {**os.environ, "TMPDIR": str(downloads)}
    with (where / "emulator.log").open("ab") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + START_BUDGET
        while not _answers(port, ca_file):
            if process.poll() is not None or time.monotonic() > deadline:
                raise errors.UnavailableError(
                    f"sushy-emulator did not answer on 127.0.0.1:{port} within {START_BUDGET:g}s",
                    hint=f"its log: {where / 'emulator.log'}",
                )
            time.sleep(0.2)
        yield Emulator(f"redfish-virtualmedia+https://127.0.0.1:{port}{SYSTEM}", ca_file, downloads)
    finally:
        process.terminate()
        process.wait(10)


def bmc_objects(
    emulator: Emulator, namespace: str, name: str, password: str = PASSWORD
) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    """What a fleet owner writes for Site `name`'s server behind `emulator`: the login Secret and the BMC's CA
    ConfigMap (each as (kind, body)), and the Site's `spec.delivery` (powered on once the image is in)."""
    login = {key: base64.b64encode(value.encode()).decode() for key, value in (("username", USERNAME),
                                                                                ("password", password))}  # fmt: skip
    secret = {"metadata": {"name": f"{name}-bmc", "namespace": namespace}, "type": "Opaque", "data": login}
    ca = safefile.read_text(emulator.ca_file, safefile.SITE_FILE)
    config_map = {"metadata": {"name": f"{name}-bmc-ca", "namespace": namespace}, "data": {"ca.crt": ca}}
    chosen = {"method": "bmc", "bmc": {
        "address": emulator.address, "credentialsName": f"{name}-bmc",
        "caConfigMapKeyRef": {"name": f"{name}-bmc-ca", "key": "ca.crt"}, "power": "on"}}  # fmt: skip
    return [("Secret", secret), ("ConfigMap", config_map)], chosen


def client(emulator: Emulator) -> redfish.Bmc:
    """The fleet's own Redfish client (`hub.redfish`) on the emulator, logged in: what the server's state is."""
    found, _ = delivery.read(
        {"delivery": {"method": "bmc", "bmc": {"address": emulator.address, "credentialsName": "x"}}}
    )
    assert found.bmc is not None
    return redfish.Bmc(found.bmc, redfish.Login(USERNAME, PASSWORD), verify=str(emulator.ca_file))


def play_the_server(
    emulator: Emulator, root: fs.HostFS, budget: float = 60.0, *, hint: str = ""
) -> tuple[str, dict[str, bytes]]:
    """What the server does: once its virtual CD holds the image and it is powered on, it reads the medium (the ISO
    the emulator downloaded, labelled as the agent's discovery looks for) into /etc/snoreloc. The URL the BMC was
    given, and the files. WaitTimeout (with `hint`) when the hub has not inserted it within `budget` seconds."""
    bmc = client(emulator)

    def ready() -> bool | None:
        return True if bmc.media().inserted and bmc.powered() and emulator.downloaded() else None

    wait = waits.Wait("bmc-demo", "the hub to insert the image and power the server on", budget, 0.5, 15.0, hint)
    waits.until(ready, wait, clock.SystemClock())
    url = str(bmc.media().image)
    iso = max(emulator.downloaded(), key=lambda p: p.stat().st_mtime)
    image = safefile.read(iso, _MEDIUM)
    if mediaimage.label(image) != medium.ISO_LABEL:
        raise errors.ConfigError(f"{iso}: not a site-configuration medium (label {mediaimage.label(image)!r})")
    files = mediaimage.files(image)
    makemedia.write_dir(root.path("/etc/snoreloc"), files)
    return url, files

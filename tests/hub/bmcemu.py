"""sushy-tools' Redfish emulator (the BMC metal3 and Ironic test with) as a site's BMC, over HTTPS with basic auth,
and the hub's image server beside it: what the zero-touch tests drive. The emulator's fake system driver keeps a
System with power and a virtual CD/DVD whose InsertMedia really downloads the image; its downloads land under the
emulator's TMPDIR, where `downloaded()` finds them."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import bcrypt
import pytest
import requests

from snoreloc.pki import certs

USERNAME, PASSWORD = "admin", "bmc-password-never-shown"
SYSTEM = "/redfish/v1/Systems/27946b59-9e44-4fa7-8e91-f3527a1ef094"  # sushy-tools' fake driver's DEFAULT_UUID
EMULATOR = Path(sys.executable).with_name("sushy-emulator")


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
    now = dt.datetime.now(dt.UTC)
    ca, ca_key = certs.issue_ca("test BMC and hub CA", now=now)
    chain, key = certs.issue_serving(ca, ca_key, ["localhost", "127.0.0.1"], now=now)
    where.mkdir(parents=True, exist_ok=True)
    (where / "tls.crt").write_bytes(chain)
    (where / "tls.key").write_bytes(key)
    (where / "tls.key").chmod(0o600)
    (where / "ca.crt").write_bytes(ca)
    return Tls(ca, where / "tls.crt", where / "tls.key")


@dataclass(frozen=True)
class Emulator:
    address: str  # redfish-virtualmedia+https://127.0.0.1:PORT/redfish/v1/Systems/ID
    ca_file: Path
    downloads: Path

    def downloaded(self) -> list[Path]:
        return sorted(p for p in self.downloads.rglob("*.iso") if p.is_file())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def launched(tmp_path: Path, port: int | None = None) -> Iterator[Emulator]:
    """sushy-tools' emulator on `port` (None: a free one) until the block ends; its TLS files under `tmp_path`
    (made once: an emulator started again there is the same BMC)."""
    if not EMULATOR.exists():
        pytest.skip("sushy-tools is not installed (pip install sushy-tools)")
    if not (tmp_path / "bmc-tls/ca.crt").exists():
        tls(tmp_path / "bmc-tls")
    keys = Tls((tmp_path / "bmc-tls/ca.crt").read_bytes(), tmp_path / "bmc-tls/tls.crt", tmp_path / "bmc-tls/tls.key")
    auth = tmp_path / "htpasswd"
    auth.write_text(f"{USERNAME}:{bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()}\n")
    config = tmp_path / "emulator.conf"
    config.write_text(f"SUSHY_EMULATOR_AUTH_FILE = {str(auth)!r}\n")
    downloads = tmp_path / "bmc-downloads"
    downloads.mkdir(exist_ok=True)
    port = port or _free_port()
    argv = [str(EMULATOR), "--fake", "-i", "127.0.0.1", "-p", str(port), "--config", str(config),
            "--ssl-certificate", str(keys.cert), "--ssl-key", str(keys.key)]  # fmt: skip
    env = {**os.environ, "TMPDIR": str(downloads)}
    log = (tmp_path / "emulator.log").open("ab")
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(f"https://127.0.0.1:{port}/redfish/v1", verify=str(tmp_path / "bmc-tls/ca.crt"), timeout=2)
                break
            except requests.exceptions.ConnectionError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((tmp_path / "emulator.log").read_text()) from None
                time.sleep(0.2)
        yield Emulator(f"redfish-virtualmedia+https://127.0.0.1:{port}{SYSTEM}", tmp_path / "bmc-tls/ca.crt", downloads)
    finally:
        process.terminate()
        process.wait(10)
        log.close()


@pytest.fixture
def bmc(tmp_path: Path) -> Iterator[Emulator]:
    with launched(tmp_path) as emulator:
        yield emulator

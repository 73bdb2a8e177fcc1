"""TLS for the simulator's two listeners: its own CA, and certificates chosen per connection by SNI.

The agent proves a rollout finished by dialling `api.<domain>` and the console host and reading the certificate
they present, so each listener picks its certificate from `cluster.serving` at handshake time: the simulated
operators swap entries there when their rollouts complete, and the next handshake shows it. Clients that send no
matching name (an IP address in the kubeconfig) get the endpoint's default entry, and if there is none, the
simulator's own `localhost`/`127.0.0.1` certificate, which the kubeconfig's CA data trusts.
"""

from __future__ import annotations

import hashlib
import os
import ssl
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from snoreloc_sim.kube import certs, clientauth, model

LOCAL_NAMES = ("localhost", "127.0.0.1")


@dataclass(frozen=True)
class Authority:
    """The simulator's CA and the serving certificate it issued for the local names."""

    ca: certs.KeyPair
    local: certs.KeyPair

    @property
    def ca_pem(self) -> bytes:
        return self.ca.cert_pem

    def served(self) -> model.ServedCert:
        return model.ServedCert(self.local.cert_pem, self.local.key_pem)


def new_authority() -> Authority:
    ca = certs.make_ca("snoreloc-sim-ca")
    return Authority(ca, certs.issue(ca, LOCAL_NAMES))


class Contexts:
    """One server `SSLContext` per distinct certificate, built once: `load_cert_chain` wants files, so each pair
    is written (0600) to a private directory that goes away with `close()`."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="snoreloc-sim-tls-")
        self._lock = threading.Lock()
        self._by_digest: dict[str, ssl.SSLContext] = {}

    def for_cert(self, served: model.ServedCert) -> ssl.SSLContext:
        """The (cached) context presenting `served`."""
        digest = _digest(served)
        with self._lock:
            found = self._by_digest.get(digest)
            if found is None:
                found = self._by_digest[digest] = self.new_context(served)
            return found

    def new_context(self, served: model.ServedCert) -> ssl.SSLContext:
        """A fresh context presenting `served`: TLS 1.2+, HTTP/1.1 only (no h2, so Go clients speak HTTP/1.1)."""
        digest = _digest(served)
        cert_path, key_path = Path(self._dir.name, f"{digest}.crt"), Path(self._dir.name, f"{digest}.key")
        _write_private(cert_path, served.cert_pem)
        _write_private(key_path, served.key_pem)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["http/1.1"])
        context.load_cert_chain(cert_path, key_path)
        return context

    def close(self) -> None:
        self._dir.cleanup()


def _digest(served: model.ServedCert) -> str:
    return hashlib.sha256(served.cert_pem + b"\0" + served.key_pem).hexdigest()[:32]


def _write_private(path: Path, data: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


def server_context(
    serving: model.ServingCerts,
    endpoint: str,
    fallback: model.ServedCert,
    contexts: Contexts,
    *,
    client_certificates: bool = False,
) -> ssl.SSLContext:
    """The listening context of `endpoint` ("api" or "router"): each handshake switches to the certificate
    `serving` holds for the client's SNI name, or `fallback` when it holds none. `client_certificates` asks each
    client for a certificate, judged per request (`clientauth`)."""

    def choose(connection: ssl.SSLObject, server_name: str | None, _context: ssl.SSLContext) -> None:
        connection.context = contexts.for_cert(serving.lookup(endpoint, server_name) or fallback)

    listening = contexts.new_context(fallback)
    if client_certificates and not clientauth.available():  # "" when they can be requested
        clientauth.request_client_certificates(listening)
    listening.sni_callback = choose
    return listening

"""What every simulated API server shares: a start/stop lifecycle as a context manager, a private working directory,
and the admin kubeconfig written there (CA inline, bearer token, 0600; a client-certificate one beside it where the
server authenticates certificates).

The OpenShift simulator (`openshift.simulator`) and the plain hub (`hub.simulator`) are both `Served`, so tests,
the demo and `snoreloc sim serve` start and stop either the same way.
"""

from __future__ import annotations

import base64
import os
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import yaml

CONTEXT_NAME = "sim"


def kubeconfig(server_url: str, ca_pem: bytes, token: str) -> dict[str, Any]:
    """A kubeconfig with the CA inline and a bearer token, context `sim`."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CONTEXT_NAME,
                "cluster": {"server": server_url, "certificate-authority-data": base64.b64encode(ca_pem).decode()},
            }
        ],
        "users": [{"name": CONTEXT_NAME, "user": {"token": token}}],
        "contexts": [{"name": CONTEXT_NAME, "context": {"cluster": CONTEXT_NAME, "user": CONTEXT_NAME}}],
        "current-context": CONTEXT_NAME,
    }


def client_cert_kubeconfig(server_url: str, ca_pem: bytes, cert_pem: bytes, key_pem: bytes) -> dict[str, Any]:
    """A kubeconfig with the CA inline and a client certificate and key (inline), context `sim`."""
    config = kubeconfig(server_url, ca_pem, "")
    user = {"client-certificate-data": base64.b64encode(cert_pem).decode()}
    user["client-key-data"] = base64.b64encode(key_pem).decode()
    config["users"] = [{"name": CONTEXT_NAME, "user": user}]
    return config


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read (a kubeconfig holds a token)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o600)


class Served:
    """What every simulator shares: `start()`/`stop()` as a context manager, and a private working directory (a
    temporary one unless given) holding the admin kubeconfig. Subclasses start their parts in `start()` and stop
    them in `_halt()`."""

    def __init__(self, workdir: Path | str | None) -> None:
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        self._workdir = Path(workdir) if workdir is not None else None

    def start(self) -> Self:
        raise NotImplementedError

    def _halt(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        self._halt()
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def workdir(self) -> Path:
        if self._workdir is None:
            self._tempdir = tempfile.TemporaryDirectory(prefix="snoreloc-sim-")
            self._workdir = Path(self._tempdir.name)
        return self._workdir

    @property
    def kubeconfig_path(self) -> Path:
        return self.workdir / "kubeconfig"

    def publish_kubeconfig(self, server_url: str, ca_pem: bytes, token: str) -> None:
        """Write the admin kubeconfig (0600) into the working directory."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        write_private(self.kubeconfig_path, yaml.safe_dump(kubeconfig(server_url, ca_pem, token), sort_keys=False))

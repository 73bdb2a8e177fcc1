"""X.509 client-certificate authentication, as kube-apiserver does it: asked for at the handshake, judged per request.

kube-apiserver's listener asks every client for a certificate without verifying it in TLS (Go's
`tls.RequestClientCert`); its x509 request authenticator then verifies the certificate of each request against
the client CA bundle it holds at that moment (`--client-ca-file`, a `DynamicFileCAContent` that reloads on change).
So a client with no certificate still gets its bearer token looked at, and a certificate from an unknown or removed
CA is a 401 `Unauthorized` (an HTTP answer, not a TLS alert), from the first request after the bundle changed.

Python's `ssl` can only ask for a client certificate by verifying it (CERT_OPTIONAL against the context's store,
a failure aborting the handshake), so `request_client_certificates` gives the listening context an OpenSSL verify
callback that accepts the chain; the verdict is `Verifier.user`, per request, against the bundle its provider
returns then. Where the bundle comes from is the caller's business (the OpenShift simulator unions its own CA
with `openshift-config/admin-kubeconfig-client-ca`: `openshift.admin_access`).

Deliberate simplification: the client's certificate must be signed directly by a CA of the bundle (no
intermediates), as every admin client certificate OpenShift and `oc config new-admin-kubeconfig` mint is.
"""

from __future__ import annotations

import ctypes
import datetime
import hashlib
import logging
import ssl
import threading
from collections.abc import Callable

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

BundleProvider = Callable[[], bytes]  # the PEM CA bundle in force now

LOG = logging.getLogger(__name__)

_VERIFY_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)


def _accept(_preverify_ok: int, _store: int | None) -> int:
    return 1  # verified per request by `Verifier`, as Go's RequestClientCert leaves it to the authenticator


_accept_chain = _VERIFY_CALLBACK(_accept)  # module-level: OpenSSL calls it for as long as the process lives


def _libssl() -> ctypes.CDLL:
    """The libssl this process's `ssl` module is linked to (the one already mapped, not whichever is on the path)."""
    with open("/proc/self/maps", encoding="utf-8") as maps:
        for line in maps:
            path = line.split()[-1]
            if path.startswith("/") and "/libssl.so" in path:
                return ctypes.CDLL(path)
    raise RuntimeError("libssl is not loaded: client certificates cannot be requested")


_LOCK = threading.Lock()
_PROBED: list[str] = []  # the reason client certificates cannot be requested here ("" when they can)


def available() -> str:
    """ "" when this Python and OpenSSL let the listener request client certificates; else why not. Probed once on a
    throwaway context: a simulator where it fails serves bearer tokens only (warned), and the client-certificate
    tests skip saying why, instead of the simulator failing to start."""
    with _LOCK:
        if not _PROBED:
            try:
                _set_accepting(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER))
                _PROBED.append("")
            except (OSError, RuntimeError, AttributeError) as exc:
                LOG.warning("client certificates are not requested by this simulator: %s", exc)
                _PROBED.append(str(exc))
    return _PROBED[0]


def request_client_certificates(context: ssl.SSLContext) -> None:
    """Make `context` (a server context) ask for a client certificate and accept whatever chain comes, so the
    handshake succeeds and `Verifier` decides per request. Connections inherit this from the listening context
    even when an SNI callback switches the certificate context (OpenSSL keeps the verify mode and callback)."""
    with _LOCK:
        _set_accepting(context)


def _set_accepting(context: ssl.SSLContext) -> None:
    library = _libssl()
    library.SSL_CTX_get_verify_mode.argtypes = [ctypes.c_void_p]
    library.SSL_CTX_get_verify_mode.restype = ctypes.c_int
    library.SSL_CTX_set_verify.argtypes = [ctypes.c_void_p, ctypes.c_int, _VERIFY_CALLBACK]
    library.SSL_CTX_set_verify.restype = None
    # CPython's SSLContext object holds its SSL_CTX pointer right after the object header; prove it by two
    # distinct modes read back through OpenSSL before writing through it.
    pointer = ctypes.c_void_p.from_address(id(context) + object.__basicsize__).value
    context.verify_mode = ssl.CERT_REQUIRED
    required = library.SSL_CTX_get_verify_mode(pointer)
    context.verify_mode = ssl.CERT_OPTIONAL
    optional = library.SSL_CTX_get_verify_mode(pointer)
    if (required, optional) != (3, 1):  # SSL_VERIFY_PEER | FAIL_IF_NO_PEER_CERT, then SSL_VERIFY_PEER
        raise RuntimeError("cannot reach this Python's SSL_CTX: client certificates cannot be requested")
    library.SSL_CTX_set_verify(pointer, 1, _accept_chain)


class Verifier:
    """Judges a request's client certificate (DER) against the bundle `provider` returns at that moment."""

    def __init__(self, provider: BundleProvider) -> None:
        self._provider = provider
        self._lock = threading.Lock()
        self._parsed: tuple[str, list[x509.Certificate]] = ("", [])

    def _cas(self) -> list[x509.Certificate]:
        bundle = self._provider()
        digest = hashlib.sha256(bundle).hexdigest()
        with self._lock:
            if self._parsed[0] != digest:
                self._parsed = (digest, _load_bundle(bundle))
            return self._parsed[1]

    def user(self, der: bytes) -> str | None:
        """The user name (CN) the certificate authenticates, or None: no certificate, not parseable, outside its
        validity, not for client auth, or not signed by a CA of the current bundle."""
        if not der:
            return None
        try:
            cert = x509.load_der_x509_certificate(der)
        except ValueError:
            return None
        now = datetime.datetime.now(datetime.UTC)
        if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc or not _for_client_auth(cert):
            return None
        for ca in self._cas():
            if _signed_by(cert, ca):
                names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
                return str(names[0].value) if names else None
        return None


def _load_bundle(bundle: bytes) -> list[x509.Certificate]:
    if not bundle.strip():
        return []
    try:
        return list(x509.load_pem_x509_certificates(bundle))
    except ValueError:
        return []  # a bundle kube-apiserver cannot parse verifies nobody


def _for_client_auth(cert: x509.Certificate) -> bool:
    try:
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        return True
    return ExtendedKeyUsageOID.CLIENT_AUTH in usages or ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE in usages


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    now = datetime.datetime.now(datetime.UTC)
    return ca.not_valid_before_utc <= now <= ca.not_valid_after_utc

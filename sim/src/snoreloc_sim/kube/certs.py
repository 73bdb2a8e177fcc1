"""Key pairs for the simulated cluster: its own CA, the operators' signers, and the certificates they issue.

The simulator mints its own material (it does not borrow the agent's `pki`), so a bug in how snoreloc issues
certificates cannot be mirrored by the cluster that is supposed to catch it. EC P-256 keeps start-up fast.
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, both PEM (PKCS#8 for the key)."""

    cert_pem: bytes
    key_pem: bytes = field(repr=False)

    @property
    def cert(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)

    @property
    def key(self) -> ec.EllipticCurvePrivateKey:
        key = serialization.load_pem_private_key(self.key_pem, password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise TypeError("simulator keys are EC")
        return key


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _san(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def make_ca(common_name: str, *, days: int = 3650, start: datetime.datetime | None = None) -> KeyPair:
    """A self-signed CA, as OpenShift's signers are (e.g. `kube-apiserver-lb-signer`); `start` (default: an hour
    ago) is its notBefore, so a signer minted at an install long ago can be expired now."""
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    start = start or _now() - datetime.timedelta(hours=1)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(secrets.randbits(127))
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def issue(
    ca: KeyPair,
    names: Sequence[str],
    *,
    days: int = 365,
    client: bool = False,
    not_after: datetime.datetime | None = None,
    start: datetime.datetime | None = None,
) -> KeyPair:
    """A leaf certificate for `names` (DNS names or IPs) signed by `ca`; the first name is the CN.

    `not_after` in the past makes an expired certificate (the shelf-worn kubelet client cert of a seed); `start`
    (default: an hour ago) is its notBefore.
    """
    key = _new_key()
    start = start or _now() - datetime.timedelta(hours=1)
    end = not_after or start + datetime.timedelta(days=days)
    usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(secrets.randbits(127))
        .not_valid_before(min(start, end - datetime.timedelta(hours=1)))
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False)
    )
    if not client:
        builder = builder.add_extension(x509.SubjectAlternativeName([_san(n) for n in names]), critical=False)
    cert = builder.sign(ca.key, hashes.SHA256())
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM) + ca.cert_pem, _key_pem(key))


def is_valid_pair(cert_pem: bytes, key_pem: bytes) -> bool:
    """Whether the PEM certificate (first of a chain) and key parse and belong together, as a server loading
    them would check."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError):
        return False
    public = key.public_key()
    fmt = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return bool(cert.public_key().public_bytes(*fmt) == public.public_bytes(*fmt))


def first_cert_names(cert_pem: bytes) -> list[str]:
    """The DNS SANs of the first certificate in a PEM chain (what a server serves it for when names are empty)."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return list(sans.get_values_for_type(x509.DNSName))

"""Serving certificates: check the ones a site brings, issue the ones it does not.

A wrong certificate on the API or the router is the failure a technician cannot diagnose: kube-apiserver crash-loops
or every browser refuses the console. So a user-supplied pair is checked before anything is changed (parses, key
matches, names covered, dates valid, chain in order, key strong enough), and the problems come back as plain
sentences that never contain key material. Certificates snoreloc issues itself are signed by the cluster's own
signers, so clients that already trust the cluster keep working.

Issued keys default to EC P-256: generating one takes about a millisecond, where RSA 2048 takes 50-500 ms and its
time varies widely; `key="rsa-2048"` is there for clients that need RSA.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import itertools
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import exceptions, x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from snoreloc import redact

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
Certificate = x509.Certificate  # callers name the type through here: `cryptography` stays inside snoreloc.pki
MIN_RSA_BITS = 2048
_EC_CURVES = ("secp256r1", "secp384r1", "secp521r1")
_CN_MAX = 64
_SAN_LABEL = re.compile(r"[A-Za-z0-9_-]+")
_KEY_TYPES = ("ec-p256", "rsa-2048")


class CertError(ValueError):
    """A certificate or key could not be used. The message is safe to show: it never quotes the input."""


@dataclass(frozen=True)
class CertInfo:
    """What a person needs to know about one certificate."""

    subject_cn: str | None
    sans: tuple[str, ...]
    not_before: dt.datetime
    not_after: dt.datetime
    issuer: str
    is_ca: bool
    key_type: str
    key_bits: int
    serial: int


def parse_chain(pem: bytes) -> list[x509.Certificate]:
    """Every certificate in a PEM bundle, in order. Refuses bundles that also carry a private key."""
    if b"PRIVATE KEY-----" in pem:
        raise CertError("contains a private key; certificate files must hold only certificates")
    if b"-----BEGIN CERTIFICATE-----" not in pem:
        raise CertError("no PEM certificate found (expected -----BEGIN CERTIFICATE-----)")
    try:
        chain = x509.load_pem_x509_certificates(pem)
    except ValueError:
        raise CertError("a certificate in the PEM data cannot be parsed") from None
    for number, cert in enumerate(chain, start=1):
        _check_extensions(cert, number)
    return chain


def load_all(pem: bytes) -> list[x509.Certificate]:
    """Every certificate of a PEM bundle as it is, without `parse_chain`'s judgement (the fleet's cross-site facts
    of bundles the agent already judged); ValueError when one does not parse."""
    return x509.load_pem_x509_certificates(pem)


def fingerprint(cert: x509.Certificate) -> str:
    """The SHA-256 of the certificate's DER encoding, in hex: one certificate, whichever file carries it."""
    return hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest()


def _check_extensions(cert: x509.Certificate, number: int) -> None:
    """`cryptography` parses extensions on first use: a truncated one (a SAN cut short) raises ValueError there,
    deep inside a later check. Parse them here, so the file is refused as unparseable, with which certificate."""
    try:
        cert.extensions  # noqa: B018 (the access parses them)
    except ValueError:
        raise CertError(f"certificate {number} in the PEM data has an extension that cannot be parsed") from None


def load_key(pem: bytes) -> PrivateKey:
    """An unencrypted RSA or EC private key in PKCS#1, SEC1 or PKCS#8 PEM form."""
    redact.register_secret(pem)
    if b"ENCRYPTED" in pem:
        raise CertError("the private key is encrypted; supply it unencrypted (e.g. `openssl pkey -in KEY -out NEW`)")
    if b"PRIVATE KEY-----" not in pem:
        raise CertError("no PEM private key found (expected -----BEGIN ... PRIVATE KEY-----)")
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except TypeError:
        raise CertError("the private key is encrypted; supply it unencrypted") from None
    except (ValueError, exceptions.UnsupportedAlgorithm):
        raise CertError("the private key cannot be parsed (expected PKCS#1, SEC1 or PKCS#8 PEM)") from None
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
        raise CertError(f"unsupported key type {type(key).__name__}; use RSA or EC")
    return key


def not_after(pem: bytes) -> dt.datetime:
    """The end of validity (UTC) of one PEM certificate; ValueError when it does not parse."""
    return x509.load_pem_x509_certificate(pem).not_valid_after_utc


def sans(cert: x509.Certificate) -> tuple[str, ...]:
    """DNS names and IP addresses of the subjectAltName extension (empty when there is none)."""
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return ()
    names = ext.get_values_for_type(x509.DNSName)
    addresses = [str(ip) for ip in ext.get_values_for_type(x509.IPAddress)]
    return (*names, *addresses)


def _cn(cert: x509.Certificate) -> str | None:
    values = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(values[0].value) if values else None


def _is_ca(cert: x509.Certificate) -> bool:
    try:
        return cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        return False


def _key_kind(public: object) -> tuple[str, int]:
    if isinstance(public, rsa.RSAPublicKey):
        return "RSA", public.key_size
    if isinstance(public, ec.EllipticCurvePublicKey):
        return "EC", public.curve.key_size
    return type(public).__name__, 0


def info(cert: x509.Certificate) -> CertInfo:
    key_type, key_bits = _key_kind(cert.public_key())
    return CertInfo(
        subject_cn=_cn(cert),
        sans=sans(cert),
        not_before=cert.not_valid_before_utc,
        not_after=cert.not_valid_after_utc,
        issuer=cert.issuer.rfc4514_string(),
        is_ca=_is_ca(cert),
        key_type=key_type,
        key_bits=key_bits,
        serial=cert.serial_number,
    )


def covers(names: Sequence[str], name: str) -> bool:
    """Whether a certificate with SANs `names` serves `name`.

    A wildcard stands for exactly one leftmost label: `*.apps.x` covers `a.apps.x` (and the name `*.apps.x`
    itself), but not `apps.x` nor `a.b.apps.x`. Comparison ignores case and a trailing dot of `name`; a SAN that
    Go clients would not match (see `san_problem`) covers nothing.
    """
    wanted = name.lower().rstrip(".")
    for san in (s.lower() for s in names if san_problem(s) is None):
        if san == wanted:
            return True
        if san.startswith("*.") and "." in wanted:
            first, rest = wanted.split(".", 1)
            if first and first != "*" and rest == san[2:]:
                return True
    return False


def _describe(cert: x509.Certificate) -> str:
    cn = _cn(cert)
    return f"'{cn}'" if cn else f"serial {cert.serial_number:x}"


def _key_problems(cert: x509.Certificate) -> list[str]:
    public = cert.public_key()
    if isinstance(public, rsa.RSAPublicKey):
        if public.key_size < MIN_RSA_BITS:
            return [f"RSA key of {public.key_size} bits is too weak; use at least {MIN_RSA_BITS}"]
        return []
    if isinstance(public, ec.EllipticCurvePublicKey):
        if public.curve.name not in _EC_CURVES:
            return [f"EC curve {public.curve.name} is not supported; use P-256, P-384 or P-521"]
        return []
    return [f"{type(public).__name__} keys are not supported; use RSA or EC"]


def _date_problems(cert: x509.Certificate, now: dt.datetime, what: str) -> list[str]:
    if cert.not_valid_after_utc <= now:
        return [f"{what} expired on {cert.not_valid_after_utc:%Y-%m-%d %H:%M} UTC"]
    if cert.not_valid_before_utc > now:
        return [f"{what} is not valid before {cert.not_valid_before_utc:%Y-%m-%d %H:%M} UTC (check the clock)"]
    return []


def san_problem(san: str) -> str | None:
    """Why Go clients (`oc`, the kubelet, operators) would never match the DNS SAN `san`, or None.

    Go's crypto/x509 (golang/go src/crypto/x509/verify.go, `validHostname` with isPattern, used by
    `matchHostnames`) trims a trailing dot from the host it is asked for but not from the certificate's name,
    so `api.x.` never matches; nor do names with an empty label, a bare `*`, a `*` that is not a whole leftmost
    label, or characters outside letters, digits, `-` (not first in a label) and `_`. Upper case is fine: Go
    compares in lower case. IP address SANs are not DNS names and are not checked here.
    """
    if _is_ip(san):
        return None
    if san.endswith("."):
        return "ends with a dot, which Go clients never match; drop the trailing dot"
    labels = san.split(".")
    if "" in labels:
        return "has an empty label (two dots in a row, or a leading dot)"
    if san == "*":
        return "is a bare wildcard"
    for index, label in enumerate(labels):
        if index == 0 and label == "*":
            continue
        if label.startswith("-") or not _SAN_LABEL.fullmatch(label):
            return f"has the label '{label}', which is not letters, digits, '-' (not first) and '_'"
    return None


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _name_problems(cert: x509.Certificate, names: Sequence[str]) -> list[str]:
    found = sans(cert)
    if not found and names:
        return ["the certificate has no subjectAltName; clients ignore the common name, add the names as SANs"]
    bad = [f"the subjectAltName '{san}' {problem}" for san in found if (problem := san_problem(san))]
    if bad:
        return bad
    missing = [name for name in names if not covers(found, name)]
    if not missing:
        return []
    return [f"the certificate does not cover {', '.join(missing)} (its names: {', '.join(found)})"]


def _usage_problems(cert: x509.Certificate) -> list[str]:
    problems = []
    if _is_ca(cert):
        problems.append("the first certificate is a CA; put the serving (leaf) certificate first")
    try:
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        return problems
    if ExtendedKeyUsageOID.SERVER_AUTH not in usages:
        problems.append("the certificate's extended key usage does not allow TLS server authentication")
    return problems


def _signed_by(child: x509.Certificate, parent: x509.Certificate) -> bool:
    try:
        child.verify_directly_issued_by(parent)
    except (ValueError, TypeError, exceptions.InvalidSignature):
        return False
    return True


def _chain_problems(chain: Sequence[x509.Certificate], now: dt.datetime) -> list[str]:
    problems = []
    for position, (child, parent) in enumerate(itertools.pairwise(chain), start=1):
        if not _signed_by(child, parent):
            problems.append(
                f"certificate {position} ({_describe(child)}) is not signed by certificate {position + 1} "
                f"({_describe(parent)}); order the file leaf first, then each issuer"
            )
        problems += _date_problems(parent, now, f"chain certificate {position + 1} ({_describe(parent)})")
    return problems


def check_chain(cert_pem: bytes, names: Sequence[str], now: dt.datetime) -> list[str]:
    """Problems with a serving certificate chain for `names` at time `now` (empty when it is usable)."""
    try:
        chain = parse_chain(cert_pem)
    except CertError as exc:
        return [str(exc)]
    leaf = chain[0]
    return (
        _key_problems(leaf)
        + _date_problems(leaf, now, "the certificate")
        + _name_problems(leaf, names)
        + _usage_problems(leaf)
        + _chain_problems(chain, now)
    )


def _public_der(public: object) -> bytes:
    if not isinstance(public, rsa.RSAPublicKey | ec.EllipticCurvePublicKey):
        return b""
    return public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def key_matches(cert: x509.Certificate, key: PrivateKey) -> bool:
    return _public_der(cert.public_key()) == _public_der(key.public_key())


def check_key(cert_pem: bytes, key_pem: bytes) -> list[str]:
    """Problems with the private key of a serving certificate (empty when it loads and matches the leaf)."""
    try:
        key = load_key(key_pem)
    except CertError as exc:
        return [str(exc)]
    try:
        leaf = parse_chain(cert_pem)[0]
    except CertError:
        return []  # the certificate's own problem, reported by check_chain
    if not key_matches(leaf, key):
        return ["the private key does not match the certificate"]
    return []


def check_pair(cert_pem: bytes, key_pem: bytes, names: Sequence[str], now: dt.datetime) -> list[str]:
    """Every problem with a certificate chain and its key serving `names` at `now`; no secret in any message."""
    return check_chain(cert_pem, names, now) + check_key(cert_pem, key_pem)


def _new_key(kind: str) -> PrivateKey:
    if kind == "ec-p256":
        return ec.generate_private_key(ec.SECP256R1())
    if kind == "rsa-2048":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    raise ValueError(f"unknown key type {kind!r}; choose one of {', '.join(_KEY_TYPES)}")


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _authority_key_id(ca: x509.Certificate) -> x509.AuthorityKeyIdentifier:
    try:
        ski = ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    except x509.ExtensionNotFound:
        return x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.public_key())  # type: ignore[arg-type]
    return x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski)


def _subject(names: Sequence[str]) -> x509.Name:
    first = names[0]
    if len(first) > _CN_MAX:  # the CN is limited to 64 characters; the SANs carry the names anyway
        return x509.Name([])
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, first)])


_KEY_USAGE_BITS = (
    "digital_signature",
    "key_encipherment",
    "content_commitment",
    "data_encipherment",
    "key_agreement",
    "key_cert_sign",
    "crl_sign",
    "encipher_only",
    "decipher_only",
)


def _key_usage(**allowed: bool) -> x509.KeyUsage:
    """A KeyUsage extension with only the `allowed` bits set (the constructor wants all nine spelled out)."""
    return x509.KeyUsage(**{bit: allowed.get(bit, False) for bit in _KEY_USAGE_BITS})


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    public: rsa.RSAPublicKey | ec.EllipticCurvePublicKey,
    now: dt.datetime,
    not_after: dt.datetime,
) -> x509.CertificateBuilder:
    """What every certificate we make shares: names, key, a random serial, validity from an hour ago (clock skew)."""
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public)
        .serial_number(secrets.randbits(128) | 1)
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(not_after)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
    )


def _serving_builder(
    ca: x509.Certificate,
    public: rsa.RSAPublicKey | ec.EllipticCurvePublicKey,
    names: Sequence[str],
    days: int,
    now: dt.datetime,
) -> x509.CertificateBuilder:
    not_after = min(now + dt.timedelta(days=days), ca.not_valid_after_utc)  # never outlive the signer
    usage = _key_usage(digital_signature=True, key_encipherment=isinstance(public, rsa.RSAPublicKey))
    return (
        _builder(_subject(names), ca.subject, public, now, not_after)
        .add_extension(x509.SubjectAlternativeName([_general_name(n) for n in names]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(usage, critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(_authority_key_id(ca), critical=False)
    )


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def pem_bundle(chain: Sequence[x509.Certificate]) -> bytes:
    """Certificates as a clean PEM bundle (no comments or stray text)."""
    return b"".join(_pem(cert) for cert in chain)


def _ca_builder(
    common_name: str, public: rsa.RSAPublicKey | ec.EllipticCurvePublicKey, days: int, now: dt.datetime
) -> x509.CertificateBuilder:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    usage = _key_usage(digital_signature=True, key_cert_sign=True, crl_sign=True)
    return (
        _builder(name, name, public, now, now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(usage, critical=True)
    )


def issue_ca(common_name: str, *, days: int = 3650, key: str = "ec-p256", now: dt.datetime) -> tuple[bytes, bytes]:
    """A self-signed signing CA: (certificate PEM, PKCS#8 key PEM). For sites and tests that need their own signer."""
    new_key = _new_key(key)
    cert = _ca_builder(common_name, new_key.public_key(), days, now).sign(new_key, hashes.SHA256())
    return _pem(cert), _private_pem(new_key)


def _private_pem(key: PrivateKey) -> bytes:
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    redact.register_secret(pem)
    return pem


def issue_serving(
    ca_cert_pem: bytes,
    ca_key_pem: bytes,
    names: Sequence[str],
    *,
    days: int = 730,
    key: str = "ec-p256",
    now: dt.datetime,
) -> tuple[bytes, bytes]:
    """A serving certificate for `names` signed by the CA: (leaf + CA chain PEM, PKCS#8 key PEM).

    SANs are `names` (the CN is the first of them), EKU serverAuth, a random 128-bit serial, valid from an hour
    before `now` (clock skew) for `days`, but never past the CA's own expiry.
    """
    if not names:
        raise ValueError("issue_serving needs at least one name")
    ca_chain = parse_chain(ca_cert_pem)
    ca_key = load_key(ca_key_pem)
    new_key = _new_key(key)
    cert = _serving_builder(ca_chain[0], new_key.public_key(), names, days, now).sign(ca_key, hashes.SHA256())
    return _pem(cert) + pem_bundle(ca_chain), _private_pem(new_key)


def issue_client(
    ca_cert_pem: bytes,
    ca_key_pem: bytes,
    common_name: str,
    organizations: Sequence[str] = (),
    *,
    days: int = 3650,
    key: str = "ec-p256",
    now: dt.datetime,
) -> tuple[bytes, bytes]:
    """A client certificate signed by the CA: (leaf PEM, PKCS#8 key PEM). The kube-apiserver takes the user from the
    CN and the groups from O (kubernetes.io/docs/reference/access-authn-authz/authentication/#x509-client-certificates),
    so `oc config new-admin-kubeconfig`'s admin is CN `system:admin`, O `system:masters`. EKU clientAuth only, valid
    from an hour before `now` for `days`, never past the CA's own expiry."""
    ca = parse_chain(ca_cert_pem)[0]
    ca_key = load_key(ca_key_pem)
    new_key = _new_key(key)
    public = new_key.public_key()
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    subject = x509.Name([*attributes, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    not_after = min(now + dt.timedelta(days=days), ca.not_valid_after_utc)
    usage = _key_usage(digital_signature=True, key_encipherment=isinstance(public, rsa.RSAPublicKey))
    cert = (
        _builder(subject, ca.subject, public, now, not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(usage, critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(_authority_key_id(ca), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return _pem(cert), _private_pem(new_key)

"""pki.certs: issuing serving certificates and checking user-supplied ones, with generated key material only."""

from __future__ import annotations

import datetime as dt

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from snoreloc import redact
from snoreloc.pki import certs

NOW = dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.UTC)
API = "api.sno1.site.example.com"
APPS = "*.apps.sno1.site.example.com"


@pytest.fixture(scope="module")
def ca() -> tuple[bytes, bytes]:
    return certs.issue_ca("test-signer", days=3650, now=NOW - dt.timedelta(days=30))


def _body(pem: bytes) -> str:
    """The base64 body of a PEM block: what must never show up in a message."""
    return "".join(pem.decode().strip().splitlines()[1:-1])


def _build(
    key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey,
    names: list[str],
    signer: tuple[x509.Certificate, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey] | None = None,
    *,
    start: dt.datetime = NOW - dt.timedelta(days=1),
    days: int = 30,
    is_ca: bool = False,
    eku: x509.ObjectIdentifier = ExtendedKeyUsageOID.SERVER_AUTH,
) -> x509.Certificate:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0] if names else "no-sans")])
    issuer_cert, issuer_key = signer if signer else (None, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_cert.subject if issuer_cert else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([eku]), critical=False)
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(*chain: x509.Certificate) -> bytes:
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)


def _key_pem(
    key: object, fmt: serialization.PrivateFormat = serialization.PrivateFormat.PKCS8, password: bytes = b""
) -> bytes:
    encryption = serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
    return key.private_bytes(serialization.Encoding.PEM, fmt, encryption)  # type: ignore[attr-defined]


class TestIssueServing:
    def test_ec_leaf_has_the_promised_shape(self, ca: tuple[bytes, bytes]) -> None:
        chain_pem, key_pem = certs.issue_serving(*ca, [API, "api-int.sno1.site.example.com"], now=NOW)
        chain = certs.parse_chain(chain_pem)
        leaf, signer = chain
        assert leaf.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == API
        assert certs.sans(leaf) == (API, "api-int.sno1.site.example.com")
        assert leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == x509.ExtendedKeyUsage(
            [ExtendedKeyUsageOID.SERVER_AUTH]
        )
        usage = leaf.extensions.get_extension_for_class(x509.KeyUsage).value
        assert usage.digital_signature and not usage.key_encipherment
        assert leaf.not_valid_before_utc == NOW - dt.timedelta(hours=1)
        assert leaf.not_valid_after_utc == NOW + dt.timedelta(days=730)
        assert 0 < leaf.serial_number < 2**128
        aki = leaf.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
        ski = signer.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        assert aki.key_identifier == ski.digest
        leaf.verify_directly_issued_by(signer)
        assert key_pem.startswith(b"-----BEGIN PRIVATE KEY-----")  # PKCS#8
        assert certs.check_pair(chain_pem, key_pem, [API], NOW) == []
        assert certs.info(leaf).key_type == "EC" and certs.info(leaf).key_bits == 256

    def test_rsa_leaf_allows_key_encipherment(self, ca: tuple[bytes, bytes]) -> None:
        chain_pem, key_pem = certs.issue_serving(*ca, [APPS], key="rsa-2048", now=NOW)
        leaf = certs.parse_chain(chain_pem)[0]
        assert leaf.extensions.get_extension_for_class(x509.KeyUsage).value.key_encipherment
        assert certs.info(leaf).key_bits == 2048
        assert certs.check_pair(chain_pem, key_pem, ["console.apps.sno1.site.example.com", APPS], NOW) == []

    def test_serials_are_random_and_issued_keys_are_registered_secrets(self, ca: tuple[bytes, bytes]) -> None:
        first, key_pem = certs.issue_serving(*ca, [API], now=NOW)
        second, _ = certs.issue_serving(*ca, [API], now=NOW)
        assert certs.parse_chain(first)[0].serial_number != certs.parse_chain(second)[0].serial_number
        assert _body(key_pem) not in redact.redact(key_pem.decode())

    def test_never_outlives_the_signer(self) -> None:
        short_ca = certs.issue_ca("short", days=10, now=NOW)
        leaf = certs.parse_chain(certs.issue_serving(*short_ca, [API], days=730, now=NOW)[0])[0]
        assert leaf.not_valid_after_utc == NOW + dt.timedelta(days=10)

    def test_long_first_name_leaves_the_cn_empty(self, ca: tuple[bytes, bytes]) -> None:
        long_name = "a" * 60 + ".example.com"
        leaf = certs.parse_chain(certs.issue_serving(*ca, [long_name], now=NOW)[0])[0]
        assert certs.info(leaf).subject_cn is None and certs.sans(leaf) == (long_name,)

    def test_ip_names_become_ip_sans(self, ca: tuple[bytes, bytes]) -> None:
        leaf = certs.parse_chain(certs.issue_serving(*ca, ["10.0.0.5"], now=NOW)[0])[0]
        ext = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert [str(ip) for ip in ext.get_values_for_type(x509.IPAddress)] == ["10.0.0.5"]

    def test_unknown_key_type_is_refused(self, ca: tuple[bytes, bytes]) -> None:
        with pytest.raises(ValueError, match="unknown key type"):
            certs.issue_serving(*ca, [API], key="dsa", now=NOW)


@pytest.mark.parametrize(
    ("sans", "name", "expected"),
    [
        ([APPS], "console-openshift-console.apps.sno1.site.example.com", True),
        ([APPS], APPS, True),
        ([APPS], "apps.sno1.site.example.com", False),
        ([APPS], "a.b.apps.sno1.site.example.com", False),
        ([API], API, True),
        (["API.SNO1.site.example.com"], API, True),  # case is ignored
        (["api.sno1.site.example.com."], API, False),  # Go never matches a SAN with a trailing dot
        ([API], "api-int.sno1.site.example.com", False),
        (["*.example.com"], "example.com", False),
        (["console.apps.sno1.site.example.com"], APPS, False),
        ([], API, False),
    ],
)
def test_covers_follows_the_single_label_wildcard_rule(sans: list[str], name: str, expected: bool) -> None:
    assert certs.covers(sans, name) is expected


@pytest.fixture(scope="module")
def signer() -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    return _build(key, ["intermediate"], is_ca=True, start=NOW - dt.timedelta(days=10), days=400), key


class TestCheckPair:
    def test_expired_and_not_yet_valid(self) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        old = _build(key, [API], start=NOW - dt.timedelta(days=100), days=30)
        future = _build(key, [API], start=NOW + dt.timedelta(days=2), days=30)
        assert any("expired on" in p for p in certs.check_pair(_pem(old), _key_pem(key), [API], NOW))
        assert any("not valid before" in p for p in certs.check_pair(_pem(future), _key_pem(key), [API], NOW))

    def test_names_not_covered_are_listed(self) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        problems = certs.check_pair(_pem(_build(key, ["other.example.com"])), _key_pem(key), [API], NOW)
        assert problems == [f"the certificate does not cover {API} (its names: other.example.com)"]

    def test_no_san_at_all(self) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        problems = certs.check_pair(_pem(_build(key, [])), _key_pem(key), [API], NOW)
        assert any("no subjectAltName" in p for p in problems)

    def test_mismatched_key(self) -> None:
        key, other = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
        problems = certs.check_pair(_pem(_build(key, [API])), _key_pem(other), [API], NOW)
        assert problems == ["the private key does not match the certificate"]

    def test_chain_in_the_wrong_order(self, signer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey]) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        leaf = _build(key, [API], signer)
        assert certs.check_pair(_pem(leaf, signer[0]), _key_pem(key), [API], NOW) == []
        problems = certs.check_pair(_pem(signer[0], leaf), _key_pem(key), [API], NOW)
        assert any("put the serving (leaf) certificate first" in p for p in problems)
        assert any("is not signed by certificate 2" in p for p in problems)

    def test_weak_rsa_is_refused_and_pkcs1_is_accepted(self) -> None:
        weak = rsa.generate_private_key(public_exponent=65537, key_size=1024)
        pkcs1 = _key_pem(weak, serialization.PrivateFormat.TraditionalOpenSSL)
        assert pkcs1.startswith(b"-----BEGIN RSA PRIVATE KEY-----")
        problems = certs.check_pair(_pem(_build(weak, [API])), pkcs1, [API], NOW)
        assert problems == ["RSA key of 1024 bits is too weak; use at least 2048"]

    def test_sec1_ec_key_is_accepted(self) -> None:
        key = ec.generate_private_key(ec.SECP384R1())
        sec1 = _key_pem(key, serialization.PrivateFormat.TraditionalOpenSSL)
        assert sec1.startswith(b"-----BEGIN EC PRIVATE KEY-----")
        assert certs.check_pair(_pem(_build(key, [API])), sec1, [API], NOW) == []

    def test_client_only_usage_is_refused(self) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _build(key, [API], eku=ExtendedKeyUsageOID.CLIENT_AUTH)
        assert certs.check_pair(_pem(cert), _key_pem(key), [API], NOW) == [
            "the certificate's extended key usage does not allow TLS server authentication"
        ]

    @pytest.mark.parametrize("fmt", [serialization.PrivateFormat.PKCS8, serialization.PrivateFormat.TraditionalOpenSSL])
    def test_encrypted_keys_are_refused_with_a_clear_message(self, fmt: serialization.PrivateFormat) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        encrypted = _key_pem(key, fmt, password=b"s3cret-pass")
        problems = certs.check_pair(_pem(_build(key, [API])), encrypted, [API], NOW)
        assert len(problems) == 1 and "encrypted" in problems[0]

    def test_unsupported_and_garbage_keys(self) -> None:
        ed = ed25519.Ed25519PrivateKey.generate()
        with pytest.raises(certs.CertError, match="unsupported key type"):
            certs.load_key(_key_pem(ed))
        with pytest.raises(certs.CertError, match="cannot be parsed"):
            certs.load_key(b"-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n")
        with pytest.raises(certs.CertError, match="no PEM private key"):
            certs.load_key(b"hello")

    def test_messages_never_contain_key_material(self) -> None:
        key, other = (
            rsa.generate_private_key(public_exponent=65537, key_size=2048),
            ec.generate_private_key(ec.SECP256R1()),
        )
        key_pem = _key_pem(other)
        problems = certs.check_pair(
            _pem(_build(key, ["x.example.com"], days=1, start=NOW - dt.timedelta(days=5))), key_pem, [API], NOW
        )
        assert len(problems) >= 3
        body = _body(key_pem)
        assert all(body[:40] not in p and "PRIVATE" not in p for p in problems)


class TestParseChain:
    def test_a_bundle_with_a_private_key_is_refused(self) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        with pytest.raises(certs.CertError, match="contains a private key"):
            certs.parse_chain(_pem(_build(key, [API])) + _key_pem(key))

    def test_no_certificate(self) -> None:
        with pytest.raises(certs.CertError, match="no PEM certificate"):
            certs.parse_chain(b"just text")
        with pytest.raises(certs.CertError, match="cannot be parsed"):
            certs.parse_chain(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")

    def test_text_around_the_blocks_is_ignored_and_pem_bundle_cleans_it(self) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        pem = _pem(_build(key, [API]))
        chain = certs.parse_chain(b"# a comment\n" + pem + b"trailing words\n")
        assert len(chain) == 1 and certs.pem_bundle(chain) == pem

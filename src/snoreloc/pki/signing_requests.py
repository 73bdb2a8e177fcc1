"""What a certificate signing request asks for, read with `cryptography` (the one package that parses them here).

The csr step judges a kubelet's request by its subject and its alternative names; it needs those facts, not the
library's objects, so `cryptography` stays inside `snoreloc.pki`.
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptography import x509
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Request:
    """The subject and alternative names of one CSR. `has_sans`: the request carries the extension at all."""

    common_names: tuple[str, ...]
    organizations: tuple[str, ...]
    has_sans: bool = False
    dns_names: frozenset[str] = frozenset()
    ips: frozenset[str] = frozenset()
    other_sans: bool = False  # e-mail addresses or URIs, which no kubelet asks for


def _values(name: x509.Name, oid: x509.ObjectIdentifier) -> tuple[str, ...]:
    return tuple(str(attribute.value) for attribute in name.get_attributes_for_oid(oid))


def parse(pem: bytes) -> Request:
    """The facts of a PEM CSR; ValueError when it does not parse."""
    req = x509.load_pem_x509_csr(pem)
    subject = (_values(req.subject, NameOID.COMMON_NAME), _values(req.subject, NameOID.ORGANIZATION_NAME))
    try:
        sans = req.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return Request(*subject)
    return Request(
        *subject,
        has_sans=True,
        dns_names=frozenset(sans.get_values_for_type(x509.DNSName)),
        ips=frozenset(str(ip) for ip in sans.get_values_for_type(x509.IPAddress)),
        other_sans=bool(sans.get_values_for_type(x509.RFC822Name))
        or bool(sans.get_values_for_type(x509.UniformResourceIdentifier)),
    )

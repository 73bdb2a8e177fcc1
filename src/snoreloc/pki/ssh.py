"""OpenSSH public keys, read with `cryptography` (the one package that parses keys here).

The ssh-keys setting judges each `authorized_keys` line before anything is written; it needs to know whether the
key decodes and, for RSA, its size, not the library's objects, so `cryptography` stays inside `snoreloc.pki`.
"""

from __future__ import annotations

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


def rsa_bits(kind: str, blob: str) -> int | None:
    """The modulus size of an RSA key, None for a key of another type; ValueError when the line's key part does
    not decode to a public key of type `kind`."""
    try:
        key = serialization.load_ssh_public_key(f"{kind} {blob}".encode())
    except UnsupportedAlgorithm as exc:
        raise ValueError(str(exc)) from None
    return key.key_size if isinstance(key, rsa.RSAPublicKey) else None

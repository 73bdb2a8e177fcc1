"""Values as the programs that receive them take them: OpenSSH's keys, the marketplace's catalog names, CIDRs.

A value the schema's shape allows can still be one the receiving program refuses or overrides, and the site finds
out only after the change (a technician locked out of `core`, a catalog the marketplace operator deletes). Each rule
here names the program and where its limit is written, so the next reader can check it.
"""

from __future__ import annotations

import ipaddress

from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes

# OpenSSH refuses RSA keys with a modulus shorter than this, for authentication as for generation:
# openssh/openssh-portable sshkey.h `#define SSH_RSA_MINIMUM_MODULUS_SIZE 1024` (checked by sshkey_check_rsa_length
# in sshkey.c; sshd's RequiredRSASize, OpenSSH 9.1 and later, defaults to it).
SSH_RSA_MINIMUM_MODULUS_SIZE = 1024
# The CatalogSources the marketplace operator owns in openshift-marketplace (operator-framework/operator-marketplace
# defaults/01..04): it recreates one that is changed or deleted, and removes them all when OperatorHub disables the
# default sources, so a site catalog of one of these names is overwritten or deleted.
DEFAULT_CATALOG_SOURCES = frozenset(
    {"redhat-operators", "certified-operators", "community-operators", "redhat-marketplace"}
)


def ssh_key_size_problem(key: PublicKeyTypes) -> str | None:
    """Why OpenSSH would refuse this public key for its size, or None."""
    if isinstance(key, rsa.RSAPublicKey) and key.key_size < SSH_RSA_MINIMUM_MODULUS_SIZE:
        return (
            f"is a {key.key_size}-bit RSA key; OpenSSH refuses RSA keys under {SSH_RSA_MINIMUM_MODULUS_SIZE} bits, "
            "so it could never log in (use ssh-ed25519, or RSA of 3072 bits)"
        )
    return None


def catalog_name_problem(name: str) -> str | None:
    """Why a site CatalogSource may not take `name`, or None."""
    if name in DEFAULT_CATALOG_SOURCES:
        return (
            f"{name} is a default source's name: the marketplace operator owns it and would overwrite or delete "
            f"this catalog; use another name (for example site-{name})"
        )
    return None


def cidr_problem(text: str) -> tuple[str, bool] | None:
    """What is wrong with a CIDR `text` (an address with `/prefix`), and whether it is an error (else a warning)."""
    address, _, prefix = text.partition("/")
    try:
        version = ipaddress.ip_address(address).version
    except ValueError:
        return None  # not an address: another rule (a domain) judges it
    bits = 32 if version == 4 else 128
    if not prefix.isdigit() or int(prefix) > bits:
        return f"the prefix /{prefix} is out of range: IPv{version} prefixes are 0-{bits}", True
    network = ipaddress.ip_network(text, strict=False)
    if str(network) != text and network.network_address != ipaddress.ip_address(address):
        return f"has host bits set; it is read as {network}", False
    return None

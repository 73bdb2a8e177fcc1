"""Each site's own admin keys, made on the hub: the factory's admin signer stops being the fleet's master key.

Issue 32 item 3. A Site that asks for it (`spec.adminAccess.generate: true`) gets, from the controller:

- a self-signed admin client CA of its own and an admin client certificate signed by it (CN `system:admin`, O
  `system:masters`, as `oc config new-admin-kubeconfig` makes them: openshift/oc
  `pkg/cli/config/adminkubeconfig/new_admin_kubeconfig.go`), kept in the Secret `NAME-admin` of the Site's
  namespace, owned by the Site and labelled `cluster.open-cluster-management.io/backup: "true"`, the label ACM's
  cluster-backup operator selects Secrets by (and the one the image-based install operator puts on the per-cluster
  admin kubeconfig and password Secrets it keeps on the hub: openshift/image-based-install-operator
  `internal/credentials/credentials.go`; notes in the research's frontier §2);
- when the Site asks (`spec.adminAccess.kubeadmin: true`), a new kubeadmin password in the same Secret, with its
  bcrypt hash (cost 10, `bcrypt.DefaultCost`, as the installer hashes the kubeadmin password it makes:
  openshift/installer `pkg/asset/password/password.go`; the password in its 4x5-character form);
- in the site's medium, only the CA's certificate (`spec.siteConfig.adminAccess.clientCA` as inline PEM, the shape
  of the agent's `adminAccess` setting) and the password's hash (`kubeadmin: {passwordHash: ...}`; without a
  password asked for, `kubeadmin: remove`). The agent appends the CA to `openshift-config/admin-kubeconfig-client-ca`
  and removes the factory's signer; no key and no password travels.

Made once: a reconcile that finds the Secret reads it and writes nothing. A new CA and certificate are made only
when asked: `spec.adminAccess.rotation` raised above the value the Secret records (or the Secret deleted). Work per
reconcile is one GET, and at most one EC P-256 CA and one client certificate (about a millisecond each). The keys
leave this Secret only through `snoreloc fleet admin-kubeconfig`; status says "generated" and the CA's
fingerprint, never a key, and nothing here logs them.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import bcrypt

from snoreloc.siblings import certs, kube, redact
from snoreloc_fleet.resource import site

BACKUP_LABEL = "cluster.open-cluster-management.io/backup"  # ACM cluster-backup's selector (see the docstring)
ROTATION = f"{site.GROUP}/admin-rotation"  # on the Secret: the spec.adminAccess.rotation its keys answer
FINGERPRINT = f"{site.GROUP}/admin-ca-fingerprint"  # on the Secret: the CA's SHA-256 (public)
CA_CERT = "ca.crt"
CA_KEY = "ca.key"
CLIENT_CERT = "tls.crt"
CLIENT_KEY = "tls.key"
KUBEADMIN_PASSWORD = "kubeadmin-password"  # noqa: S105 (the Secret's key, not a password)
KUBEADMIN_HASH = "kubeadmin-password-hash"
BCRYPT_COST = 10  # Go's bcrypt.DefaultCost, the installer's for the kubeadmin password
PASSWORD_ALPHABET = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # noqa: S105 (installer's; no 0/O/1/l/I)
ADMIN_USER = "system:admin"
ADMIN_GROUP = "system:masters"
CA_DAYS = 3650  # as `oc config new-admin-kubeconfig`'s signer (10 years)
CLIENT_DAYS = 3650
GENERATED = "generated"


def secret_name(name: str) -> str:
    """The Secret holding a site's admin CA and client certificate with their keys."""
    return f"{name}-admin"


@dataclass(frozen=True)
class Request:
    """What the Site asks for (`spec.adminAccess`)."""

    generate: bool
    rotation: int
    kubeadmin: bool = False  # a new kubeadmin password too


def request_of(obj: Mapping[str, Any]) -> Request:
    spec = obj.get("spec") or {}
    asked = spec.get("adminAccess") if isinstance(spec, Mapping) else None
    asked = asked if isinstance(asked, Mapping) else {}
    rotation = asked.get("rotation", 0)
    rotation = rotation if isinstance(rotation, int) and not isinstance(rotation, bool) else 0
    return Request(asked.get("generate") is True, rotation, asked.get("kubeadmin") is True)


@dataclass(frozen=True)
class Keys:
    """A site's admin access as the hub holds it. `repr` shows no key."""

    secret: str
    rotation: int
    ca_pem: bytes
    fingerprint: str
    client_cert_pem: bytes
    client_key_pem: bytes
    kubeadmin_password: bytes | None = None
    kubeadmin_hash: bytes | None = None

    def __repr__(self) -> str:
        return f"Keys(secret={self.secret!r}, rotation={self.rotation}, fingerprint={self.fingerprint!r})"

    def status(self) -> dict[str, Any]:
        """Status's `adminAccess`: public facts only."""
        return {"state": GENERATED, "secret": self.secret, "caFingerprint": self.fingerprint,
                "rotation": self.rotation, "kubeadmin": "generated" if self.kubeadmin_hash else "removed"}  # fmt: skip


def _field(secret: Mapping[str, Any], key: str) -> bytes | None:
    value = (secret.get("data") or {}).get(key)
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        return None


def _rotation(secret: Mapping[str, Any]) -> int:
    text = ((secret.get("metadata") or {}).get("annotations") or {}).get(ROTATION, "")
    return int(text) if isinstance(text, str) and text.isdigit() else -1


def keys_of(secret: Mapping[str, Any] | None) -> Keys | None:
    """The keys a site's admin Secret holds (None when it is absent or incomplete); the keys are registered with
    the masker, so no log line can carry them."""
    if secret is None:
        return None
    values = {key: _field(secret, key) for key in (CA_CERT, CA_KEY, CLIENT_CERT, CLIENT_KEY)}
    ca, ca_key, cert, key = (values[k] for k in (CA_CERT, CA_KEY, CLIENT_CERT, CLIENT_KEY))
    if ca is None or ca_key is None or cert is None or key is None:
        return None
    password, hashed = _field(secret, KUBEADMIN_PASSWORD), _field(secret, KUBEADMIN_HASH)
    for value in (ca_key, key, password):
        if value:
            redact.register_secret(value)
    try:
        fingerprint = certs.fingerprint(certs.parse_chain(ca)[0])
    except (certs.CertError, ValueError):
        return None
    pair = (password, hashed) if password and hashed else (None, None)
    return Keys(str(secret["metadata"]["name"]), _rotation(secret), ca, fingerprint, cert, key, *pair)


def read(client: kube.Client, obj: Mapping[str, Any]) -> Keys | None:
    """The site's admin keys as the hub holds them (one GET; None when not generated)."""
    meta = obj["metadata"]
    return keys_of(client.find(kube.Ref(kube.SECRETS, secret_name(meta["name"]), meta["namespace"])))


def _owner(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return {"apiVersion": site.API_VERSION, "kind": site.KIND, "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}  # fmt: skip


def new_password() -> tuple[bytes, bytes]:
    """A kubeadmin password in the installer's form (four groups of five, dash-separated) and its bcrypt hash."""
    groups = ("".join(secrets.choice(PASSWORD_ALPHABET) for _ in range(5)) for _ in range(4))
    password = "-".join(groups).encode()
    redact.register_secret(password)
    return password, bcrypt.hashpw(password, bcrypt.gensalt(rounds=BCRYPT_COST))


def _password_data() -> dict[str, str]:
    password, hashed = new_password()
    return {KUBEADMIN_PASSWORD: base64.b64encode(password).decode(), KUBEADMIN_HASH: base64.b64encode(hashed).decode()}


def _generate(obj: Mapping[str, Any], asked: Request, now: dt.datetime) -> dict[str, Any]:
    """A new Secret body: the CA, the admin client certificate and their keys."""
    meta = obj["metadata"]
    ca_pem, ca_key = certs.issue_ca(f"admin-kubeconfig-signer-{meta['name']}", days=CA_DAYS, now=now)
    cert, key = certs.issue_client(ca_pem, ca_key, ADMIN_USER, organizations=(ADMIN_GROUP,), days=CLIENT_DAYS, now=now)
    fingerprint = certs.fingerprint(certs.parse_chain(ca_pem)[0])
    data = {name: base64.b64encode(value).decode() for name, value in
            ((CA_CERT, ca_pem), (CA_KEY, ca_key), (CLIENT_CERT, cert), (CLIENT_KEY, key))}  # fmt: skip
    if asked.kubeadmin:
        data.update(_password_data())
    return {
        "metadata": {
            "name": secret_name(meta["name"]),
            "namespace": meta["namespace"],
            "labels": {site.SITE_LABEL: meta["name"], BACKUP_LABEL: "true"},
            "annotations": {ROTATION: str(asked.rotation), FINGERPRINT: fingerprint},
            "ownerReferences": [_owner(obj)],
        },
        "type": "Opaque",
        "data": data,
    }


def ensure(client: kube.Client, obj: Mapping[str, Any], now: dt.datetime) -> Keys | None:
    """The site's admin keys, generated when the Site asks and none answer its rotation yet (see the module's
    docstring); None when the Site does not ask. Idempotent: a second call reads and writes nothing."""
    asked = request_of(obj)
    if not asked.generate:
        return None
    meta = obj["metadata"]
    ref = kube.Ref(kube.SECRETS, secret_name(meta["name"]), meta["namespace"])
    current = client.find(ref)
    held = keys_of(current)
    if held is not None and held.rotation >= asked.rotation:
        if asked.kubeadmin and held.kubeadmin_hash is None:  # a password asked for later: added, keys kept
            return keys_of(client.patch(ref, {"data": _password_data()}))
        return held
    body = _generate(obj, asked, now)
    if current is None:
        try:
            created = client.create(kube.SECRETS, body)
        except kube.Conflict:  # made meanwhile (another worker): those keys stand
            return keys_of(client.get(ref))
        return keys_of(created)
    data: dict[str, str | None] = dict(body["data"])
    if not asked.kubeadmin:  # new keys without a password: an earlier one goes (the medium says kubeadmin: remove)
        data.update(dict.fromkeys((KUBEADMIN_PASSWORD, KUBEADMIN_HASH)))
    replaced = client.patch(ref, {"metadata": body["metadata"], "data": data})
    return keys_of(replaced)


def medium_setting(keys: Keys, asked: Request) -> dict[str, Any]:
    """What the site's medium says of admin access: the agent's `spec.adminAccess`, the CA's certificate inline
    (public; `{pem: ...}`, the site-config's way of giving a certificate inline), the factory's signer revoked, and
    kubeadmin's new password hash when one was asked for, else kubeadmin removed (the contract's defaults, written
    out so the stick's reader sees them)."""
    kubeadmin: Any = "remove"
    if asked.kubeadmin and keys.kubeadmin_hash:
        kubeadmin = {"passwordHash": keys.kubeadmin_hash.decode()}
    return {"clientCA": {"pem": keys.ca_pem.decode()}, "revokeFactory": True, "kubeadmin": kubeadmin}

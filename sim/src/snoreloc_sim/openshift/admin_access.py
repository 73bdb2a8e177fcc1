"""The factory's admin access to a simulated SNO: its admin client CA, an admin client certificate, and kubeadmin.

OpenShift verifies admin client certificates against `openshift-config/admin-kubeconfig-client-ca` (`ca-bundle.crt`),
and this module is the simulator's source for that bundle, so revoking a signer there revokes its certificates.

How the bundle reaches kube-apiserver (openshift/cluster-kube-apiserver-operator):
- `pkg/operator/targetconfigcontroller/targetconfigcontroller.go`, `ManageClientCABundle`: `CombineCABundleConfigMaps`
  folds `openshift-config/admin-kubeconfig-client-ca` (with `csr-controller-ca`, `kube-apiserver-to-kubelet-client-ca`,
  `kube-control-plane-signer-ca`, `user-client-ca`, `kubelet-bootstrap-kubeconfig`) into
  `openshift-kube-apiserver/client-ca`, on every sync of the controller.
- `pkg/operator/starter.go`: `client-ca` is one of `CertConfigMaps`, which the kube-apiserver's cert-syncer copies
  onto the node (`static-pod-certs/configmaps/client-ca/ca-bundle.crt`) without a new revision; the
  `RevisionConfigMaps` list beside it says the revisioned ones are those "we don't reload ... yet". kube-apiserver
  reads `--client-ca-file` through `DynamicFileCAContent` (k8s.io/apiserver `dynamiccertificates`) and verifies
  each request against the bundle in force.
So the change is live, with no rollout: the simulator unions its own CA with the ConfigMap as the store holds it at
each request (`client_ca_bundle`), and a certificate whose CA left the ConfigMap gets 401 on its next request.
The other sources of `client-ca` sign nothing a test presents, so they are not modelled; nor is the operator's
few-second sync delay (a real cluster needs a short wait after the change; the simulator none).

kubeadmin is modelled as far as its Secret: `kube-system/kubeadmin`, key `kubeadmin`, a bcrypt hash (the installer's
`GenerateFromPassword(..., bcrypt.DefaultCost)`, cost 10) of a 23-character `xxxxx-xxxxx-xxxxx-xxxxx` password; the
oauth-server's kubeadmin identity provider accepts the password while the Secret exists and its hash matches.
"""

from __future__ import annotations

import base64
import secrets
import threading
from dataclasses import dataclass, field

import bcrypt

from snoreloc_sim.kube import certs, clientauth, model
from snoreloc_sim.openshift.operators import base

CLIENT_CA_NAMESPACE, CLIENT_CA_NAME, CLIENT_CA_KEY = "openshift-config", "admin-kubeconfig-client-ca", "ca-bundle.crt"
KUBEADMIN_NAMESPACE, KUBEADMIN_NAME, KUBEADMIN_KEY = "kube-system", "kubeadmin", "kubeadmin"
ADMIN_SIGNER_CN = "admin-kubeconfig-signer"  # the installer's CN for the admin client signer
ADMIN_USER = "system:admin"  # the installer's admin kubeconfig user
BCRYPT_COST = 10
_KUBEADMIN_CHARACTERS = "23456789abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ"


@dataclass(frozen=True)
class Factory:
    """What the factory holds: the admin client signer, a client certificate it signed, the kubeadmin password."""

    signer: certs.KeyPair
    client: certs.KeyPair
    kubeadmin_password: str = field(repr=False)
    kubeadmin_hash: bytes = field(repr=False)


_KUBEADMIN_LOCK = threading.Lock()
_kubeadmin: tuple[str, bytes] | None = None


def _factory_kubeadmin() -> tuple[str, bytes]:
    """The factory's kubeadmin password and its bcrypt hash, made once per process: a hash at the installer's cost
    takes ~0.1 s, which every simulator start would otherwise pay (the signers stay fresh per simulator)."""
    global _kubeadmin  # noqa: PLW0603 - a per-process cache, filled once under the lock
    with _KUBEADMIN_LOCK:
        if _kubeadmin is None:
            chunks = ("".join(secrets.choice(_KUBEADMIN_CHARACTERS) for _ in range(5)) for _ in range(4))
            password = "-".join(chunks)
            # Go's x/crypto/bcrypt writes the "$2a$" prefix
            _kubeadmin = (password, bcrypt.hashpw(password.encode(), bcrypt.gensalt(BCRYPT_COST, prefix=b"2a")))
        return _kubeadmin


def mint() -> Factory:
    signer = certs.make_ca(ADMIN_SIGNER_CN)
    password, hashed = _factory_kubeadmin()
    return Factory(signer, certs.issue(signer, [ADMIN_USER], client=True), password, hashed)


def seed(cluster: model.Cluster, factory: Factory) -> None:
    """Write the admin client CA ConfigMap and the kubeadmin Secret, as the installer leaves them."""
    configmap = {
        "metadata": {"name": CLIENT_CA_NAME, "namespace": CLIENT_CA_NAMESPACE},
        "data": {CLIENT_CA_KEY: factory.signer.cert_pem.decode()},
    }
    cluster.store.create(cluster.types[base.CONFIGMAPS], configmap)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": KUBEADMIN_NAME, "namespace": KUBEADMIN_NAMESPACE},
        "type": "Opaque",
        "data": {KUBEADMIN_KEY: base.b64(factory.kubeadmin_hash)},
    }
    cluster.store.create(cluster.types[base.SECRETS], secret)


def client_ca_bundle(cluster: model.Cluster, own_ca_pem: bytes) -> clientauth.BundleProvider:
    """The client CA bundle kube-apiserver verifies against now: the simulator's own CA and the admin CA ConfigMap."""

    def current() -> bytes:
        found = cluster.store.find(cluster.types[base.CONFIGMAPS], CLIENT_CA_NAME, CLIENT_CA_NAMESPACE)
        data = (found or {}).get("data") or {}
        admin = data.get(CLIENT_CA_KEY, "")
        return own_ca_pem + b"\n" + (admin.encode() if isinstance(admin, str) else b"")

    return current


def kubeadmin_login(cluster: model.Cluster, password: str) -> bool:
    """Whether the oauth-server would accept `password` for kubeadmin: the Secret exists and its bcrypt hash
    matches. Never raises on a malformed Secret (a login that cannot be checked is refused)."""
    found = cluster.store.find(cluster.types[base.SECRETS], KUBEADMIN_NAME, KUBEADMIN_NAMESPACE)
    encoded = ((found or {}).get("data") or {}).get(KUBEADMIN_KEY)
    if not isinstance(encoded, str):
        return False
    try:
        hashed = base64.b64decode(encoded, validate=True)
        return bool(bcrypt.checkpw(password.encode(), hashed))
    except ValueError:
        return False

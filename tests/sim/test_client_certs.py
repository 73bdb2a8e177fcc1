"""The simulator authenticates as OpenShift does: admin client certificates verified per request against its own CA
and `openshift-config/admin-kubeconfig-client-ca` as that ConfigMap is now; the bearer token throughout; kubeadmin
as far as its Secret. Over HTTPS, with the official kubernetes client and Debian's kubectl (skipped when absent).
"""

from __future__ import annotations

import base64
import datetime
import os
import stat
from pathlib import Path
from typing import Any

import bcrypt
import kubernetes
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from hubsim.test_hub_kubectl import KUBECTL, Run, run_kubectl
from snoreloc_sim.kube import clientauth
from snoreloc_sim.openshift import admin_access, simulator

pytestmark = [
    pytest.mark.simonly,  # the simulator's own authentication and seeded admin access
    pytest.mark.skipif(bool(clientauth.available()), reason=f"client certificates: {clientauth.available()}"),
]

Pem = tuple[bytes, bytes]  # (certificate, private key)


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    fmt = serialization.PrivateFormat.PKCS8
    return key.private_bytes(serialization.Encoding.PEM, fmt, serialization.NoEncryption())


def new_ca(cn: str) -> Pem:
    """An admin client CA made on the owner's side, as `oc config new-admin-kubeconfig` does."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(_name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def new_client(
    ca: Pem,
    cn: str = "system:admin",
    *,
    usage: x509.ObjectIdentifier = ExtendedKeyUsageOID.CLIENT_AUTH,
    hours_left: float = 24.0,
) -> Pem:
    ca_cert = x509.load_pem_x509_certificate(ca[0])
    ca_key = serialization.load_pem_private_key(ca[1], password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=48))
        .not_valid_after(now + datetime.timedelta(hours=hours_left))
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def write_kubeconfig(sim: simulator.Simulator, client: Pem, path: Path) -> Path:
    """The factory's kubeconfig with another client certificate in it."""
    config = yaml.safe_load(sim.factory_admin_kubeconfig.read_text())
    user = config["users"][0]["user"]
    user["client-certificate-data"] = base64.b64encode(client[0]).decode()
    user["client-key-data"] = base64.b64encode(client[1]).decode()
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def status(kubeconfig: Path) -> int:
    """The HTTP status of listing namespaces with the official client (200 when it works)."""
    client = kubernetes.config.new_client_from_config(str(kubeconfig))
    try:
        kubernetes.client.CoreV1Api(client).list_namespace(limit=1)
    except kubernetes.client.ApiException as error:
        return int(error.status)
    finally:
        client.close()
    return 200


def set_client_cas(sim: simulator.Simulator, bundle: bytes) -> None:
    """Replace the admin client CA bundle over the API with the bearer token (the agent's own credentials)."""
    client = kubernetes.config.new_client_from_config(str(sim.kubeconfig_path))
    try:
        body = {"data": {admin_access.CLIENT_CA_KEY: bundle.decode()}}
        core = kubernetes.client.CoreV1Api(client)
        core.patch_namespaced_config_map(admin_access.CLIENT_CA_NAME, admin_access.CLIENT_CA_NAMESPACE, body)
    finally:
        client.close()


def client_cas(sim: simulator.Simulator) -> str:
    found = sim.cluster.store.find(
        sim.cluster.types["configmaps"], admin_access.CLIENT_CA_NAME, admin_access.CLIENT_CA_NAMESPACE
    )
    assert found is not None
    return str(found["data"][admin_access.CLIENT_CA_KEY])


def test_seeded_factory_admin_kubeconfig_is_a_0600_client_certificate_signed_by_the_configmap_ca(
    sim: simulator.Simulator,
) -> None:
    path = sim.factory_admin_kubeconfig
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    user = yaml.safe_load(path.read_text())["users"][0]["user"]
    assert set(user) == {"client-certificate-data", "client-key-data"}  # no token to fall back on
    leaf = x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"]))
    signer = x509.load_pem_x509_certificate(client_cas(sim).encode())
    leaf.verify_directly_issued_by(signer)
    assert status(path) == 200


def test_revoking_the_factory_ca_gets_401_a_new_ca_works_and_the_token_works_throughout(
    sim: simulator.Simulator, tmp_path: Path
) -> None:
    owner_ca = new_ca("owner-admin-ca")
    owner = write_kubeconfig(sim, new_client(owner_ca), tmp_path / "owner.kubeconfig")
    factory_bundle = client_cas(sim).encode()
    assert (status(sim.factory_admin_kubeconfig), status(owner), status(sim.kubeconfig_path)) == (200, 401, 200)

    set_client_cas(sim, factory_bundle + owner_ca[0])  # both trusted: the agent's step before the removal
    assert (status(sim.factory_admin_kubeconfig), status(owner)) == (200, 200)

    set_client_cas(sim, owner_ca[0])  # the factory's signer removed: live, no rollout
    assert (status(sim.factory_admin_kubeconfig), status(owner), status(sim.kubeconfig_path)) == (401, 200, 200)

    set_client_cas(sim, factory_bundle)  # a rollback gives the factory its access back
    assert (status(sim.factory_admin_kubeconfig), status(owner), status(sim.kubeconfig_path)) == (200, 401, 200)


def test_the_bearer_token_works_whatever_the_configmap_holds(sim: simulator.Simulator) -> None:
    client = kubernetes.config.new_client_from_config(str(sim.kubeconfig_path))
    try:
        core = kubernetes.client.CoreV1Api(client)
        core.delete_namespaced_config_map(admin_access.CLIENT_CA_NAME, admin_access.CLIENT_CA_NAMESPACE)
        assert status(sim.kubeconfig_path) == 200
        assert status(sim.factory_admin_kubeconfig) == 401
        body = {
            "metadata": {"name": admin_access.CLIENT_CA_NAME},
            "data": {admin_access.CLIENT_CA_KEY: "not a certificate"},
        }
        core.create_namespaced_config_map(admin_access.CLIENT_CA_NAMESPACE, body)
        assert (status(sim.kubeconfig_path), status(sim.factory_admin_kubeconfig)) == (200, 401)
    finally:
        client.close()


def test_unknown_ca_expired_and_server_usage_certificates_get_401(sim: simulator.Simulator, tmp_path: Path) -> None:
    stranger = write_kubeconfig(sim, new_client(new_ca("stranger-ca")), tmp_path / "stranger.kubeconfig")
    assert status(stranger) == 401
    # the factory's own signer, but a certificate it signed for serving, or one that has expired: refused as kube
    # refuses them
    assert sim.factory_access is not None
    signer = (sim.factory_access.signer.cert_pem, sim.factory_access.signer.key_pem)
    serving = new_client(signer, usage=ExtendedKeyUsageOID.SERVER_AUTH)
    assert status(write_kubeconfig(sim, serving, tmp_path / "serving.kubeconfig")) == 401
    expired = new_client(signer, hours_left=-1)
    assert status(write_kubeconfig(sim, expired, tmp_path / "expired.kubeconfig")) == 401
    assert status(write_kubeconfig(sim, new_client(signer), tmp_path / "fresh.kubeconfig")) == 200


def test_kubeadmin_login_follows_its_secret(sim: simulator.Simulator) -> None:
    password = sim.kubeadmin_password
    assert len(password) == 23 and password.count("-") == 3
    assert sim.kubeadmin_login(password)
    assert not sim.kubeadmin_login(password + "x")
    client = kubernetes.config.new_client_from_config(str(sim.kubeconfig_path))
    try:
        core = kubernetes.client.CoreV1Api(client)
        stored = core.read_namespaced_secret(admin_access.KUBEADMIN_NAME, admin_access.KUBEADMIN_NAMESPACE)
        assert base64.b64decode(stored.data[admin_access.KUBEADMIN_KEY]).startswith(b"$2a$10$")  # Go bcrypt
        replaced = bcrypt.hashpw(b"owner-chosen-password", bcrypt.gensalt(4))
        body: dict[str, Any] = {"data": {admin_access.KUBEADMIN_KEY: base64.b64encode(replaced).decode()}}
        core.patch_namespaced_secret(admin_access.KUBEADMIN_NAME, admin_access.KUBEADMIN_NAMESPACE, body)
        assert not sim.kubeadmin_login(password)
        assert sim.kubeadmin_login("owner-chosen-password")
        core.delete_namespaced_secret(admin_access.KUBEADMIN_NAME, admin_access.KUBEADMIN_NAMESPACE)
        assert not sim.kubeadmin_login("owner-chosen-password")
    finally:
        client.close()


@pytest.mark.skipif(KUBECTL is None, reason="Debian's kubectl is not unpacked: run `make kubectl-debian`")
def test_debian_kubectl_with_the_factory_certificate_before_and_after_revocation(
    sim: simulator.Simulator, tmp_path: Path
) -> None:
    def kubectl(config: Path) -> Run:
        return run_kubectl(config, tmp_path, "get", "ns", "-o", "name")

    owner_ca = new_ca("owner-admin-ca")
    owner = write_kubeconfig(sim, new_client(owner_ca), tmp_path / "owner.kubeconfig")
    before = kubectl(sim.factory_admin_kubeconfig)
    assert before.code == 0 and "namespace/openshift-config" in before.out, before.err
    set_client_cas(sim, owner_ca[0])
    after = kubectl(sim.factory_admin_kubeconfig)
    assert after.code == 1
    assert "You must be logged in to the server (Unauthorized)" in after.err
    assert kubectl(owner).code == 0
    assert kubectl(sim.kubeconfig_path).code == 0

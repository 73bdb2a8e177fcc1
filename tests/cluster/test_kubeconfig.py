"""`snoreloc kubeconfig`: the kubeconfig it writes reaches the API under its new name, over HTTPS, through the
kubernetes client, verifying the certificate the API now serves; the factory's trust does not verify a site's own.

The site's DNS does not know the new name during a test, so the connecting kubeconfig is the one written with
`--address` (the node's address, the name kept in `tls-server-name`): the client sends `api.<domain>` and checks
the certificate against it, exactly as it would through DNS.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import os
import urllib.parse
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import urllib3
import yaml

from snoreloc.cli import main
from snoreloc.pki import certs
from snoreloc.siteconfig import model

from .conftest import NEW_DOMAIN, Relocation, site_config

API_HOST = f"api.{NEW_DOMAIN}"


def write_site(directory: Path, api_pair: tuple[bytes, bytes] | None = None) -> Path:
    """The site-config file the command reads (only the domain and the API certificate matter to it)."""
    spec: dict[str, Any] = {"domain": NEW_DOMAIN}
    if api_pair is not None:
        (directory / "api.crt").write_bytes(api_pair[0])
        key = directory / "api.key"
        key.write_bytes(api_pair[1])
        key.chmod(0o600)
        spec["certificates"] = {"api": {"certificate": {"file": "api.crt"}, "key": {"file": "api.key"}}}
    document = {"apiVersion": model.API_VERSION, "kind": model.KIND, "metadata": {"name": "site7"}, "spec": spec}
    path = directory / "site-config.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def site_pair(names: list[str]) -> tuple[bytes, bytes, bytes]:
    """A site's own API certificate: (leaf + its CA, key, the CA)."""
    now = dt.datetime.now(dt.UTC)
    ca_cert, ca_key = certs.issue_ca("site7 API CA", now=now)
    chain, key = certs.issue_serving(ca_cert, ca_key, names, now=now)
    return chain, key, ca_cert


def endpoint(kubeconfig: str) -> str:
    """The `host:port` the cluster's API answers on (the simulator's port, or a real cluster's API)."""
    document = yaml.safe_load(Path(kubeconfig).read_text())
    parsed = urllib.parse.urlsplit(document["clusters"][0]["cluster"]["server"])
    return f"{parsed.hostname}:{parsed.port or 443}"


def kubeconfig_cmd(r: Relocation, site: Path, out: Path, *extra: str) -> int:
    kubeconfig = r.target.kubeconfig
    args = ["--kubeconfig", kubeconfig, "--from", kubeconfig, "--site-config", str(site), "-o", str(out)]
    return main.main(["kubeconfig", *args, *extra])


def list_nodes(path: Path) -> list[Any]:
    """A real request through the kubernetes client with the kubeconfig at `path`."""
    api = kubernetes.config.new_client_from_config(str(path))
    try:
        return list(kubernetes.client.CoreV1Api(api).list_node(_request_timeout=30).items)
    finally:
        api.close()


def with_ca(path: Path, ca_pem: bytes, tmp: Path) -> Path:
    """The same kubeconfig trusting `ca_pem` instead."""
    document = yaml.safe_load(path.read_text())
    changed = copy.deepcopy(document)
    changed["clusters"][0]["cluster"]["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    other = tmp / f"other-{len(list(tmp.iterdir()))}.kubeconfig"
    other.write_text(yaml.safe_dump(changed))
    return other


def cluster_of(path: Path) -> dict[str, Any]:
    cluster: dict[str, Any] = yaml.safe_load(path.read_text())["clusters"][0]["cluster"]
    return cluster


def ca_of(path: Path) -> bytes:
    return base64.b64decode(cluster_of(path)["certificate-authority-data"])


def test_the_kubeconfig_names_the_new_api_and_trusts_the_signer_of_its_certificate(
    relocation: Relocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site, out = write_site(tmp_path), tmp_path / "admin.kubeconfig"
    relocation.run(site_config(source_path=str(site)))
    kubeconfig = relocation.target.kubeconfig
    recorded = ["kubeconfig", "--kubeconfig", kubeconfig, "--from", kubeconfig, "--state-dir"]
    assert main.main([*recorded, str(relocation.paths.state_dir), "-o", str(out)]) == 0  # the run's site-config
    err = capsys.readouterr().err
    assert f"https://{API_HOST}:6443" in err and "loadbalancer-serving-signer" in err
    assert main.main([*recorded, str(tmp_path / "no-state"), "-o", str(tmp_path / "x")]) == 64
    assert "Pass --site-config FILE" in capsys.readouterr().err
    assert os.stat(out).st_mode & 0o777 == 0o600
    cluster = cluster_of(out)
    assert cluster["server"] == f"https://{API_HOST}:6443"
    assert "tls-server-name" not in cluster
    signer = certs.parse_chain(relocation.facts.lb_signer_pem)[0]
    assert certs.parse_chain(ca_of(out)) == [signer]
    source = yaml.safe_load(Path(relocation.target.kubeconfig).read_text())
    written = yaml.safe_load(out.read_text())
    assert written["users"][0]["user"] == source["users"][0]["user"]  # the credentials, as they were

    dialled = tmp_path / "dialled.kubeconfig"
    assert kubeconfig_cmd(relocation, site, dialled, "--address", endpoint(relocation.target.kubeconfig)) == 0
    assert cluster_of(dialled)["tls-server-name"] == API_HOST
    assert list_nodes(dialled), "the API answered, but with no node"


def test_a_site_certificate_is_trusted_through_its_own_ca_and_not_through_the_factory_signer(
    relocation: Relocation, tmp_path: Path
) -> None:
    chain, key, site_ca = site_pair([API_HOST])
    relocation.run(site_config(certificates=model.Certificates(api=model.CertKeyPair(chain, key))))
    site, out = write_site(tmp_path, (chain, key)), tmp_path / "admin.kubeconfig"
    assert kubeconfig_cmd(relocation, site, out, "--address", endpoint(relocation.target.kubeconfig)) == 0
    assert certs.parse_chain(ca_of(out)) == certs.parse_chain(site_ca)
    assert list_nodes(out)
    elsewhere = [  # an administrator off the node: the CA is the site's, the check dials --address; no cluster read
        *("kubeconfig", "--kubeconfig", str(tmp_path / "absent"), "--from", relocation.target.kubeconfig),
        *("--site-config", str(site), "--address", endpoint(relocation.target.kubeconfig)),
    ]
    assert main.main([*elsewhere, "-o", str(tmp_path / "elsewhere.kubeconfig")]) == 0
    factory_trust = with_ca(out, relocation.facts.lb_signer_pem, tmp_path)
    with pytest.raises(urllib3.exceptions.MaxRetryError, match="CERTIFICATE_VERIFY_FAILED"):
        list_nodes(factory_trust)


def test_before_the_api_serves_the_new_name_no_kubeconfig_is_written(
    cluster_kubeconfig: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site, out = write_site(tmp_path), tmp_path / "admin.kubeconfig"
    args = ["--kubeconfig", cluster_kubeconfig, "--from", cluster_kubeconfig, "--site-config", str(site)]
    assert main.main(["kubeconfig", *args, "-o", str(out)]) == 75
    assert not out.exists()
    err = capsys.readouterr().err
    assert f"does not serve {API_HOST}" in err and "snoreloc status --wait" in err


def test_a_site_certificate_without_its_issuer_needs_the_ca_named(
    cluster_kubeconfig: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chain, key, site_ca = site_pair([API_HOST])
    leaf = certs.pem_bundle(certs.parse_chain(chain)[:1])
    site, out = write_site(tmp_path, (leaf, key)), tmp_path / "admin.kubeconfig"
    args = ["--kubeconfig", cluster_kubeconfig, "--from", cluster_kubeconfig, "--site-config", str(site)]
    assert main.main(["kubeconfig", *args, "-o", str(out)]) == 64
    assert "--ca-file" in capsys.readouterr().err
    (tmp_path / "site-ca.pem").write_bytes(site_ca)
    with_file = ["--ca-file", str(tmp_path / "site-ca.pem")]
    assert main.main(["kubeconfig", *args, *with_file, "-o", str(out)]) == 75  # not relocated: not served yet
    assert not out.exists()


FILE_FIELDS = {"client-certificate-data": "client-certificate", "client-key-data": "client-key", "token": "tokenFile"}


def user_with_files(user: dict[str, Any], directory: Path) -> dict[str, Any]:
    """The same credentials, kept in files next to the kubeconfig, as many administrators keep them."""
    user = copy.deepcopy(user)
    for data_key, file_key in FILE_FIELDS.items():
        if data_key in user:
            value = user.pop(data_key)
            (directory / file_key).write_bytes(value.encode() if data_key == "token" else base64.b64decode(value))
            user[file_key] = file_key
    return user


def test_a_kubeconfig_on_the_factory_name_gets_the_new_name_and_keeps_its_credentials(
    relocation: Relocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The administrator's kubeconfig names `api.<factory domain>`, which the site's DNS does not know: the new one
    names the new API and carries the same user, the files it points to read in."""
    relocation.run()
    source_user = yaml.safe_load(Path(relocation.target.kubeconfig).read_text())["users"][0]["user"]
    secret = source_user.get("token") or base64.b64decode(source_user["client-key-data"]).decode()
    old_api = f"api.{relocation.facts.apps_domain.removeprefix('apps.')}"
    old = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "factory", "cluster": {"server": f"https://{old_api}:6443"}}],
        "users": [{"name": "admin", "user": user_with_files(source_user, tmp_path)}],
        "contexts": [{"name": "admin", "context": {"cluster": "factory", "user": "admin", "namespace": "edge-app"}}],
        "current-context": "admin",
    }
    old_path = tmp_path / "factory.kubeconfig"
    old_path.write_text(yaml.safe_dump(old))
    site, out = write_site(tmp_path), tmp_path / "admin.kubeconfig"
    address = endpoint(relocation.target.kubeconfig)
    args = ["--kubeconfig", relocation.target.kubeconfig, "--from", str(old_path), "--site-config", str(site)]
    assert main.main(["kubeconfig", *args, "--address", address, "-o", str(out)]) == 0
    written = yaml.safe_load(out.read_text())
    assert written["users"][0]["user"] == source_user
    assert written["contexts"][0]["context"]["namespace"] == "edge-app"
    captured = capsys.readouterr()
    assert f"names the API as {old_api}" in captured.err
    assert secret.strip() not in captured.err + captured.out
    assert list_nodes(out)


def test_it_will_not_print_credentials_to_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    site = write_site(tmp_path)
    assert main.main(["kubeconfig", "--site-config", str(site), "--from", str(tmp_path / "none")]) == 64
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "--output FILE" in captured.err and "--stdout" in captured.err

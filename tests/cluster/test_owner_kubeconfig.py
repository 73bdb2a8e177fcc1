"""The owner's side of issue 32 through the real command line: `admin-access init` makes the owner's CA and admin
client certificate (keys 0600, never overwritten), its CA goes into the site-config, the run puts exactly that CA
into the cluster's `admin-kubeconfig-client-ca` (read back over HTTPS), and `admin-access kubeconfig` writes a
kubeconfig (0600) whose client certificate that CA signed, for `api.<domain>`, trusting `--api-ca`, which the official
Python client loads as it is. Bad input gets its exit code: 64 for a refused `--server`, an `--api-ca` holding no
certificate, a directory without the owner's files.

Not here yet: dialing the API with that kubeconfig (the owner's certificate let in, the factory's refused with 401)
awaits the simulator's client-certificate authentication (its half of issue 32).
"""

from __future__ import annotations

import base64
import datetime as dt
import pathlib
import stat

import kubernetes
import pytest
import yaml

from snoreloc.cli import main
from snoreloc.pki import certs
from snoreloc.siteconfig import loader
from snoreloc.siteconfig.settings import admin_access
from snoreloc.steps.cluster import admin_access as step

from .conftest import NEW_DOMAIN, Relocation, site_config


def _mode(path: pathlib.Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def owner(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> pathlib.Path:
    directory = tmp_path / "owner"
    assert main.main(["admin-access", "init", "--dir", str(directory), "--name", "site7"]) == 0
    out = capsys.readouterr()
    assert out.out == f"{directory / 'admin-ca.crt'}\n"
    assert "spec.adminAccess.clientCA" in out.err and "PRIVATE" not in out.err
    return directory


def test_init_makes_a_ca_and_a_system_admin_certificate_and_never_overwrites(
    owner: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _mode(owner) == 0o700
    assert {p.name: _mode(p) for p in owner.iterdir()} == {
        "admin-ca.crt": 0o644,
        "admin-ca.key": 0o600,
        "admin.crt": 0o644,
        "admin.key": 0o600,
    }
    (ca,) = certs.parse_chain((owner / "admin-ca.crt").read_bytes())
    (client,) = certs.parse_chain((owner / "admin.crt").read_bytes())
    client.verify_directly_issued_by(ca)
    assert client.subject.rfc4514_string() == "CN=system:admin,O=system:masters"
    assert certs.check_key((owner / "admin.crt").read_bytes(), (owner / "admin.key").read_bytes()) == []
    key = (owner / "admin.key").read_bytes()
    assert main.main(["admin-access", "init", "--dir", str(owner)]) == 64
    assert "not overwriting" in capsys.readouterr().err
    assert (owner / "admin.key").read_bytes() == key


def test_the_run_trusts_the_owners_ca_and_the_kubeconfig_carries_its_certificate(
    relocation: Relocation, owner: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "owner-admin-ca.crt").write_bytes((owner / "admin-ca.crt").read_bytes())
    path = site_dir / "site-config.yaml"
    doc = {"apiVersion": "snoreloc.io/v1alpha1", "kind": "SiteConfig", "metadata": {"name": "site7"}}
    doc["spec"] = {"domain": NEW_DOMAIN, "adminAccess": {"clientCA": {"file": "owner-admin-ca.crt"}}}
    path.write_text(yaml.safe_dump(doc))
    report = loader.validate(str(path))
    assert report.problems == () and report.config is not None
    access = report.config.get(admin_access.SETTING)
    assert access is not None
    relocation.run(site_config(settings={admin_access.KEY: access}))
    held = relocation.get(step.CLIENT_CA)["data"][step.CA_KEY]
    (ca,) = certs.parse_chain((owner / "admin-ca.crt").read_bytes())
    assert [certs.fingerprint(c) for c in certs.load_all(held.encode())] == [certs.fingerprint(ca)]

    api_ca = certs.issue_ca("the API's serving CA", now=dt.datetime.now(dt.UTC))[0]
    (tmp_path / "api-ca.crt").write_bytes(api_ca)
    output = tmp_path / "owner.kubeconfig"
    server = f"https://api.{NEW_DOMAIN}:6443"
    argv = ["admin-access", "kubeconfig", "--dir", str(owner), "--server", server, "--name", "site7"]
    assert main.main([*argv, "--api-ca", str(tmp_path / "api-ca.crt"), "--output", str(output)]) == 0
    said = capsys.readouterr()
    assert _mode(output) == 0o600 and said.out == ""
    assert (owner / "admin.key").read_text().splitlines()[1] not in said.err
    config = yaml.safe_load(output.read_text())
    (cluster,) = config["clusters"]
    assert cluster["cluster"]["server"] == server
    assert base64.b64decode(cluster["cluster"]["certificate-authority-data"]) == api_ca
    (user,) = config["users"]
    pem = base64.b64decode(user["user"]["client-certificate-data"])
    certs.parse_chain(pem)[0].verify_directly_issued_by(certs.load_all(held.encode())[0])  # the bundle's CA signed it
    loaded = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(str(output), client_configuration=loaded)  # the official client takes it
    assert loaded.host == server and loaded.cert_file and loaded.key_file


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"--server": "http://api.site7.example.com:6443"}, "expected https://api.<domain>"),
        ({"--server": "https://console.site7.example.com"}, "expected https://api.<domain>"),
        ({"--api-ca": "not-pem"}, "--api-ca"),
        ({"--dir": "empty"}, "no admin client certificate there"),
    ],
)
def test_bad_kubeconfig_input_is_64_and_writes_nothing(
    owner: pathlib.Path,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, str],
    words: str,
) -> None:
    (tmp_path / "api-ca.crt").write_bytes(certs.issue_ca("api CA", now=dt.datetime.now(dt.UTC))[0])
    (tmp_path / "not-pem").write_text("hello\n")
    (tmp_path / "empty").mkdir()
    options = {
        "--dir": str(owner),
        "--server": "https://api.site7.example.com:6443",
        "--api-ca": str(tmp_path / "api-ca.crt"),
    }
    for flag, value in change.items():
        options[flag] = value if value.startswith("http") else str(tmp_path / value)
    output = tmp_path / "owner.kubeconfig"
    argv = ["admin-access", "kubeconfig", *(x for pair in options.items() for x in pair), "--output", str(output)]
    assert main.main(argv) == 64
    assert words in capsys.readouterr().err
    assert not output.exists()

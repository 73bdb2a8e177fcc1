"""Bad input is the user's to fix, so it exits 65 with its field (or 69 naming an unusable kubeconfig), never 70.

The cases: certificates whose extensions do not parse or whose SANs Go clients would never match (trailing dot,
empty label, partial wildcard), site-configs that are FIFOs, devices, sockets or directories (refused before any
read, so nothing hangs), and kubeconfigs of the wrong shape (exit 69, the file named, its token never printed).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import pathlib
import socket
import threading
import time
from collections.abc import Callable

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtensionOID, NameOID

from snoreloc import redact
from snoreloc.cli import main
from snoreloc.siteconfig import loader

from . import figures, harness

DOMAIN = "sno1.site.example.com"
API = f"api.{DOMAIN}"
HEAD = "apiVersion: snoreloc.io/v1alpha1\nkind: SiteConfig\nmetadata:\n  name: site-1\nspec:\n"
PAIR = "      certificate: {file: api.crt}\n      key: {file: api.key}\n"
CERTS = f"  domain: {DOMAIN}\n  certificates:\n    api:\n" + PAIR
NOW = dt.datetime.now(dt.UTC)


def _cert(extension: x509.ExtensionType) -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, API)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - dt.timedelta(days=1))
        .not_valid_after(NOW + dt.timedelta(days=30))
        .add_extension(extension, critical=False)
    )
    cert = builder.sign(key, hashes.SHA256())
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def _sans(*names: str) -> x509.ExtensionType:
    return x509.SubjectAlternativeName([x509.DNSName(n) for n in names])


def _truncated_san() -> x509.ExtensionType:
    # a SEQUENCE that claims 16 bytes of names but holds one 5-byte dNSName cut short
    return x509.UnrecognizedExtension(ExtensionOID.SUBJECT_ALTERNATIVE_NAME, b"\x30\x10\x82\x05api")


CERT_CASES: dict[str, Callable[[], x509.ExtensionType]] = {
    "san-truncated": _truncated_san,
    "san-trailing-dot": lambda: _sans(API + "."),
    "san-empty-label": lambda: _sans(API, f"api..{DOMAIN}"),
    "san-leading-dot": lambda: _sans(API, f".{DOMAIN}"),
    "san-partial-wildcard": lambda: _sans(API, f"a*.apps.{DOMAIN}"),
    "san-bare-wildcard": lambda: _sans(API, "*"),
    "san-space-in-label": lambda: _sans(API, f"my host.{DOMAIN}"),
    "san-leading-hyphen": lambda: _sans(API, f"-api.{DOMAIN}"),
}


@pytest.mark.parametrize("name", sorted(CERT_CASES))
def test_certificate_san_problems_are_65_on_the_field(
    name: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cert, key = _cert(CERT_CASES[name]())
    (tmp_path / "api.crt").write_bytes(cert)
    (tmp_path / "api.key").write_bytes(key)
    (tmp_path / "api.key").chmod(0o600)
    (tmp_path / "site-config.yaml").write_text(HEAD + CERTS)
    code = main.main(["validate", str(tmp_path / "site-config.yaml")])
    err = capsys.readouterr().err
    named = "spec.certificates.api.certificate" in err
    figures.record("hostile-input-ii", f"cert-{name}", code == 65 and named)
    assert code == 65, err
    assert named and "Traceback" not in err, err


def test_uppercase_san_is_accepted(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The control: Go compares names in lower case, so an upper-case SAN is fine."""
    cert, key = _cert(_sans(API.upper()))
    (tmp_path / "api.crt").write_bytes(cert)
    (tmp_path / "api.key").write_bytes(key)
    (tmp_path / "api.key").chmod(0o600)
    (tmp_path / "site-config.yaml").write_text(HEAD + CERTS)
    assert main.main(["validate", str(tmp_path / "site-config.yaml")]) == 0, capsys.readouterr().err


def _fifo(path: pathlib.Path) -> None:
    os.mkfifo(path)


def _directory(path: pathlib.Path) -> None:
    path.mkdir()


def _device(path: pathlib.Path) -> None:
    path.symlink_to("/dev/zero")


def _socket(path: pathlib.Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    threading.Timer(20.0, server.close).start()


SPECIAL: dict[str, Callable[[pathlib.Path], None]] = {
    "fifo": _fifo,
    "directory": _directory,
    "char-device": _device,
    "socket": _socket,
}


@pytest.mark.parametrize("kind", sorted(SPECIAL))
@pytest.mark.parametrize("verb", ["validate", "run"])
def test_special_file_as_site_config_refused_at_once(verb: str, kind: str, tmp_path: pathlib.Path) -> None:
    site = tmp_path / "site-config.yaml"
    SPECIAL[kind](site)
    argv = harness.snoreloc("validate", str(site))
    if verb == "run":
        argv = harness.snoreloc("run", "--cluster-only", "--site-config", str(site), "--root", str(tmp_path / "root"))
    result = harness.measure(argv, timeout=20.0)
    figures.record(
        "hostile-input-ii", f"{verb}-{kind}", result.code == 65 and result.seconds < 5.0, seconds=result.seconds
    )
    assert result.code == 65, result.stderr
    assert str(site) in result.stderr and "Traceback" not in result.stderr
    assert result.seconds < 5.0


TOKEN = "sha256~kubeconfigTokenValue0123456789"
KUBECONFIGS: dict[str, str] = {
    "kubeconfig-broken-yaml": f"users: [{{name: u, user: {{token: {TOKEN}}}}}\n",
    "kubeconfig-clusters-number": f"clusters: 5\nusers: [{{name: u, user: {{token: {TOKEN}}}}}]\n"
    "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
    "kubeconfig-a-list": f"- {TOKEN}\n",
    "kubeconfig-server-number": "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
    f"clusters: [{{name: c, cluster: {{server: 5}}}}]\nusers: [{{name: u, user: {{token: [{TOKEN}]}}}}]\n",
    "kubeconfig-empty": "\n",
    "kubeconfig-fifo": "",
}


def _broken_kubeconfig(name: str, tmp_path: pathlib.Path) -> pathlib.Path:
    kubeconfig = tmp_path / "my-kubeconfig"
    if name == "kubeconfig-fifo":
        os.mkfifo(kubeconfig)
    else:
        kubeconfig.write_text(KUBECONFIGS[name])
    return kubeconfig


@pytest.mark.parametrize("name", sorted(KUBECONFIGS))
def test_broken_kubeconfig_is_69_naming_the_file(name: str, tmp_path: pathlib.Path) -> None:
    site, kubeconfig = harness.write_site(tmp_path / "site"), _broken_kubeconfig(name, tmp_path)
    argv = harness.snoreloc(
        "run",
        "--cluster-only",
        "--site-config",
        str(site),
        "--kubeconfig",
        str(kubeconfig),
        "--root",
        str(tmp_path / "r"),
    )
    started = time.perf_counter()
    result = harness.measure(argv, timeout=20.0)
    leaked = TOKEN in result.stdout + result.stderr
    figures.record("hostile-input-ii", name, result.code == 69 and not leaked, seconds=time.perf_counter() - started)
    assert result.code == 69, result.stderr
    assert "my-kubeconfig" in result.stderr and "Traceback" not in result.stderr
    assert not leaked


@pytest.mark.parametrize("name", sorted(KUBECONFIGS))
def test_broken_kubeconfig_to_take_credentials_from_is_69_naming_the_file(name: str, tmp_path: pathlib.Path) -> None:
    """`snoreloc kubeconfig --from FILE` reads the file itself (to copy its user): the same corpus, the same answer."""
    site, kubeconfig = harness.write_site(tmp_path / "site"), _broken_kubeconfig(name, tmp_path)
    argv = harness.snoreloc("kubeconfig", "--site-config", str(site), "--from", str(kubeconfig), "--stdout")
    result = harness.measure(argv, timeout=20.0)
    assert result.code == 69, result.stderr
    assert "my-kubeconfig" in result.stderr and "Traceback" not in result.stderr
    assert TOKEN not in result.stdout + result.stderr


def test_pull_secret_of_15000_registries_validates_within_a_second(tmp_path: pathlib.Path) -> None:
    """The documented 1 MiB limit filled with registries: every auth is registered for redaction on the way.

    Measured in CPU time of this process, so that other jobs on the machine do not decide the result."""
    auths = {
        f"r{i}.example.com": {"auth": base64.b64encode(f"user{i}:pass{i:06d}word".encode()).decode()}
        for i in range(15_000)
    }
    secret = tmp_path / "pull-secret.json"
    secret.write_text(json.dumps({"auths": auths}))
    secret.chmod(0o600)
    assert 900_000 < secret.stat().st_size <= 1024 * 1024
    (tmp_path / "site-config.yaml").write_text(
        HEAD + f"  domain: {DOMAIN}\n  pullSecret:\n    file: pull-secret.json\n"
    )
    redact.forget_secrets()
    started, cpu = time.perf_counter(), time.process_time()
    report = loader.validate(str(tmp_path / "site-config.yaml"))
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - started
    masked = redact.redact("the auth of r9999 is " + auths["r9999.example.com"]["auth"])
    redact.forget_secrets()
    figures.record("bounded", "pull-secret-15000-registries", cpu < 1.0, seconds=wall, cpu_seconds=cpu)
    assert not report.problems, report.problems
    assert auths["r9999.example.com"]["auth"] not in masked
    assert cpu < 1.0, f"{cpu:.2f} s of CPU"


def test_a_missing_kubeconfig_is_named_missing_not_invalid(tmp_path: pathlib.Path) -> None:
    """The official loader calls a file that is not there "Invalid kube-config file. No configuration found."."""
    site, missing = harness.write_site(tmp_path / "site"), tmp_path / "not-here" / "my-kubeconfig"
    argv = harness.snoreloc("run", "--cluster-only", "--site-config", str(site), "--kubeconfig", str(missing),
                            "--root", str(tmp_path / "r"))  # fmt: skip
    result = harness.measure(argv, timeout=20.0)
    assert result.code == 69, result.stderr
    assert f"cannot load kubeconfig {missing}: no such file" in result.stderr and "Invalid" not in result.stderr

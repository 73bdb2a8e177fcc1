"""SSH keys, the proxy and NTP in the site-config: parsed into the model, refused with the field, passwords never
shown."""

from __future__ import annotations

import datetime as dt
import pathlib

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from snoreloc import redact
from snoreloc.siteconfig import loader, model
from snoreloc.siteconfig.settings import ntp, proxy, ssh_keys

HEAD = "apiVersion: snoreloc.io/v1alpha1\nkind: SiteConfig\nmetadata:\n  name: site-1\nspec:\n"
HEAD += "  domain: sno1.site.example.com\n"
PASSWORD = "Pr0xy-Passw0rd-0412"


def _openssh(public: ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey) -> str:
    return public.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()


def _validate(tmp_path: pathlib.Path, body: str) -> loader.Report:
    path = tmp_path / "site-config.yaml"
    path.write_text(HEAD + body)
    return loader.validate(str(path), now=dt.datetime.now(dt.UTC))


def test_ssh_keys_become_the_model(tmp_path: pathlib.Path) -> None:
    ed = _openssh(ed25519.Ed25519PrivateKey.generate().public_key())
    nist = _openssh(ec.generate_private_key(ec.SECP256R1()).public_key())
    report = _validate(tmp_path, f"  sshAuthorizedKeys:\n    mode: add\n    keys:\n      - {ed} a\n      - '{nist}'\n")
    assert report.valid, report.problems
    assert report.config is not None
    assert report.config.ssh_authorized_keys == model.SshKeys((f"{ed} a", nist), model.SshKeysMode.ADD)


@pytest.mark.parametrize(
    ("line", "wanted"),
    [
        ("ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIOGy3FtjEh3KCSOtJA1QVsqRdC2wax8+JVoTlMQh/wpU", "not a valid ssh-rsa"),
        ("sk-ssh-ed25519@openssh.com AAAAC3NzaC1lZDI1NTE5AAAAIOGy", "holds another type"),
        ("ssh-ed25519 AAAA", "not a valid ssh-ed25519"),
    ],
)
def test_a_key_that_is_not_its_type_is_refused(line: str, wanted: str) -> None:
    problem = ssh_keys.ssh_key_problem(line)
    assert problem is not None and wanted in problem


@pytest.mark.parametrize(
    ("field", "url", "wanted"),
    [
        ("httpProxy", "https://proxy.example.com:3128", "http://"),
        ("httpsProxy", "ftp://proxy.example.com", "http:// or https://"),
        ("httpsProxy", "proxy.example.com:3128", "must start with"),
        ("httpProxy", "http://:3128", "has no host"),
        ("httpProxy", "http://proxy.example.com:0", "port 0"),
        ("httpProxy", "http://proxy.example.com:70000", "port"),
        ("httpProxy", "http://proxy.example.com/x?y=1", "no path"),
    ],
)
def test_bad_proxy_urls_are_refused(field: str, url: str, wanted: str) -> None:
    problem = proxy.proxy_url_problem(field, url)
    assert problem is not None and wanted in problem


def test_a_proxy_password_is_never_shown(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    redact.forget_secrets()
    url = f"http://edge-bot:{PASSWORD}@proxy.site.example.com:3128/path"
    report = _validate(tmp_path, f"  proxy:\n    httpsProxy: {url}\n")
    assert [p.path for p in report.problems] == ["spec.proxy.httpsProxy"]
    assert all(PASSWORD not in p.render() for p in report.problems)
    assert PASSWORD not in redact.redact(f"anything mentioning {PASSWORD}")
    good = _validate(tmp_path, f"  proxy:\n    httpsProxy: {url.removesuffix('/path')}\n    noProxy: [.site]\n")
    assert good.config is not None and good.config.proxy is not None
    assert good.config.proxy.https_proxy == url.removesuffix("/path")
    assert PASSWORD not in repr(good.config)


def test_ntp_sources_become_the_model(tmp_path: pathlib.Path) -> None:
    body = "  ntp:\n    servers: [ntp1.site.example.com, '2001:db8::123']\n    pools: [pool.site.example.com]\n"
    report = _validate(tmp_path, body)
    assert report.valid, report.problems
    assert report.config is not None
    assert report.config.ntp == model.Ntp(("ntp1.site.example.com", "2001:db8::123"), ("pool.site.example.com",))


@pytest.mark.parametrize(
    ("value", "wanted"),
    [
        ("ntp1.site.example.com\n", "on one line"),
        ("ntp1.site.example.com iburst", "on one line"),
        ("iburst\nallow", "on one line"),
        ("256.1.1.1", "not a valid IP address"),
        ("fe80::1::2", "not a valid IP address"),
        ("224.0.1.1", "multicast"),
        ("::", "unspecified"),
    ],
)
def test_an_ntp_source_that_is_not_one_name_or_address_is_refused(value: str, wanted: str) -> None:
    problem = ntp.ntp_source_problem(value)
    assert problem is not None and wanted in problem


@pytest.mark.parametrize("value", ["ntp1.site.example.com", "NTP1.Site.Example.com", "10.0.0.1", "2001:db8::1", "a"])
def test_a_name_or_an_address_is_an_ntp_source(value: str) -> None:
    assert ntp.ntp_source_problem(value) is None

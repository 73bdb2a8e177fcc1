"""`spec.adminAccess` offline: the owner's CA checked as a CA (never a key, never a leaf, never expired), the
defaults the contract gives (revoke and remove when a CA is given, keep when not), the bcrypt hash's shape checked
and the hash never echoed, and the warning a site-config without it gets (the factory keeps admin access)."""

from __future__ import annotations

import datetime as dt
import json
import pathlib

import pytest

from snoreloc.cli import main as cli
from snoreloc.pki import certs
from snoreloc.siteconfig import loader
from snoreloc.siteconfig.settings import admin_access

HEAD = """\
apiVersion: snoreloc.io/v1alpha1
kind: SiteConfig
metadata: {name: site-1}
spec:
  domain: sno1.site.example.com
"""
# a well-formed bcrypt hash (cost 12, 22 characters of salt, 31 of hash); not the hash of any password we know
HASH = "$2y$12$" + "abcdefghijklmnopqrstuv" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ01234"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _site(tmp_path: pathlib.Path, body: str, ca: bytes | None = None) -> pathlib.Path:
    if ca is not None:
        (tmp_path / "owner-admin-ca.crt").write_bytes(ca)
    path = tmp_path / "site-config.yaml"
    path.write_text(HEAD + body)
    return path


@pytest.fixture
def owner_ca() -> bytes:
    return certs.issue_ca("owner admin CA", now=_now())[0]


def test_a_ca_alone_revokes_the_factory_and_removes_kubeadmin(tmp_path: pathlib.Path, owner_ca: bytes) -> None:
    report = loader.validate(
        str(_site(tmp_path, "  adminAccess:\n    clientCA: {file: owner-admin-ca.crt}\n", owner_ca))
    )
    assert report.problems == () and report.warnings == ()
    assert report.config is not None
    access = report.config.get(admin_access.SETTING)
    assert access is not None and access.client_ca == owner_ca.decode()
    assert access.revoke_factory is True and access.kubeadmin is admin_access.Kubeadmin.REMOVE
    assert access.fingerprints() == (certs.fingerprint(certs.parse_chain(owner_ca)[0]),)


def test_a_hash_only_keeps_the_factory_signer_with_a_warning(tmp_path: pathlib.Path) -> None:
    report = loader.validate(str(_site(tmp_path, f"  adminAccess:\n    kubeadmin: {{passwordHash: '{HASH}'}}\n")))
    assert report.problems == ()
    assert [(w.path, w.line) for w in report.warnings] == [("spec.adminAccess", 6)]
    assert "the factory keeps admin access" in report.warnings[0].message
    assert report.config is not None
    access = report.config.get(admin_access.SETTING)
    assert access is not None and access.client_ca is None and access.revoke_factory is False
    assert access.kubeadmin is admin_access.Kubeadmin.REPLACE and access.password_hash == HASH
    assert HASH not in repr(access)


def test_without_admin_access_nothing_changes_and_validate_warns(tmp_path: pathlib.Path) -> None:
    report = loader.validate(str(_site(tmp_path, "")))
    assert report.problems == ()
    assert [(w.path, w.line) for w in report.warnings] == [("spec", 4)]
    assert report.warnings[0].message.startswith("the factory keeps admin access to this site")
    assert report.config is not None and report.config.get(admin_access.SETTING) is None


def test_keeping_either_factory_way_in_is_said(tmp_path: pathlib.Path, owner_ca: bytes) -> None:
    body = "  adminAccess:\n    clientCA: {file: owner-admin-ca.crt}\n    revokeFactory: false\n    kubeadmin: keep\n"
    report = loader.validate(str(_site(tmp_path, body, owner_ca)))
    assert report.problems == ()
    assert [(w.path, w.line) for w in report.warnings] == [
        ("spec.adminAccess.revokeFactory", 8),
        ("spec.adminAccess.kubeadmin", 9),
    ]


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("hunter2-but-longer", "never the password"),
        ("$2x$12$" + "a" * 53, "must start with $2a$, $2b$ or $2y$"),
        ("$2b$3$" + "a" * 53, "bcrypt cost"),
        ("$2b$12$" + "a" * 52, "53 characters"),
        ("$2b$12$" + "a" * 52 + "!", "53 characters"),
    ],
)
def test_a_hash_of_the_wrong_shape_is_refused_and_never_echoed(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], value: str, words: str
) -> None:
    path = _site(tmp_path, f"  adminAccess:\n    kubeadmin:\n      passwordHash: '{value}'\n")
    assert admin_access.bcrypt_problem(value) is not None
    assert cli.main(["validate", "--output", "json", str(path)]) == 65
    out = capsys.readouterr()
    (problem,) = json.loads(out.out)["errors"]
    assert (problem["path"], problem["line"]) == ("spec.adminAccess.kubeadmin.passwordHash", 8)
    assert words in problem["message"]
    assert cli.main(["validate", "--annotate", str(path)]) == 65
    shown = capsys.readouterr()
    for text in (out.out, out.err, shown.out, shown.err):
        assert value not in text


def test_a_good_hash_is_masked_by_annotate(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _site(tmp_path, f"  adminAccess:\n    kubeadmin:\n      passwordHash: '{HASH}'\n")
    assert cli.main(["validate", "--annotate", str(path)]) in (0, 2)
    shown = capsys.readouterr()
    assert HASH not in shown.out + shown.err


def test_a_private_key_inline_is_refused_and_never_quoted(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cert, key = certs.issue_ca("owner admin CA", now=_now())
    pem = (cert + key).decode()
    indented = "".join(f"        {line}\n" for line in pem.splitlines())
    path = _site(tmp_path, f"  adminAccess:\n    clientCA:\n      pem: |\n{indented}")
    assert cli.main(["validate", "--output", "json", str(path)]) == 65
    out = capsys.readouterr()
    (problem,) = json.loads(out.out)["errors"]
    assert (problem["path"], problem["line"]) == ("spec.adminAccess.clientCA.pem", 8)
    assert "holds a private key" in problem["message"]
    assert cli.main(["validate", "--annotate", str(path)]) == 65
    shown = capsys.readouterr()
    body = "".join(key.decode().splitlines()[1:-1])
    for text in (out.out, out.err, shown.out, shown.err):
        assert body[:40] not in text.replace("\n", "").replace(" ", "")


def test_every_certificate_of_the_bundle_must_be_a_ca(tmp_path: pathlib.Path, owner_ca: bytes) -> None:
    signer = certs.issue_ca("site signer", now=_now())
    leaf = certs.issue_serving(*signer, ["api.sno1.site.example.com"], now=_now())[0]
    first_leaf = leaf.split(b"-----END CERTIFICATE-----")[0] + b"-----END CERTIFICATE-----\n"
    path = _site(tmp_path, "  adminAccess:\n    clientCA: {file: owner-admin-ca.crt}\n", owner_ca + first_leaf)
    report = loader.validate(str(path))
    assert [(p.path, p.line) for p in report.problems] == [("spec.adminAccess.clientCA.file", 7)]
    assert "certificate 2 (CN api.sno1.site.example.com) is not a CA" in report.problems[0].message


def test_the_claims_name_the_objects_the_step_writes(owner_ca: bytes) -> None:
    given = {"adminAccess": {"clientCA": {"pem": owner_ca.decode()}}}
    assert [(c.kind, c.namespace, c.name) for c in admin_access.SETTING.claimed(given)] == [
        ("ConfigMap", "openshift-config", "admin-kubeconfig-client-ca"),
        ("Secret", "kube-system", "kubeadmin"),
    ]
    kept = {"adminAccess": {"clientCA": {"pem": owner_ca.decode()}, "kubeadmin": "keep"}}
    assert [c.kind for c in admin_access.SETTING.claimed(kept)] == ["ConfigMap"]
    assert admin_access.SETTING.claimed({}) == []

"""The bad-input corpus (tests/data/bad): every case fails with exit 65 and names the right path and line.

Each case is a directory with `site-config.yaml` and `expect.json` (`errors`: path + line that must be reported,
`structural`: whether the schema alone rejects it, `setup`: material generated here because it cannot be
committed: keys, expired certificates, symlinks, FIFOs, oversized files). Cases run through the real CLI entry.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import shutil
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
from cryptography.hazmat.primitives import serialization

from snoreloc.cli import main as cli
from snoreloc.pki import certs
from snoreloc.siteconfig import schema, yamlpos

CORPUS = pathlib.Path(__file__).resolve().parents[1] / "data" / "bad"
CASES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())
API = "api.sno1.site.example.com"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _write_pair(case: pathlib.Path, stem: str, chain: bytes, key: bytes) -> None:
    (case / f"{stem}.crt").write_bytes(chain)
    (case / f"{stem}.key").write_bytes(key)
    (case / f"{stem}.key").chmod(0o600)


def _api_expired(case: pathlib.Path, signer: tuple[bytes, bytes]) -> None:
    _write_pair(case, "api", *certs.issue_serving(*signer, [API], days=2, now=_now() - dt.timedelta(days=20)))


def _api_wrong_names(case: pathlib.Path, signer: tuple[bytes, bytes]) -> None:
    _write_pair(case, "api", *certs.issue_serving(*signer, ["api.other.example.com"], now=_now()))


def _api_misordered(case: pathlib.Path, signer: tuple[bytes, bytes]) -> None:
    chain, key = certs.issue_serving(*signer, [API], now=_now())
    leaf, ca = certs.parse_chain(chain)
    _write_pair(case, "api", certs.pem_bundle([ca, leaf]), key)


def _api_key_mismatch(case: pathlib.Path, signer: tuple[bytes, bytes]) -> None:
    chain, _ = certs.issue_serving(*signer, [API], now=_now())
    _write_pair(case, "api", chain, certs.issue_serving(*signer, [API], now=_now())[1])


def _api_key_encrypted(case: pathlib.Path, signer: tuple[bytes, bytes]) -> None:
    chain, key_pem = certs.issue_serving(*signer, [API], now=_now())
    key = serialization.load_pem_private_key(key_pem, password=None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"pw123456"),
    )
    _write_pair(case, "api", chain, encrypted)


def _ingress_no_wildcard(case: pathlib.Path, signer: tuple[bytes, bytes]) -> None:
    names = ["console-openshift-console.apps.sno1.site.example.com"]
    _write_pair(case, "ingress", *certs.issue_serving(*signer, names, now=_now()))


def _symlink_outside(case: pathlib.Path, signer: tuple[bytes, bytes]) -> None:
    outside = case.parent / "outside.json"
    outside.write_text('{"auths": {"r.example.com": {"auth": "dTpw"}}}')
    (case / "pull-secret.json").symlink_to(outside)


def _big_file(case: pathlib.Path, signer: tuple[bytes, bytes]) -> None:
    (case / "pull-secret.json").write_bytes(b" " * (1024 * 1024 + 1))


def _fifo(case: pathlib.Path, signer: tuple[bytes, bytes]) -> None:
    os.mkfifo(case / "pull-secret.json")


def _ca_file(case: pathlib.Path, signer: tuple[bytes, bytes]) -> None:
    (case / "ca.crt").write_bytes(signer[0])


def _admin_ca_with_key(case: pathlib.Path, signer: tuple[bytes, bytes]) -> None:
    cert, key = certs.issue_ca("owner admin CA", now=_now())
    (case / "owner-admin-ca.crt").write_bytes(cert + key)  # the key pasted beside the certificate


def _admin_ca_not_a_ca(case: pathlib.Path, signer: tuple[bytes, bytes]) -> None:
    chain, _ = certs.issue_serving(*signer, [API], now=_now())
    (case / "owner-admin-ca.crt").write_bytes(
        chain.split(b"-----END CERTIFICATE-----")[0] + b"-----END CERTIFICATE-----\n"
    )


def _admin_ca_expired(case: pathlib.Path, signer: tuple[bytes, bytes]) -> None:
    cert, _ = certs.issue_ca("owner admin CA", days=2, now=_now() - dt.timedelta(days=20))
    (case / "owner-admin-ca.crt").write_bytes(cert)


SETUPS: dict[str, Callable[[pathlib.Path, tuple[bytes, bytes]], None]] = {
    "api-expired": _api_expired,
    "api-wrong-names": _api_wrong_names,
    "api-misordered": _api_misordered,
    "api-key-mismatch": _api_key_mismatch,
    "api-key-encrypted": _api_key_encrypted,
    "ingress-no-wildcard": _ingress_no_wildcard,
    "symlink-outside": _symlink_outside,
    "big-file": _big_file,
    "fifo": _fifo,
    "ca-file": _ca_file,
    "admin-ca-with-key": _admin_ca_with_key,
    "admin-ca-not-a-ca": _admin_ca_not_a_ca,
    "admin-ca-expired": _admin_ca_expired,
}


def _expect(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CORPUS / name / "expect.json").read_text())
    return data


def _prepare(name: str, tmp_path: pathlib.Path, signer: tuple[bytes, bytes]) -> pathlib.Path:
    case = tmp_path / name
    shutil.copytree(CORPUS / name, case)
    setup = _expect(name).get("setup")
    if setup:
        SETUPS[setup](case, signer)
    return case / "site-config.yaml"


def _matches(expected: dict[str, Any], reported: list[dict[str, Any]]) -> bool:
    for found in reported:
        same_place = found["path"] == expected["path"] and found["line"] == expected["line"]
        if same_place and expected.get("message", "") in found["message"]:
            return True
    return False


def test_the_corpus_is_big_enough_and_every_setup_exists() -> None:
    assert len(CASES) >= 30
    assert {_expect(n).get("setup") for n in CASES} - {None} <= set(SETUPS)


@pytest.mark.parametrize("name", CASES)
def test_case_fails_with_its_path_and_line(
    name: str, tmp_path: pathlib.Path, signer: tuple[bytes, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    path = _prepare(name, tmp_path, signer)
    expect = _expect(name)
    assert cli.main(["validate", str(path)]) == expect["exit"] == 65
    text = capsys.readouterr()
    assert text.out == ""
    assert cli.main(["validate", "--output", "json", str(path)]) == 65
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is False
    for expected in expect["errors"]:
        assert _matches(expected, report["errors"]), (expected, report["errors"])
    rendered = [line.removeprefix("error: ") for line in text.err.splitlines() if line.startswith("error: ")]
    assert len(rendered) == len(report["errors"])  # the text output lists the same problems as the JSON
    for line, problem in zip(rendered, report["errors"], strict=True):
        assert line.startswith(f"{problem['path'] or '<document>'}: {problem['message']}")


STRUCTURAL = [name for name in CASES if _expect(name)["structural"]]


@pytest.mark.parametrize("name", STRUCTURAL)
def test_the_published_schema_alone_rejects_structural_cases(name: str) -> None:
    published = json.loads(
        (pathlib.Path(__file__).resolve().parents[2] / "docs" / "site-config.schema.json").read_text()
    )
    data = yamlpos.load((CORPUS / name / "site-config.yaml").read_bytes()).data
    assert list(jsonschema.Draft202012Validator(published).iter_errors(data))
    assert published == schema.SCHEMA


def test_annotate_marks_the_offending_lines(
    tmp_path: pathlib.Path, signer: tuple[bytes, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    path = _prepare("ipv4-address-invalid", tmp_path, signer)
    assert cli.main(["validate", "--annotate", str(path)]) == 65
    out = capsys.readouterr().out.splitlines()
    original = path.read_text().splitlines()
    tagged = [n for n, line in enumerate(out[: len(original)], start=1) if line.endswith("# E1")]
    assert tagged == [_expect("ipv4-address-invalid")["errors"][0]["line"]]
    assert out[len(original)] == "" and out[len(original) + 1].startswith("# Errors")
    assert out[len(original) + 2].startswith("# E1: spec.network.interfaces[0].ipv4.address[0].ip: ")
    assert [line.split("\t\t#")[0] for line in out[: len(original)]] == original


def test_a_case_through_a_real_subprocess(tmp_path: pathlib.Path, signer: tuple[bytes, bytes]) -> None:
    path = _prepare("interface-duplicate-name", tmp_path, signer)
    result = subprocess.run(
        [sys.executable, "-m", "snoreloc", "validate", "--output", "json", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 65
    errors = json.loads(result.stdout)["errors"]
    assert {(e["path"], e["line"]) for e in errors} == {("spec.network.interfaces[1].name", 11)}

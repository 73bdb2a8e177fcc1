"""`snoreloc fleet validate`: the agent's verdict on every site, fleet-wide checks, text, JSON and JUnit XML."""

from __future__ import annotations

import datetime as dt
import json
import pathlib
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from fleetinputs import CERTIFICATES_BLOCK, serving_pair, site_row, write_site_files, write_template

from snoreloc.cli import main as cli
from snoreloc.pki import certs

Inventory = Callable[[Sequence[str]], pathlib.Path]


def _rendered(template: pathlib.Path, inventory: pathlib.Path, out: pathlib.Path) -> pathlib.Path:
    assert (
        cli.main(["fleet", "render", "--template", str(template), "--inventory", str(inventory), "--out", str(out)])
        == 0
    )
    return out


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = cli.main(["fleet", "validate", *argv, "--output", "json"])
    return code, json.loads(capsys.readouterr().out)


def _errors(report: dict[str, Any], site: str) -> list[dict[str, Any]]:
    return next(s["errors"] for s in report["sites"] if s["site"] == site)


def test_a_valid_fleet_passes_and_junit_has_one_case_per_site(
    template_path: pathlib.Path, write_inventory: Inventory, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _rendered(template_path, write_inventory([site_row(n) for n in range(1, 6)]), tmp_path / "out")
    junit = tmp_path / "junit.xml"
    code, report = _json(capsys, str(out), "--junit", str(junit), "--unique-addresses")
    assert code == 0
    assert report["summary"] | {"seconds": 0} == {
        "sites": 5,
        "valid": 5,
        "invalid": 0,
        "warnings": 0,
        "errorsByCheck": {},
        "seconds": 0,
        "workers": report["summary"]["workers"],
    }
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "5" and suite.get("failures") == "0"
    assert [case.get("name") for case in suite.iter("testcase")] == [f"store-{n:04d}" for n in range(1, 6)]


def test_an_agent_finding_names_file_line_field_and_inventory_cell(
    template_path: pathlib.Path, write_inventory: Inventory, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _rendered(
        template_path,
        write_inventory([site_row(1), site_row(2, domain="sno..store-0002.example.com")]),
        tmp_path / "out",
    )
    junit = tmp_path / "junit.xml"
    code, report = _json(capsys, str(out), "--junit", str(junit))
    assert code == 65
    assert report["summary"]["invalid"] == 1 and report["summary"]["errorsByCheck"] == {"site-config": 1}
    (finding,) = _errors(report, "store-0002")
    assert finding["path"] == "spec.domain" and finding["line"] == 12
    assert finding["inventory"] == "sites.csv line 3, column domain"
    assert "empty label" in finding["message"]
    assert report["sites"][1]["file"] == str(out / "store-0002" / "site-config.yaml")
    failure = ET.parse(junit).getroot().find("testsuite/testcase[@name='store-0002']/failure")
    assert failure is not None and "line 12 spec.domain" in (failure.text or "")
    assert "[sites.csv line 3, column domain]" in (failure.text or "")


def test_text_output_lists_invalid_sites_and_a_summary(
    template_path: pathlib.Path, write_inventory: Inventory, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _rendered(template_path, write_inventory([site_row(1), site_row(2, prefix="33")]), tmp_path / "out")
    capsys.readouterr()
    assert cli.main(["fleet", "validate", str(out), "--jobs", "1"]) == 65
    text = capsys.readouterr().out
    assert "store-0001" not in text
    assert "store-0002: " in text and "(sites.csv line 3): INVALID" in text
    assert "2 site-configs: 1 valid, 1 invalid (errors: site-config 1)" in text


def test_duplicate_domains_fail_both_sites(
    template_path: pathlib.Path, write_inventory: Inventory, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [site_row(1), site_row(2, domain="sno.store-0001.example.com"), site_row(3)]
    code, report = _json(capsys, str(_rendered(template_path, write_inventory(rows), tmp_path / "out")))
    assert code == 65
    for site, other in (("store-0001", "store-0002"), ("store-0002", "store-0001")):
        (finding,) = _errors(report, site)
        assert finding["check"] == "duplicate-domain" and finding["line"] == 12
        assert f"also the domain of {other}" in finding["message"]
    assert _errors(report, "store-0003") == []


def test_overlapping_addresses_fail_only_when_sites_must_be_unique(
    template_path: pathlib.Path, write_inventory: Inventory, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [site_row(1), site_row(2, address="10.0.1.77"), site_row(3), site_row(4, address="10.0.4.10", prefix="16")]
    out = _rendered(template_path, write_inventory(rows), tmp_path / "out")
    assert _json(capsys, str(out))[0] == 0
    code, report = _json(capsys, str(out), "--unique-addresses")
    assert code == 65
    flagged = {s["site"] for s in report["sites"] if s["errors"]}
    assert flagged == {"store-0001", "store-0002", "store-0003", "store-0004"}  # the /16 covers the other three
    (finding,) = _errors(report, "store-0002")
    assert finding["check"] == "overlapping-addresses"
    assert finding["path"] == "spec.network.interfaces[1].ipv4.address[0].ip"
    assert finding["inventory"] == "sites.csv line 3, column address"


def test_one_certificate_at_two_sites_and_expiry_inside_the_shipping_window(
    tmp_path: pathlib.Path, write_inventory: Inventory, signer: tuple[bytes, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    template = write_template(tmp_path / "template", CERTIFICATES_BLOCK)
    # one ingress certificate covering two sites' names: valid at each site, shared between them
    names = ["*.apps.sno.store-0001.example.com", "*.apps.sno.store-0003.example.com"]
    cert, key = certs.issue_serving(*signer, names, now=dt.datetime.now(dt.UTC) - dt.timedelta(hours=1))
    for number in (1, 3):
        files = serving_pair(signer, f"sno.store-{number:04d}.example.com") | {"ingress.crt": cert, "ingress.key": key}
        write_site_files(tmp_path / "sites" / f"store-{number:04d}", files)
    write_site_files(tmp_path / "sites" / "store-0002", serving_pair(signer, "sno.store-0002.example.com", days=30))
    inventory = write_inventory([site_row(n, files=f"sites/store-{n:04d}") for n in (1, 2, 3)])
    out = _rendered(template, inventory, tmp_path / "out")
    code, report = _json(capsys, str(out), "--ship-by", "2099-01-01")
    assert code == 65
    reused = [f for f in _errors(report, "store-0003") if f["check"] == "reused-certificate"]
    assert [f["path"] for f in reused] == ["spec.certificates.ingress.certificate"]
    assert "also used by store-0001" in reused[0]["message"]
    assert reused[0]["inventory"] == "sites.csv line 4, column files"
    expiring = [f for f in _errors(report, "store-0002") if f["check"] == "expires-before-shipping"]
    assert {f["path"] for f in expiring} >= {
        "spec.certificates.api.certificate",
        "spec.certificates.ingress.certificate",
    }
    assert "inside the shipping window (--ship-by 2099-01-01)" in expiring[0]["message"]
    code, report = _json(capsys, str(out), "--ship-by", (dt.date.today() + dt.timedelta(days=7)).isoformat())
    assert {(s["site"], f["check"]) for s in report["sites"] for f in s["errors"]} == {
        ("store-0001", "reused-certificate"),
        ("store-0003", "reused-certificate"),
    }
    assert "PRIVATE" not in json.dumps(report)


def test_an_inventory_validates_as_its_rendering_does_and_unrenderable_rows_are_verdicts(
    tmp_path: pathlib.Path, write_inventory: Inventory, capsys: pytest.CaptureFixture[str]
) -> None:
    template = write_template(tmp_path / "template", CERTIFICATES_BLOCK)
    write_site_files(
        tmp_path / "sites" / "store-0001", {"api.crt": b"", "api.key": b"", "ingress.crt": b"", "ingress.key": b""}
    )
    inventory = write_inventory([site_row(1, files="sites/store-0001"), site_row(2, files="sites/store-0002")])
    code, report = _json(capsys, str(inventory), "--template", str(template), "--jobs", "2")
    assert code == 65
    one, two = report["sites"]
    assert one["file"] == "store-0001/site-config.yaml (rendered)" and not one["valid"]
    assert {e["inventory"] for e in one["errors"]} == {
        "sites.csv line 2, column files"
    }  # the empty files are the row's
    assert two["errors"][0]["check"] == "render" and "'api.crt' is in neither" in two["errors"][0]["message"]


def test_one_worker_and_two_give_the_same_verdicts(
    template_path: pathlib.Path, write_inventory: Inventory, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [site_row(n, prefix="33" if n % 7 == 0 else "24") for n in range(1, 40)]
    out = _rendered(template_path, write_inventory(rows), tmp_path / "out")
    _, serial = _json(capsys, str(out), "--jobs", "1")
    _, parallel = _json(capsys, str(out), "--jobs", "2")
    assert serial["sites"] == parallel["sites"]
    assert parallel["summary"]["invalid"] == 5 and parallel["summary"]["workers"] == 2


def test_an_inventory_without_a_template_is_a_usage_error(tmp_path: pathlib.Path, write_inventory: Inventory) -> None:
    assert cli.main(["fleet", "validate", str(write_inventory([site_row(1)]))]) == 64

"""`snoreloc demo --fleet N` end to end at a small N: what it prints (the invalid site with its finding, each node's
Site Relocated) and what it leaves in its directory (the owner's inputs, the rendered sites, the CI report, the
sticks). It runs the real commands against the hub simulator and the OpenShift simulator, both in this process."""

from __future__ import annotations

import contextlib
import csv
import pathlib
import re
import shlex
import xml.etree.ElementTree as ET

import pytest
import yaml

from snoreloc.cli import main
from snoreloc.siteconfig import medium
from snoreloc_sim.demo import bmc, fleet

pytestmark = pytest.mark.simonly


def test_the_fleet_demo_validates_relocates_and_reports(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    every_by_stick = ["--bmc-sites", "0"]  # the BMC sites' test is below
    argv = ["demo", "--fleet", "5", "--nodes", "2", *every_by_stick, "--speed", "120", "--routes", "2", "--keep"]
    argv.append(str(tmp_path))
    assert main.main(argv) == 0
    captured = capsys.readouterr()
    out = captured.out

    assert "$ snoreloc fleet render --template base.yaml --inventory sites.csv --out sites" in out
    assert "rendered 5 site-configs" in out
    invalid = next(line for line in out.splitlines() if "INVALID" in line)
    assert invalid.startswith("store-0003:") and "sites.csv line 4" in invalid
    assert "spec.network.routes.config[0].next-hop-address: is not a valid IP address" in out
    assert "[sites.csv line 4, column gateway]" in out
    assert "5 site-configs: 4 valid, 1 invalid" in out
    assert "the controller checked 5 Sites with the agent's rules" in out and "{'Invalid': 1, 'Ready': 4}" in out
    assert "made 4 sticks" in out
    for name in ("store-0001", "store-0002"):
        line = next(line for line in out.splitlines() if line.startswith(f"{name}: relocated in"))
        assert "its Site: Relocated" in line and "(the node reported run done" in line
    assert "store-0004: relocated" not in out, "--nodes 2: two nodes only"
    assert f"everything is in {tmp_path}" in out
    status = out[out.index("$ snoreloc fleet status") : out.index("$ snoreloc fleet why")]
    assert "5 sites" in status
    assert re.search(r"Invalid\s+1\n", status) and re.search(r"Ready\s+2\n", status), status
    assert re.search(r"Relocated\s+2\n", status), status
    assert "fleet/store-0003: Invalid (InvalidSiteConfig)" in out and "fleet/store-0001: Relocated (Done)" in out
    page = (tmp_path / fleet.REPORT).read_text(encoding="utf-8")
    assert f"the fleet report: {tmp_path / fleet.REPORT}" in out
    assert "5 sites" in page and "Relocated" in page and "Invalid" in page and "store-0002" in page
    needs = page[page.index('<h2 id="needs">') : page.index('<h2 id="phases">')]
    assert "store-0003" in needs and "sites.csv line 4, column gateway" in needs, "the cell to fix, on the hub"
    for line in out.splitlines():  # every file a shown command names is there after the demo
        if line.startswith("$ snoreloc "):
            for word in shlex.split(line)[2:]:
                if "/" in word and not word.startswith("-"):
                    assert (tmp_path / word).exists(), f"{line}: {word} is gone"

    suites = ET.parse(tmp_path / fleet.JUNIT).getroot()
    failed = [case.get("name") for case in suites.iter("testcase") if case.find("failure") is not None]
    assert failed == ["store-0003"]
    assert sorted(p.name for p in (tmp_path / "sticks").iterdir()) == [
        "store-0001",
        "store-0002",
        "store-0004",
        "store-0005",
    ]
    hub_file = tmp_path / "sticks" / "store-0004" / medium.HUB_FILE
    assert hub_file.stat().st_mode & 0o777 == 0o600
    stick_config = yaml.safe_load((tmp_path / "sticks" / "store-0004" / medium.SITE_CONFIG_NAME).read_text())
    assert stick_config["spec"]["domain"] == "store-0004.edge.example.net"
    assert "s3cr3t" not in out and "ZGVtby11c2VyOmRlbW8tcGFzc3dvcmQ=" not in out, "no secret in the demo's output"


def test_the_fleet_demos_bmc_sites_are_inserted_read_ejected_and_relocated_with_no_stick(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--bmc-sites 1`: the last relocating node's server gets its medium through its emulated BMC (sushy-tools),
    from the controller's image server: downloaded once, read by the node, ejected, Relocated; no stick for it."""
    if bmc.emulator_binary() is None:
        pytest.skip("sushy-tools is not installed (pip install sushy-tools): the demo delivers by stick")
    argv = ["demo", "--fleet", "3", "--nodes", "2", "--bmc-sites", "1", "--speed", "120", "--routes", "2",
            "--keep", str(tmp_path)]  # fmt: skip
    assert main.main(argv) == 0
    out = capsys.readouterr().out

    assert "store-0002" in out and "INVALID" in out, "store-0002 is the typo: store-0001 and store-0003 relocate"
    assert "store-0003's server: its BMC is sushy-tools' Redfish emulator at https://127.0.0.1:" in out
    assert "1 from their sticks, 1 of them (store-0003) from their BMC" in out
    assert "made 1 sticks" in out, "the BMC site's stick is neither asked for nor made"
    assert sorted(p.name for p in (tmp_path / "sticks").iterdir()) == ["store-0001"]
    inserted = next(line for line in out.splitlines() if line.startswith("  store-0003: the hub inserted its image"))
    assert "the BMC downloaded it once" in inserted
    medium_line = next(line for line in out.splitlines() if line.startswith("  store-0003: its medium:"))
    assert "inserted -> downloaded once -> read" in medium_line and "-> ejected" in medium_line
    assert "(the CD is empty) -> Relocated; no stick made for it" in medium_line
    relocated = next(line for line in out.splitlines() if line.startswith("store-0003: relocated in"))
    assert "its Site: Relocated" in relocated
    hub_objects = tmp_path / fleet.HUB_OBJECTS
    sites = {obj["metadata"]["name"]: obj for obj in yaml.safe_load_all((hub_objects / "sites.yaml").read_text())}
    assert sites["store-0003"]["spec"]["delivery"]["method"] == "bmc" and "delivery" not in sites["store-0001"]["spec"]
    with (tmp_path / fleet.INVENTORY).open(newline="") as inventory:
        rows = {row["name"]: row for row in csv.DictReader(inventory)}
    address = sites["store-0003"]["spec"]["delivery"]["bmc"]["address"]
    assert rows["store-0003"]["bmcAddress"] == address and rows["store-0001"]["bmcAddress"] == "", "from the inventory"
    assert "and renders again" in out
    assert (hub_objects / fleet.BMC_OBJECTS).stat().st_mode & 0o777 == 0o600, "it holds the BMC's password"
    assert bmc.PASSWORD not in out and "signature=" not in out, "no BMC password or image URL in the demo's output"


def test_the_inventory_has_one_typo_in_the_middle() -> None:
    rows, invalid = fleet.inventory_rows(50)
    assert len(rows) == 50 and invalid == "store-0026"
    assert len({row["domain"] for row in rows}) == len({row["address"] for row in rows}) == 50
    assert [row["gateway"] for row in rows if row["name"] == invalid] == ["10.0.26.256"]


def test_without_sushy_tools_the_demo_says_so_in_one_line_and_its_bmc_sites_get_sticks(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bmc, "emulator_binary", lambda: None)
    with contextlib.ExitStack() as stack:
        assert fleet.launch_bmcs(stack, tmp_path, ["store-0003"]) == {}
    said = capsys.readouterr().out.strip().splitlines()
    assert len(said) == 1 and "not installed" in said[0] and "store-0003 are delivered by stick" in said[0]

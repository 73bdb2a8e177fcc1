"""`snoreloc fleet render`: inventory rows become site directories the agent accepts, or nothing is written."""

from __future__ import annotations

import base64
import json
import pathlib
import stat
from collections.abc import Callable, Sequence

import pytest
import yaml
from fleetinputs import CERTIFICATES_BLOCK, HEADER, serving_pair, site_row, write_site_files, write_template

from snoreloc.cli import main as cli

Inventory = Callable[[Sequence[str]], pathlib.Path]


def _render(template: pathlib.Path, inventory: pathlib.Path, out: pathlib.Path) -> int:
    return cli.main(["fleet", "render", "--template", str(template), "--inventory", str(inventory), "--out", str(out)])


def test_each_row_becomes_a_site_directory_the_agent_accepts(
    template_path: pathlib.Path, write_inventory: Inventory, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inventory = write_inventory([site_row(1), site_row(2)])
    out = tmp_path / "out"
    assert _render(template_path, inventory, out) == 0
    config = yaml.safe_load((out / "store-0002" / "site-config.yaml").read_text())
    assert config["metadata"]["name"] == "store-0002"
    assert config["spec"]["domain"] == "sno.store-0002.example.com"
    address = config["spec"]["network"]["interfaces"][1]["ipv4"]["address"][0]
    assert address == {"ip": "10.0.2.10", "prefix-length": 24}  # a CSV cell of digits standing alone is a number
    assert stat.S_IMODE((out / "store-0002" / "pull-secret.json").stat().st_mode) == 0o600
    assert (out / "store-0002" / "manifests" / "00-namespace.yaml").exists()
    trace = json.loads((out / "inventory-trace.json").read_text())["sites"]["store-0002"]
    assert trace["fields"]["spec.domain"] == "sites.csv line 3, column domain"
    capsys.readouterr()
    for site in ("store-0001", "store-0002"):
        assert cli.main(["validate", str(out / site / "site-config.yaml")]) == 0, capsys.readouterr().err


def test_a_placeholder_naming_no_column_writes_nothing_and_names_both_places(
    tmp_path: pathlib.Path, write_inventory: Inventory, capsys: pytest.CaptureFixture[str]
) -> None:
    template = write_template(tmp_path / "template", "  operators:\n    require: ['${operator}']\n")
    out = tmp_path / "out"
    assert _render(template, write_inventory([site_row(1)]), out) == 65
    err = capsys.readouterr().err
    assert "${operator} names no inventory column" in err
    assert "sites.csv line 2" in err and "base.yaml line" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("header", "cell", "why"),
    [
        ("password", "hunter2", "named like a secret"),
        ("note", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----", "holds secret material"),
        ("proxy", "http://user:s3cr3tpw@proxy.example.com:3128", "holds secret material"),
    ],
)
def test_an_inventory_carrying_a_secret_is_refused_without_showing_it(
    template_path: pathlib.Path,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
    header: str,
    cell: str,
    why: str,
) -> None:
    inventory = tmp_path / "sites.csv"
    quoted = '"' + cell.replace('"', '""') + '"'
    inventory.write_text(f"name,domain,address,prefix,gateway,{header}\n{site_row(1).rsplit(',', 1)[0]},{quoted}\n")
    out = tmp_path / "out"
    assert _render(template_path, inventory, out) == 65
    captured = capsys.readouterr()
    assert why in captured.err
    for secret in ("hunter2", "MIIEvQIBADANBg", "s3cr3tpw"):
        assert secret not in captured.err + captured.out
    assert not out.exists()


def test_a_template_asking_the_inventory_for_a_key_is_refused(
    tmp_path: pathlib.Path, write_inventory: Inventory, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = "  certificates:\n    api:\n      certificate: {file: api.crt}\n      key: {pem: '${api_key}'}\n"
    template = write_template(tmp_path / "template", extra)
    assert _render(template, write_inventory([site_row(1)]), tmp_path / "out") == 65
    assert "spec.certificates.api.key.pem takes a secret" in capsys.readouterr().err


def test_a_cell_can_only_become_a_value_never_a_key(
    template_path: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inventory = tmp_path / "sites.csv"
    inventory.write_text('name,domain,address,prefix,gateway,files\nstore-0001,"x.example.com\nkind: Evil",1,24,2,\n')
    out = tmp_path / "out"
    assert _render(template_path, inventory, out) == 0
    config = yaml.safe_load((out / "store-0001" / "site-config.yaml").read_text())
    assert config["kind"] == "SiteConfig"
    assert config["spec"]["domain"] == "x.example.com\nkind: Evil"
    assert cli.main(["validate", str(out / "store-0001" / "site-config.yaml")]) == 65  # and the agent rejects it


def test_a_yaml_inventory_keeps_types_and_an_empty_value_leaves_the_key_out(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template_file = write_template(tmp_path / "template")
    extra = "  ntp:\n    servers: ${ntp}\n    pools: ['${pool}']\n"  # the example's own ntp block, replaced
    template_file.write_text(_without_block(template_file.read_text(), "  ntp:\n") + extra)
    inventory = tmp_path / "sites.yaml"
    inventory.write_text(
        "sites:\n"
        "  - name: store-0001\n    domain: sno.store-0001.example.com\n    address: 10.0.1.10\n"
        "    prefix: 24\n    gateway: 10.0.1.1\n    ntp: [ntp1.example.com, 10.0.0.123]\n    pool: ''\n"
        "  - name: store-0002\n    domain: sno.store-0002.example.com\n    address: 10.0.2.10\n"
        "    prefix: 24\n    gateway: 10.0.2.1\n    ntp: [ntp2.example.com]\n    pool: pool.example.com\n"
    )
    out = tmp_path / "out"
    assert _render(template_file, inventory, out) == 0, capsys.readouterr().err
    first = yaml.safe_load((out / "store-0001" / "site-config.yaml").read_text())["spec"]["ntp"]
    second = yaml.safe_load((out / "store-0002" / "site-config.yaml").read_text())["spec"]["ntp"]
    assert first == {"servers": ["ntp1.example.com", "10.0.0.123"], "pools": []}
    assert second == {"servers": ["ntp2.example.com"], "pools": ["pool.example.com"]}
    trace = json.loads((out / "inventory-trace.json").read_text())["sites"]["store-0002"]["fields"]
    assert trace["spec.ntp.servers"] == "sites.yaml line 14, column ntp"


def _without_block(text: str, key_line: str) -> str:
    """`text` without the top-level spec key starting at `key_line` and its more-indented lines."""
    before, after = text.split(key_line, 1)
    lines = after.splitlines(keepends=True)
    while lines and (lines[0].startswith("    ") or not lines[0].strip()):
        lines.pop(0)
    return before + "".join(lines)


def test_per_site_files_come_from_the_rows_directory(
    tmp_path: pathlib.Path, write_inventory: Inventory, signer: tuple[bytes, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    template = write_template(tmp_path / "template", CERTIFICATES_BLOCK)
    write_site_files(tmp_path / "sites" / "store-0001", serving_pair(signer, "sno.store-0001.example.com"))
    out = tmp_path / "out"
    inventory = write_inventory([site_row(1, files="sites/store-0001"), site_row(2, files="sites/store-0002")])
    assert _render(template, inventory, out) == 65
    err = capsys.readouterr().err
    assert "'api.crt' is in neither" in err and "sites.csv line 3, column files" in err
    assert not out.exists()
    write_site_files(tmp_path / "sites" / "store-0002", serving_pair(signer, "sno.store-0002.example.com"))
    assert _render(template, inventory, out) == 0
    assert (out / "store-0002" / "api.key").read_bytes() == (tmp_path / "sites" / "store-0002" / "api.key").read_bytes()
    assert stat.S_IMODE((out / "store-0002" / "api.key").stat().st_mode) == 0o600
    assert cli.main(["validate", str(out / "store-0002" / "site-config.yaml")]) == 0


def test_render_replaces_its_own_output_but_never_a_foreign_directory(
    template_path: pathlib.Path, write_inventory: Inventory, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert _render(template_path, write_inventory([site_row(1)]), out) == 0
    assert _render(template_path, write_inventory([site_row(1, address="10.9.9.10")]), out) == 0
    assert "10.9.9.10" in (out / "store-0001" / "site-config.yaml").read_text()
    (out / "store-0002").mkdir()
    (out / "store-0002" / "site-config.yaml").write_text("hand-made\n")
    assert _render(template_path, write_inventory([site_row(1, address="10.8.8.10"), site_row(2)]), out) == 64
    assert "not rendered by `snoreloc fleet render`; nothing was written" in capsys.readouterr().err
    assert (out / "store-0002" / "site-config.yaml").read_text() == "hand-made\n"
    assert "10.9.9.10" in (out / "store-0001" / "site-config.yaml").read_text()


def test_render_sites_writes_hub_objects_with_every_file_in_a_secret(
    tmp_path: pathlib.Path, write_inventory: Inventory, signer: tuple[bytes, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    template = write_template(tmp_path / "template", CERTIFICATES_BLOCK)
    for number in (1, 2):
        write_site_files(
            tmp_path / "sites" / f"store-{number:04d}", serving_pair(signer, f"sno.store-{number:04d}.example.com")
        )
    inventory = write_inventory([site_row(n, files=f"sites/store-{n:04d}") for n in (1, 2)])
    out = tmp_path / "hub"
    argv = ["fleet", "render", "--template", str(template), "--inventory", str(inventory), "--sites", str(out)]
    assert cli.main([*argv, "-n", "fleet-emea"]) == 0
    site_objects = list(yaml.safe_load_all((out / "sites.yaml").read_text()))
    secrets = {s["metadata"]["name"]: s for s in yaml.safe_load_all((out / "secrets.yaml").read_text())}
    assert stat.S_IMODE((out / "secrets.yaml").stat().st_mode) == 0o600
    assert [s["metadata"]["name"] for s in site_objects] == ["store-0001", "store-0002"]
    first = site_objects[0]
    assert first["kind"] == "Site" and first["metadata"]["namespace"] == "fleet-emea"
    assert first["metadata"]["labels"] == {"region": "emea"}
    assert first["spec"]["siteConfig"]["domain"] == "sno.store-0001.example.com"
    files = first["spec"]["files"]
    assert files["api.key"] == {"secretKeyRef": {"name": "store-0001-files", "key": "api.key"}}
    assert files["pull-secret.json"] == {"secretKeyRef": {"name": "fleet-shared-files", "key": "pull-secret.json"}}
    assert files["manifests/00-namespace.yaml"]["secretKeyRef"]["key"] == "manifests.00-namespace.yaml"
    assert set(secrets) == {"fleet-shared-files", "store-0001-files", "store-0002-files"}
    key = base64.b64decode(secrets["store-0002-files"]["data"]["api.key"])
    assert key == (tmp_path / "sites" / "store-0002" / "api.key").read_bytes()
    assert "PRIVATE KEY" not in (out / "sites.yaml").read_text()
    order = json.loads(first["metadata"]["annotations"]["fleet.snoreloc.io/key-order"])
    owners = list(first["spec"]["siteConfig"])
    assert list(order) == owners != sorted(owners), "the rendered site-config's key order, which a hub does not keep"


def test_render_sites_refuses_a_link_planted_at_its_secrets_file(
    tmp_path: pathlib.Path, write_inventory: Inventory, capsys: pytest.CaptureFixture[str]
) -> None:
    """secrets.yaml holds every site's keys: a link at its path is refused (exit 77, the agent's rule for files it
    writes) before either file is written, and the link's target is untouched."""
    template = write_template(tmp_path / "template")
    out, elsewhere = tmp_path / "hub", tmp_path / "elsewhere.yaml"
    out.mkdir(mode=0o700)
    elsewhere.write_text("not ours\n")
    (out / "secrets.yaml").symlink_to(elsewhere)
    argv = ["fleet", "render", "--template", str(template), "--inventory", str(write_inventory([site_row(1)]))]

    assert cli.main([*argv, "--sites", str(out)]) == 77

    assert elsewhere.read_text() == "not ours\n" and not (out / "sites.yaml").exists()
    assert "it is a symlink" in capsys.readouterr().err


def test_an_inventory_column_gives_each_site_its_must_boot_by_date_or_is_refused_naming_the_cell(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = write_template(tmp_path / "template")
    inventory = tmp_path / "sites.csv"
    rows = [f"{site_row(1)},2027-03-01T09:00:00Z", f"{site_row(2)},"]  # store-0002: its date is not known yet
    inventory.write_text("\n".join([f"{HEADER},mustBootBy", *rows]) + "\n")
    out = tmp_path / "hub"
    argv = ["fleet", "render", "--template", str(template), "--inventory", str(inventory), "--sites", str(out)]
    assert cli.main(argv) == 0
    first, second = yaml.safe_load_all((out / "sites.yaml").read_text())
    assert first["spec"]["shelf"] == {"mustBootBy": "2027-03-01T09:00:00Z"}
    assert "shelf" not in second["spec"]
    capsys.readouterr()
    inventory.write_text("\n".join([f"{HEADER},mustBootBy", f"{site_row(1)},next spring"]) + "\n")
    before = (out / "sites.yaml").read_text()
    assert cli.main(argv) == 65
    err = capsys.readouterr().err
    assert "sites.csv line 2, column mustBootBy" in err and "RFC 3339" in err and "nothing was written" in err
    assert (out / "sites.yaml").read_text() == before


def test_bmc_columns_give_a_site_its_delivery_in_metal3s_shape_or_are_refused_naming_the_cell(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 36: the inventory's BMC columns become `spec.delivery` (judged by the controller's own rule); a site
    without `bmcAddress` stays a stick site; a wrong cell is named and nothing is written."""
    template = write_template(tmp_path / "template")
    inventory = tmp_path / "sites.csv"
    columns = "bmcAddress,bmcCA,bmcPower,bmcDisableCertificateVerification"
    rows = [
        f"{site_row(1)},redfish-virtualmedia://10.0.0.5/redfish/v1/Systems/1,bmc-ca/ca.pem,restart,",
        f"{site_row(2)},,,,",
        f"{site_row(3)},redfish-virtualmedia+https://[fd00::5]:8443/redfish/v1/Systems/abc,,,true",
    ]
    inventory.write_text("\n".join([f"{HEADER},{columns}", *rows]) + "\n")
    out = tmp_path / "hub"
    argv = ["fleet", "render", "--template", str(template), "--inventory", str(inventory), "--sites", str(out)]
    assert cli.main(argv) == 0
    first, second, third = yaml.safe_load_all((out / "sites.yaml").read_text())
    assert first["spec"]["delivery"] == {"method": "bmc", "bmc": {
        "address": "redfish-virtualmedia://10.0.0.5/redfish/v1/Systems/1", "credentialsName": "store-0001-bmc",
        "caConfigMapKeyRef": {"name": "bmc-ca", "key": "ca.pem"}, "power": "restart"}}  # fmt: skip
    assert "delivery" not in second["spec"], "no address: the stick"
    assert third["spec"]["delivery"]["bmc"]["disableCertificateVerification"] is True
    capsys.readouterr()

    before = (out / "sites.yaml").read_text()
    leaked = f"{site_row(1)},redfish-virtualmedia://admin:hunter2@10.0.0.5/redfish/v1/Systems/1,,,"
    inventory.write_text("\n".join([f"{HEADER},{columns}", leaked]) + "\n")
    assert cli.main(argv) == 65
    err = capsys.readouterr().err
    assert "sites.csv line 2, column bmcAddress" in err and "hunter2" not in err, "refused, never quoted"
    wrong = [
        f"{site_row(2)},ipmi://10.0.0.6/redfish/v1/Systems/1,,,",
        f"{site_row(3)},redfish-virtualmedia://10.0.0.7/redfish/v1/Systems/1,bmc-ca,reboot,maybe",
    ]
    inventory.write_text("\n".join([f"{HEADER},{columns}", *wrong]) + "\n")
    assert cli.main(argv) == 65
    err = capsys.readouterr().err
    assert "sites.csv line 2, column bmcAddress" in err and "redfish-virtualmedia://" in err
    assert "sites.csv line 3, column bmcPower" in err and "sites.csv line 3, column bmcDisableCertificate" in err
    assert "nothing was written" in err and (out / "sites.yaml").read_text() == before
    checked = ["fleet", "validate", str(inventory), "--template", str(template), "--output", "json"]
    assert cli.main(checked) == 65, "validate refuses first what render would"
    report = json.loads(capsys.readouterr().out)
    cells = {f["inventory"] for s in report["sites"] for f in s["errors"] if f.get("check") == "render"}
    assert {"sites.csv line 3, column bmcPower", "sites.csv line 2, column bmcAddress"} <= cells

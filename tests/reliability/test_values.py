"""Site-config values, by class: whole numbers, YAML 1.1 readings, CIDR prefixes, SSH keys, catalog names.

The variants come from the schema and the rules themselves: every integer field the schema declares (found by
walking `schema.SCHEMA`) gets a float, and must be refused at its own path and line; every YAML 1.1 spelling gets
a warning with the reading taken at its line, and the quoted spelling none; every prefix past its family's range is
refused; every default catalog source name is refused; RSA keys below OpenSSH's minimum are refused and at it pass.
"""

from __future__ import annotations

import base64
import pathlib
import struct
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from snoreloc.siteconfig import loader, schema
from snoreloc.siteconfig.settings import catalog_sources, proxy

HEAD = "apiVersion: snoreloc.io/v1alpha1\nkind: SiteConfig\nmetadata:\n  name: site-1\nspec:\n"
DOMAIN = "  domain: sno1.site.example.com\n"


def _validate(tmp_path: pathlib.Path, body: str) -> loader.Report:
    path = tmp_path / "site-config.yaml"
    path.write_text(HEAD + DOMAIN + body)
    return loader.validate(str(path))


def _found(report: loader.Report, severity: str = "error") -> list[str]:
    chosen = report.problems if severity == "error" else report.warnings
    return [p.render() for p in chosen]


# --- every integer field refuses a float -----------------------------------------------------------------------------


def _integer_paths(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Paths (with index 0 for lists) of the schema's integer fields under `spec`, through properties and items."""
    if not isinstance(node, dict):
        return
    if node.get("type") == "integer":
        yield path
    for name, child in (node.get("properties") or {}).items():
        yield from _integer_paths(child, (*path, name))
    if isinstance(node.get("items"), dict):
        yield from _integer_paths(node["items"], (*path, 0))


INTEGER_PATHS = sorted(
    {p for p in _integer_paths(schema.SCHEMA["properties"]["spec"], ("spec",)) if "network" not in p}, key=str
)


def _nest(path: tuple[Any, ...], value: Any) -> Any:
    for part in reversed(path):
        value = [value] if isinstance(part, int) else {part: value}
    return value


def _rendered(path: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def test_the_schema_has_integer_fields_to_try() -> None:
    assert len(INTEGER_PATHS) >= 5, INTEGER_PATHS  # ports, timeouts, probe settings: the walk must find them


@pytest.mark.parametrize("path", INTEGER_PATHS, ids=_rendered)
@pytest.mark.parametrize("written", ["8090.0", "1.5e+3", "60.5"])
def test_every_integer_field_refuses_a_number_with_a_fraction(
    path: tuple[Any, ...], written: str, tmp_path: pathlib.Path
) -> None:
    text = yaml.safe_dump(_nest(path[1:], "PLACEHOLDER"), default_flow_style=False)
    body = "".join(f"  {line}\n" for line in text.splitlines()).replace("PLACEHOLDER", written)
    report = _validate(tmp_path, body)
    line = next(i for i, text in enumerate((HEAD + DOMAIN + body).splitlines(), 1) if written in text)
    wanted = f"{_rendered(path)}: must be a whole number"
    assert any(p.startswith(wanted) and f"(line {line}," in p for p in _found(report)), _found(report)


# --- YAML 1.1 readings: warned with what was read; quoted, nothing ---------------------------------------------------

YAML11 = {
    "sexagesimal": ("30:00", "1800"),
    "sexagesimal-hours": ("1:30:00", "5400"),
    "octal": ("0755", "493"),
    "binary": ("0b1010", "10"),
    "underscore": ("1_800", "1800"),
    "off": ("off", "false"),
    "on": ("on", "true"),
    "yes": ("yes", "true"),
    "no": ("No", "false"),
}


@pytest.mark.parametrize("name", sorted(YAML11))
def test_a_yaml_1_1_spelling_is_warned_with_the_reading_taken(name: str, tmp_path: pathlib.Path) -> None:
    written, reading = YAML11[name]
    report = _validate(tmp_path, f"  metadataLabel: {written}\n")  # any field: the loader judges before the schema
    warned = [w for w in _found(report, "warning") if "YAML 1.1" in w]
    assert len(warned) == 1, _found(report, "warning")
    assert warned[0].startswith("spec.metadataLabel:") and f"`{written}` was read as" in warned[0]
    assert reading in warned[0] and "(line 7," in warned[0]
    quoted = _validate(tmp_path, f'  metadataLabel: "{written}"\n')
    assert not [w for w in _found(quoted, "warning") if "YAML 1.1" in w]


def test_a_secret_value_is_never_quoted_in_a_yaml_warning(tmp_path: pathlib.Path) -> None:
    report = _validate(tmp_path, "  pullSecret:\n    inline: 12:34:56\n")
    shown = "\n".join(_found(report) + _found(report, "warning"))
    assert "12:34:56" not in shown and "45296" not in shown


# --- CIDR prefixes, SSH keys, catalog names --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cidr", "fatal"),
    [("10.0.0.0/33", True), ("10.0.0.0/99", True), ("fd00::/129", True), ("fd00::/999", True), ("10.1.2.3/24", False)],
)
def test_no_proxy_cidr_prefixes_are_their_familys(cidr: str, fatal: bool, tmp_path: pathlib.Path) -> None:
    body = f"  proxy:\n    httpProxy: http://proxy.site.example.com:3128\n    noProxy: ['{cidr}']\n"
    report = _validate(tmp_path, body)
    found = _found(report, "error" if fatal else "warning")
    assert any(p.startswith("spec.proxy.noProxy[0]:") and "(line 9," in p for p in found), found
    for good in ("10.0.0.0/32", "0.0.0.0/0", "fd00::/128", "10.0.0.0/8"):
        assert proxy.cidr_problem(good) is None


def _rsa_line(bits: int) -> str:
    def mpint(n: int) -> bytes:
        raw = n.to_bytes((n.bit_length() + 8) // 8, "big")
        return struct.pack(">I", len(raw)) + raw

    kind = b"ssh-rsa"
    blob = struct.pack(">I", len(kind)) + kind + mpint(65537) + mpint((1 << (bits - 1)) | 0xA5A5 | 1)
    return f"ssh-rsa {base64.b64encode(blob).decode()} tech@site"


@pytest.mark.parametrize(("bits", "refused"), [(512, True), (768, True), (1023, True), (1024, False), (3072, False)])
def test_rsa_keys_follow_openssh_minimum(bits: int, refused: bool, tmp_path: pathlib.Path) -> None:
    report = _validate(tmp_path, f"  sshAuthorizedKeys:\n    keys:\n      - {_rsa_line(bits)}\n")
    size_errors = [p for p in _found(report) if "RSA key" in p]
    assert bool(size_errors) == refused, _found(report)
    if refused:
        assert size_errors[0].startswith("spec.sshAuthorizedKeys.keys[0]:") and f"{bits}-bit" in size_errors[0]


@pytest.mark.parametrize("name", sorted(catalog_sources.DEFAULT_CATALOG_SOURCES))
def test_a_default_catalog_source_name_is_refused(name: str, tmp_path: pathlib.Path) -> None:
    body = f"  catalogSources:\n    sources:\n      - name: {name}\n        image: r.site.example.com/i:v1\n"
    report = _validate(tmp_path, body)
    assert any(p.startswith("spec.catalogSources.sources[0].name:") and "(line 9," in p for p in _found(report))
    assert _validate(tmp_path, body.replace(f"name: {name}", f"name: site-{name}")).valid


def test_the_network_file_is_read_by_the_same_rules(tmp_path: pathlib.Path) -> None:
    (tmp_path / "net.yaml").write_text(
        "interfaces:\n  - name: eth0\n    type: ethernet\n    state: up\n    mtu: 1500.0\n"
        "    ipv4: {enabled: true, dhcp: on}\n"
    )
    report = _validate(tmp_path, "  network: {file: net.yaml}\n")
    assert any("interfaces[0].mtu: must be a whole number" in p and "(line 5 of net.yaml)" in p for p in _found(report))
    warned = _found(report, "warning")
    assert any("interfaces[0].ipv4.dhcp: `on` was read as true" in w and "(line 6 of net.yaml)" in w for w in warned)

"""The published schema: valid Draft 2020-12, documented everywhere, committed copy current, examples accepted."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from snoreloc.cli import main as cli
from snoreloc.siteconfig import schema, yamlpos

ROOT = pathlib.Path(__file__).resolve().parents[2]
# the site-configs; base.yaml is the fleet's template (its ${column} placeholders are filled by `fleet render`, whose
# own tests run it: tests/fleetops/test_fleet_worked_example.py)
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.yaml") if p.name != "base.yaml")


def _properties(node: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        for name, sub in node.get("properties", {}).items():
            yield f"{where}.{name}", sub
        for key, sub in node.items():
            yield from _properties(sub, f"{where}/{key}")
    elif isinstance(node, list):
        for index, sub in enumerate(node):
            yield from _properties(sub, f"{where}[{index}]")


def test_schema_is_valid_draft_2020_12_with_id() -> None:
    jsonschema.Draft202012Validator.check_schema(schema.SCHEMA)
    assert schema.SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema.SCHEMA["$id"].startswith("https://")


def test_every_property_has_a_description_and_examples() -> None:
    found = list(_properties(schema.SCHEMA))
    assert len(found) > 60
    undocumented = [where for where, sub in found if not sub.get("description") or not sub.get("examples")]
    assert undocumented == []


def test_committed_schema_equals_the_command_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["schema"]) == 0
    assert capsys.readouterr().out == (ROOT / "docs" / "site-config.schema.json").read_text()


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_examples_point_at_the_schema_and_pass_it(example: pathlib.Path) -> None:
    text = example.read_text()
    assert text.startswith("# yaml-language-server: $schema=../docs/site-config.schema.json\n")
    published = json.loads((ROOT / "docs" / "site-config.schema.json").read_text())
    assert list(jsonschema.Draft202012Validator(published).iter_errors(yamlpos.load(text.encode()).data)) == []


def test_property_examples_satisfy_their_own_schema() -> None:
    """Examples an editor shows must be valid values (file references and PEM placeholders aside)."""
    registry_free = {"$defs": schema.SCHEMA.get("$defs", {})}
    for where, sub in _properties(schema.SCHEMA):
        if "x-secret" in sub or where.endswith(".pem"):
            continue
        validator = jsonschema.Draft202012Validator({**sub, **registry_free})
        for example in sub["examples"]:
            assert list(validator.iter_errors(example)) == [], (where, example)

"""The compiled yes/no check (`siteconfig.compiled`) never accepts what `jsonschema` refuses, and stays current.

A valid site-config is judged by code generated from the schema instead of `jsonschema` (start-up: docs/performance.md,
section 4). That is safe only if the generated check is never more lenient than `jsonschema`: these tests mutate
valid documents every way the schema cares about and compare the two verdicts on each.
"""

from __future__ import annotations

import copy
import importlib.util
import pathlib
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from snoreloc.siteconfig import compiled, schema, structural, yamlpos

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "site-config.yaml"
CORPUS = ROOT / "tests" / "data" / "bad"
ODD_VALUES: tuple[Any, ...] = (None, True, 0, 1, -1, 1.5, 70000, "", "x", "UPPER case", [], [1], {}, {"x": 1})


def _load(path: pathlib.Path) -> Any:
    return yamlpos.load(path.read_bytes()).data


def _example() -> dict[str, Any]:
    data = _load(EXAMPLE)
    assert isinstance(data, dict)
    return data


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*prefix, index))


def _replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    changed = copy.deepcopy(doc)
    parent = changed
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return changed


def _deleted(doc: Any, path: tuple[Any, ...]) -> Any:
    changed = copy.deepcopy(doc)
    parent = changed
    for part in path[:-1]:
        parent = parent[part]
    del parent[path[-1]]
    return changed


def _mutants(doc: Any) -> Iterator[Any]:
    """Every leaf and subtree replaced by each odd value, each key removed, an unknown key added to each mapping."""
    for path in _paths(doc):
        if not path:
            continue
        for value in ODD_VALUES:
            yield _replaced(doc, path, value)
        yield _deleted(doc, path)
    for path in _paths(doc):
        node = doc
        for part in path:
            node = node[part]
        if isinstance(node, dict):
            yield _replaced(doc, (*path, "unknownField"), "x") if path else {**doc, "unknownField": "x"}


def _disagreements(name: str, documents: Iterator[Any]) -> tuple[int, list[Any]]:
    validator = jsonschema.Draft202012Validator(compiled.SCHEMAS[name])
    count, lenient = 0, []
    for doc in documents:
        count += 1
        if compiled.accepts(name, doc) and not validator.is_valid(doc):
            lenient.append(doc)
    return count, lenient


def test_the_example_passes_the_compiled_check() -> None:
    assert compiled.accepts("site", _example())  # else every valid file would still pay for jsonschema


def test_never_accepts_a_site_config_jsonschema_refuses() -> None:
    count, lenient = _disagreements("site", _mutants(_example()))
    assert count > 1500
    assert lenient == []


def test_never_accepts_a_network_file_jsonschema_refuses() -> None:
    network = _example()["spec"]["network"]
    assert compiled.accepts("network", network)
    count, lenient = _disagreements("network", _mutants(network))
    assert count > 500
    assert lenient == []


def _parsed_cases() -> list[str]:
    """The corpus cases that reach the schema (the rest do not parse: the loader refuses them before it)."""
    cases = []
    for case in sorted(p.name for p in CORPUS.iterdir() if p.is_dir()):
        try:
            _load(CORPUS / case / "site-config.yaml")
        except yamlpos.YamlError:
            continue
        cases.append(case)
    return cases


@pytest.mark.parametrize("case", _parsed_cases())
def test_the_bad_corpus_gets_the_same_verdict(case: str) -> None:
    data = _load(CORPUS / case / "site-config.yaml")
    # The generated check may be stricter, never more lenient: a pattern's `$` ends the string there, where
    # jsonschema lets one final line break through (which `semantic` then refuses, as for ntp-server-trailing-newline).
    # A stricter verdict only sends the document on to jsonschema; a more lenient one would skip its messages.
    if compiled.accepts("site", data):
        assert jsonschema.Draft202012Validator(schema.SCHEMA).is_valid(data)


def test_a_module_generated_from_another_schema_is_not_trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    edited = {**schema.SCHEMA, "required": [*schema.SCHEMA["required"], "status"]}
    monkeypatch.setattr(compiled, "SCHEMAS", {**compiled.SCHEMAS, "site": edited})
    monkeypatch.setattr(structural, "_validator", structural._validator.__wrapped__)
    compiled._check.cache_clear()
    try:
        assert not compiled.accepts("site", _example())
        assert [f.message for f in structural.check(_example())] == ["is required"]
    finally:
        compiled._check.cache_clear()


def test_the_committed_modules_are_what_the_generator_writes() -> None:
    spec = importlib.util.spec_from_file_location("gen_schema_check", ROOT / "tools" / "gen_schema_check.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    stale = [str(path) for path, text in generator.targets().items() if path.read_text() != text]
    assert stale == [], "run .venv/bin/python tools/gen_schema_check.py"


@pytest.mark.allow_subprocess
def test_validating_a_valid_file_does_not_import_jsonschema() -> None:
    probe = (
        "import sys\nfrom snoreloc.siteconfig import loader\n"
        f"assert loader.validate({str(EXAMPLE)!r}).valid\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'jsonschema', 'referencing'}))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"

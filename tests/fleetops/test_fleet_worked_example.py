"""docs/fleet.md's worked example, as written: its inputs ship in `examples/` (base.yaml, sites.csv and the files the
template names), and the commands it shows print what it shows (the timing figures aside) and exit as it says."""

from __future__ import annotations

import pathlib
import re
import shlex
import shutil

import pytest

from snoreloc.cli import main as cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "fleet.md").read_text(encoding="utf-8")
WORKED = DOC[DOC.index("### Worked example") :]


def _blocks() -> list[str]:
    return re.findall(r"```[a-z]*\n(.*?)```", WORKED.split("\n### ", 1)[0], flags=re.S)


def _timing(text: str) -> str:
    return re.sub(r"\d+(\.\d+)? s on \d+ workers? \(\d+/s\)", "T", text)


def test_the_worked_examples_inventory_is_the_shipped_one() -> None:
    inventory = next(b for b in _blocks() if b.startswith("name,"))
    assert inventory == (ROOT / "examples" / "sites.csv").read_text(encoding="utf-8")
    template = (ROOT / "examples" / "base.yaml").read_text(encoding="utf-8")
    for placeholder in re.findall(r"\$\{\w+\}", next(b for b in _blocks() if "${name}" in b)):
        assert placeholder in template


def test_the_worked_example_runs_as_written(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "fleet-example"
    shutil.copytree(ROOT / "examples", copy)
    (copy / "pull-secret.json").chmod(0o600)  # as `make` leaves it, and `cp -rp` keeps it
    monkeypatch.chdir(copy)
    transcript = next(b for b in _blocks() if b.startswith("$ snoreloc fleet render"))
    code, ran = 0, []
    for command, shown in re.findall(r"^\$ (.+)\n((?:(?!\$ ).*\n)*)", transcript, flags=re.M):
        if command == "echo $?":
            assert str(code) == shown.strip()
            continue
        ran.append(command)
        code = cli.main(shlex.split(command)[1:])
        assert _timing(capsys.readouterr().out) == _timing(shown), command
    assert [c.split()[2] for c in ran] == ["render", "validate"] and (copy / "junit.xml").exists()

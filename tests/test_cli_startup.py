"""The instant CLI: reading verbs import no kubernetes client, and only the chosen verb's parser is built."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from snoreloc.cli import main

HEAVY = ("kubernetes", "urllib3", "tenacity")
EXAMPLE = Path(__file__).parent.parent / "examples" / "site-config.yaml"

_PROBE = """
import json, sys
from snoreloc.cli import main
code = main.main(sys.argv[1:])
heavy = sorted({name.split(".")[0] for name in sys.modules} & set(json.loads(%r)))
print(json.dumps({"code": code, "heavy": heavy}))
"""


def _modules_after(argv: list[str]) -> dict[str, object]:
    probe = _PROBE % json.dumps(HEAVY)
    done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=60, check=False)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "{}"
    return dict(json.loads(last))


@pytest.mark.allow_subprocess
@pytest.mark.parametrize(
    "argv",
    [["status", "--root", "{tmp}"], ["analyze", "--root", "{tmp}"], ["validate", str(EXAMPLE)], ["schema"]],
    ids=["status", "analyze", "validate", "schema"],
)
def test_reading_verbs_import_no_kubernetes_client(argv: list[str], tmp_path: Path) -> None:
    seen = _modules_after([arg.format(tmp=tmp_path) for arg in argv])
    assert seen["heavy"] == [], seen
    assert seen["code"] in (0, 1)


@pytest.mark.allow_subprocess
def test_version_imports_no_kubernetes_client() -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "snoreloc", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.strip().startswith("snoreloc ")
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert not imported & {*HEAVY, "yaml", "importlib.metadata"}, sorted(imported & {*HEAVY, "yaml"})


def _subparsers(argv: list[str]) -> dict[str, object]:
    parser = main.build_parser(argv)
    action = next(a for a in parser._actions if a.dest == "command")
    return dict(action.choices or {})  # type: ignore[call-overload]


def test_only_the_chosen_verb_is_built() -> None:
    built = _subparsers(["status", "--long"])
    assert list(built) == ["status"]


def test_help_still_lists_every_verb(capsys: pytest.CaptureFixture[str]) -> None:
    listed = _subparsers(["--help"])
    assert [name for name, _module in main.BUILTIN_COMMANDS] == list(listed)[: len(main.BUILTIN_COMMANDS)]
    with pytest.raises(SystemExit):
        main.main(["--help"])
    out = capsys.readouterr().out
    assert all(name in out for name, _module in main.BUILTIN_COMMANDS)


def test_a_verb_not_chosen_has_no_arguments_but_the_chosen_one_does() -> None:
    listed = _subparsers(["--help"])
    status = _subparsers(["status"])["status"]
    assert not [a for a in listed["status"]._actions if a.dest == "long"]  # type: ignore[attr-defined]
    assert [a for a in status._actions if a.dest == "long"]  # type: ignore[attr-defined]


@pytest.mark.allow_subprocess
def test_version_compiles_no_redaction_pattern() -> None:
    """Compiling the redaction patterns costs more than `--version` does otherwise: only text to mask pays."""
    probe = (
        "import sys\nfrom snoreloc import redact\nfrom snoreloc.cli import main\n"
        "try:\n    main.main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print(redact._patterns.cache_info().currsize)"
    )
    for argv in (["--version"], ["--help"]):
        done = subprocess.run(
            [sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.stdout.strip().splitlines()[-1] == "0", (argv, done.stdout, done.stderr)


def test_a_plugged_in_verb_is_built_alone() -> None:
    pytest.importorskip("snoreloc_fleet")
    assert list(_subparsers(["fleet", "status"])) == ["fleet"]  # none of the agent's own verbs is loaded
    assert "fleet" in _subparsers(["--help"])

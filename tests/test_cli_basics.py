"""The command line's first impressions: help lists exit codes, version, and fast start without kubernetes."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

import snoreloc
from snoreloc import errors
from snoreloc.cli import main as cli

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_help_lists_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.main(["--help"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    for code, text in errors.EXIT_CODE_HELP:
        assert f"{int(code):>3}  {text}" in out
    assert "validate" in out and "schema" in out


def test_validate_help_lists_exit_codes_too(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["validate", "--help"])
    out = capsys.readouterr().out
    assert "--annotate" in out and " 65  the site-config is invalid" in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.strip() == f"snoreloc {snoreloc.__version__}"


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 64
    assert "usage:" in capsys.readouterr().err


_PROBE = """
import sys
from snoreloc.cli import main
try:
    code = main.main(sys.argv[1:])
except SystemExit as stop:
    code = stop.code
heavy = sorted(m for m in sys.modules if m == "kubernetes" or m.startswith("kubernetes."))
print("HEAVY:" + ",".join(heavy), file=sys.stderr)
raise SystemExit(code)
"""


@pytest.mark.parametrize(
    ("argv", "code"),
    [(["--version"], 0), (["validate", "examples/minimal.yaml"], 0), (["schema"], 0)],
    ids=["version", "validate", "schema"],
)
def test_light_commands_do_not_import_kubernetes(argv: list[str], code: int) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == code, result.stderr
    assert "HEAVY:\n" in result.stderr, result.stderr


@pytest.mark.parametrize(
    "argv",
    [["run", "--route-workers", "0"], ["run", "--route-workers", "many"], ["status", "--no-such-flag"], ["frobnicate"]],
    ids=["workers-zero", "workers-word", "unknown-flag", "unknown-command"],
)
def test_a_usage_error_exits_64_not_argparses_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    assert stopped.value.code == int(errors.ExitCode.USAGE) == 64
    err = capsys.readouterr().err
    assert "usage:" in err and "error:" in err


def test_the_command_line_polls_at_the_engine_default_pace() -> None:
    """`--poll-interval` defaults to the Settings' default (2 s since issue 14: the settle's last look lands up to
    one interval after the last rollout ended), so a run from the command line and one from code pace alike."""
    from snoreloc.cli import common, main  # noqa: PLC0415
    from snoreloc.steps import context  # noqa: PLC0415

    argv = ["run", "--cluster-only", "--site-config", "x.yaml"]
    settings = common.make_settings(main.build_parser(argv).parse_args(argv))
    assert settings.poll_interval == context.Settings().poll_interval == 2.0


def _journal(tmp_path: pathlib.Path) -> pathlib.Path:
    from snoreloc.engine import journal  # noqa: PLC0415

    state = tmp_path / "state"
    state.mkdir()
    doc = journal.Document(state=journal.RunState.DONE, order=["csr"])
    doc.steps["csr"] = journal.StepRecord(state=journal.StepState.DONE, duration=1.5)
    (state / "status.json").write_text(json.dumps(doc.to_storage()))
    return state


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["schema"], 0),
        (["validate", "examples/minimal.yaml"], 0),
        (["analyze", "--state-dir", "{state}"], 0),
        (["analyze", "--state-dir", "{state}", "--output", "json"], 0),
        (["status", "--state-dir", "{state}", "--long"], 0),
        (["--help"], 0),
    ],
    ids=["schema", "validate", "analyze", "analyze-json", "status", "help"],
)
def test_a_reader_that_goes_away_is_not_an_internal_error(argv: list[str], code: int, tmp_path: pathlib.Path) -> None:
    """Issue 35: `snoreloc analyze | head -1` exited 70 "internal error: BrokenPipeError". The reader closing the
    pipe (here: before the verb writes anything) leaves the verb's own exit code and nothing on stderr."""
    state = _journal(tmp_path)
    args = [arg.format(state=state) for arg in argv]
    process = subprocess.Popen(
        [sys.executable, "-m", "snoreloc", *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # `| head -1` that has read its line, or `| true`
    err = process.stderr.read().decode()
    assert process.wait(timeout=60) == code, err
    assert "BrokenPipe" not in err and "internal error" not in err and "Exception ignored" not in err, err

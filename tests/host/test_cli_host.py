from __future__ import annotations

import io
import pathlib
import tarfile

import pytest
import yaml

from snoreloc.cli import main


def test_render_machineconfig_through_the_entry_point(capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main(["render-machineconfig", "--host-install", "--internal-ip", "10.9.0.2/24"]) == 0
    mc = yaml.safe_load(capsys.readouterr().out)
    assert mc["metadata"]["name"] == "99-master-snoreloc"
    assert main.main(["render-machineconfig", "--image", "x", "--internal-ip", "nonsense"]) == 64


def test_seal_off_a_terminal_needs_yes(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main.main(["seal", "--root", "/nonexistent"]) == 64
    assert "--yes" in capsys.readouterr().err


def test_collect_logs_through_the_entry_point(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "var/lib/snoreloc").mkdir(parents=True)
    (tmp_path / "var/lib/snoreloc/status.json").write_text("{}")
    output = tmp_path / "out.tar.gz"
    assert main.main(["collect-logs", "--root", str(tmp_path), "--output", str(output)]) == 0
    with tarfile.open(output) as tar:
        assert "snoreloc-logs/status.json" in tar.getnames()


def test_render_machineconfig_requires_an_internal_ip_or_the_explicit_opt_out(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main.main(["render-machineconfig", "--image", "x"]) == 64
    assert "--no-internal-ip" in capsys.readouterr().err
    assert main.main(["render-machineconfig", "--image", "x", "--no-internal-ip"]) == 0
    assert "30-snoreloc-internal-ip" not in capsys.readouterr().out
    assert main.main(["render-machineconfig", "--image", "x", "--no-internal-ip", "--internal-ip", "10.9.0.2/24"]) == 64

from __future__ import annotations

import configparser
import pathlib
import shutil

import pytest

from snoreloc.adapters import command
from snoreloc.factory import machineconfig

ANALYZE = shutil.which("systemd-analyze")


def _directives(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in text.replace("\\\n", " ").splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            found.setdefault(key.strip(), []).append(value.strip())
    return found


@pytest.mark.parametrize("runtime", list(machineconfig.Runtime))
def test_unit_has_the_required_shape(runtime: machineconfig.Runtime) -> None:
    unit = _directives(machineconfig.unit_text(runtime))
    assert unit["Type"] == ["oneshot"] and unit["RemainAfterExit"] == ["yes"]
    assert unit["NotifyAccess"] == (["all"] if runtime is machineconfig.Runtime.CONTAINER else ["main"])
    assert unit["TimeoutStartSec"] == ["90min"]
    assert unit["Restart"] == ["on-failure"]
    assert set(unit["RestartPreventExitStatus"][0].split()) == {"64", "65", "77"}
    assert unit["SyslogIdentifier"] == ["snoreloc"] and unit["StandardOutput"] == ["journal+console"]
    assert unit["ConditionPathExists"] == ["/etc/snoreloc/sealed", "!/etc/snoreloc/disabled"]
    assert "NetworkManager.service" in unit["After"]
    assert "Before" not in unit, "ordering before kubelet would deadlock: the agent starts kubelet itself"


def test_container_unit_runs_the_image_with_the_host() -> None:
    exec_start = _directives(machineconfig.unit_text(machineconfig.Runtime.CONTAINER))["ExecStart"][0]
    for flag in ("--privileged", "--net=host", "--pid=host", "--pull=never", "-v /:/host:rslave"):
        assert flag in exec_start
    assert "/run/dbus/system_bus_socket" in exec_start and "--root /host" in exec_start


@pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")
@pytest.mark.allow_subprocess
@pytest.mark.parametrize("runtime", list(machineconfig.Runtime))
def test_systemd_analyze_verify_is_clean(runtime: machineconfig.Runtime, tmp_path: pathlib.Path) -> None:
    stand_in = tmp_path / "bin"
    stand_in.write_text("#!/bin/sh\n")
    stand_in.chmod(0o755)
    text = machineconfig.unit_text(runtime)
    text = text.replace("/usr/bin/podman", str(stand_in)).replace("/usr/local/bin/snoreloc", str(stand_in))
    unit = tmp_path / "snoreloc.service"
    unit.write_text(text)
    result = command.SubprocessRunner().run([str(ANALYZE), "verify", str(unit)], timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert "snoreloc.service" not in result.stderr, result.stderr  # unknown keys are only warned about


def test_unit_parses_as_ini() -> None:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.read_string(machineconfig.unit_text(machineconfig.Runtime.HOST))
    assert parser.sections() == ["Unit", "Service", "Install"]

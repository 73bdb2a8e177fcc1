"""The systemd unit the MachineConfig installs, checked by systemd itself (`systemd-analyze verify --root`).

`verify` exits 0 even when it ignores a line it cannot parse, so the test asserts that it prints nothing. The root
holds this machine's own unit directory (for the targets the unit is ordered against), the unit, its environment
file and a stub for every program it executes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from realhost_sandbox import require

from snoreloc.factory import machineconfig

EXEC = re.compile(r"^Exec\w+=[-@:+!]*(/\S+)", re.MULTILINE)


def unit_root(tmp_path: Path, unit: str, name: str = machineconfig.UNIT_NAME) -> Path:
    root = tmp_path / "root"
    shutil.copytree("/usr/lib/systemd/system", root / "usr/lib/systemd/system", symlinks=True)
    (root / "etc/systemd/system").mkdir(parents=True)
    (root / "etc/systemd/system" / name).write_text(unit)
    (root / "etc/snoreloc").mkdir(parents=True)
    (root / "etc/snoreloc/config").write_text("SNORELOC_IMAGE=quay.io/snoreloc/snoreloc:0.1.0\nSNORELOC_ARGS=\n")
    for program in EXEC.findall(unit):
        stub = root / program.lstrip("/")
        stub.parent.mkdir(parents=True, exist_ok=True)
        stub.write_text("#!/bin/sh\nexit 0\n")
        stub.chmod(0o755)
    return root


@pytest.mark.parametrize("runtime", list(machineconfig.Runtime), ids=lambda runtime: runtime.value)
def test_systemd_analyze_verify_prints_nothing(tmp_path: Path, runtime: machineconfig.Runtime) -> None:
    require("systemd-analyze")
    unit = machineconfig.unit_text(runtime)
    assert EXEC.findall(unit), "the unit executes nothing?"
    root = unit_root(tmp_path, unit)

    done = subprocess.run(
        ["systemd-analyze", "verify", f"--root={root}", machineconfig.UNIT_NAME],
        capture_output=True,
        text=True,
        check=False,
    )

    assert done.stdout + done.stderr == ""


def test_the_dnsmasq_unit_of_node_dns_verifies_silently_with_its_ordering(tmp_path: Path) -> None:
    """The unit `render-machineconfig --node-dns` installs, with OCPBUGS-47627's `After=ovs-configuration.service`:
    systemd reads every line (a unit it cannot find for an ordering is no error: ordering pulls nothing in) and
    prints nothing, beside a stand-in for the platform's ovs-configuration.service as RHCOS ships one."""
    require("systemd-analyze")
    unit = machineconfig.dnsmasq_unit_text()
    root = unit_root(tmp_path, unit, "dnsmasq.service")
    ovs = root / "etc/systemd/system/ovs-configuration.service"
    ovs.write_text(
        "[Unit]\nDescription=stand-in\nBefore=network-online.target\n\n[Service]\nType=oneshot\nExecStart=/bin/true\n"
    )

    done = subprocess.run(
        ["systemd-analyze", "verify", f"--root={root}", "dnsmasq.service"],
        capture_output=True,
        text=True,
        check=False,
    )

    assert done.stdout + done.stderr == ""
    assert "After=network.target ovs-configuration.service" in unit.splitlines()


def test_verify_does_report_a_broken_unit(tmp_path: Path) -> None:
    """The check above can fail: systemd prints what it ignored (and still exits 0)."""
    require("systemd-analyze")
    unit = machineconfig.unit_text(machineconfig.Runtime.CONTAINER).replace("Type=oneshot", "Type=oneshot-ish")
    root = unit_root(tmp_path, unit)

    done = subprocess.run(
        ["systemd-analyze", "verify", f"--root={root}", machineconfig.UNIT_NAME],
        capture_output=True,
        text=True,
        check=False,
    )

    assert "oneshot-ish" in done.stdout + done.stderr

"""The factory MachineConfig through the real checkers: Ignition's own validator and shellcheck, for every render.

`ignition-validate` exits 0 on unknown keys and prints only a warning, so any output at all is a failure.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from realhost_sandbox import require

from snoreloc.factory import machineconfig

RENDERS = {
    "v4": ("192.168.127.10/24",),
    "v6": ("fd00:127::10/64",),
    "dual": ("192.168.127.10/24", "fd00:127::10/64"),
}


def options(render: str) -> machineconfig.FactoryOptions:
    ips = tuple(machineconfig.parse_address(text, 6 if ":" in text else 4) for text in RENDERS[render])
    return machineconfig.FactoryOptions(internal_ips=ips, image="quay.io/snoreloc/snoreloc:0.1.0")


@pytest.mark.parametrize("render", sorted(RENDERS))
def test_ignition_validate_is_silent(tmp_path: Path, render: str) -> None:
    require("ignition-validate")
    config = tmp_path / "config.ign"
    config.write_text(json.dumps(machineconfig.render(options(render))["spec"]["config"]))

    done = subprocess.run(["ignition-validate", str(config)], capture_output=True, text=True, check=False)

    assert (done.returncode, done.stdout + done.stderr) == (0, "")


@pytest.mark.parametrize("render", sorted(RENDERS))
def test_dispatcher_script_is_shellcheck_clean(tmp_path: Path, render: str) -> None:
    require("shellcheck")
    script = tmp_path / "30-snoreloc-internal-ip"
    script.write_text(machineconfig.dispatcher_script(options(render)))

    done = subprocess.run(["shellcheck", "--shell=bash", str(script)], capture_output=True, text=True, check=False)

    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_ignition_validate_is_silent_with_node_dns(tmp_path: Path) -> None:
    require("ignition-validate")
    config = tmp_path / "config.ign"
    node_dns = machineconfig.FactoryOptions(
        internal_ips=options("v4").internal_ips, image="quay.io/snoreloc/snoreloc:0.1.0", node_dns="sno1.example.com"
    )
    config.write_text(json.dumps(machineconfig.render(node_dns)["spec"]["config"]))

    done = subprocess.run(["ignition-validate", str(config)], capture_output=True, text=True, check=False)

    assert (done.returncode, done.stdout + done.stderr) == (0, "")

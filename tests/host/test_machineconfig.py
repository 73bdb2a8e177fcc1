from __future__ import annotations

import argparse
import configparser
import ipaddress
import pathlib
import shutil

import pytest

from snoreloc import errors
from snoreloc.adapters import command
from snoreloc.cli import render_machineconfig
from snoreloc.factory import machineconfig

REPO = pathlib.Path(__file__).resolve().parents[2]
V4 = ipaddress.ip_interface("192.168.127.10/24")
V6 = ipaddress.ip_interface("fd00:127::10/64")
OPTIONS = machineconfig.FactoryOptions(internal_ips=(V6, V4), image="quay.io/snoreloc/snoreloc:0.1.0")

# Like nmcli: `--get-values` escapes ':' unless `-e no` comes first; `modify` fails when told to.
FAKE_NMCLI = """#!/bin/bash
echo "nmcli $*" >> "$FAKE_STATE/calls"
escape=yes
if [[ "$1" == -e ]]; then escape="$2"; shift 2; fi
if [[ "$1" == --get-values ]]; then
    values="$(cat "$FAKE_STATE/nm-${2%%.*}" 2>/dev/null || true)"
    if [[ "$escape" == yes ]]; then values="${values//:/\\\\:}"; fi
    echo "$values"
fi
if [[ "$1 $2" == "connection modify" && -e "$FAKE_STATE/modify-fails" ]]; then
    echo "Error: Failed to modify connection: ipv6.addresses: this property is not allowed for method=disabled" >&2
    exit 4
fi
"""
FAKE_IP = """#!/bin/bash
echo "ip $*" >> "$FAKE_STATE/calls"
if [[ "$1" == -o ]]; then cat "$FAKE_STATE/ip-addr" 2>/dev/null || true; fi
"""


def _files(mc: dict[str, object]) -> dict[str, dict[str, object]]:
    return {entry["path"]: entry for entry in mc["spec"]["config"]["storage"]["files"]}  # type: ignore[index]


def test_render_returns_a_machineconfig_dict() -> None:
    mc = machineconfig.render(OPTIONS)
    assert mc["apiVersion"] == "machineconfiguration.openshift.io/v1" and mc["kind"] == "MachineConfig"
    assert mc["metadata"] == {
        "name": "99-master-snoreloc",
        "labels": {"machineconfiguration.openshift.io/role": "master"},
    }
    assert mc["spec"]["config"]["ignition"] == {"version": "3.2.0"}
    files = _files(mc)
    assert files[machineconfig.DISPATCHER_PATH]["mode"] == 0o755
    kubelet = machineconfig.decode_file(files[machineconfig.KUBELET_DROPIN])
    assert 'KUBELET_NODE_IP=192.168.127.10" "KUBELET_NODE_IPS=192.168.127.10,fd00:127::10"' in kubelet
    assert "CONTAINER_STREAM_ADDRESS=192.168.127.10" in machineconfig.decode_file(files[machineconfig.CRIO_DROPIN])
    config = machineconfig.parse_config(machineconfig.decode_file(files[machineconfig.CONFIG_PATH]))
    assert config["SNORELOC_INTERNAL_IPS"] == "192.168.127.10/24 fd00:127::10/64"
    assert config["SNORELOC_IMAGE"] == "quay.io/snoreloc/snoreloc:0.1.0"
    [unit] = mc["spec"]["config"]["systemd"]["units"]
    assert unit["name"] == "snoreloc.service" and unit["enabled"] is True
    assert unit["contents"] == machineconfig.unit_text(machineconfig.Runtime.CONTAINER)


def test_without_internal_ips_only_the_unit_and_config() -> None:
    files = _files(machineconfig.render(machineconfig.FactoryOptions(runtime=machineconfig.Runtime.HOST)))
    assert list(files) == [machineconfig.CONFIG_PATH]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (machineconfig.FactoryOptions(), "--image"),
        (machineconfig.FactoryOptions(image="x", interface="br-ex; rm -rf /"), "--interface"),
        (
            machineconfig.FactoryOptions(image="x", internal_ips=(V4, ipaddress.ip_interface("10.0.0.1/8"))),
            "one internal",
        ),
        (machineconfig.FactoryOptions(image="x", args="$(reboot)"), "--agent-args"),
    ],
)
def test_bad_options_are_usage_errors(options: machineconfig.FactoryOptions, message: str) -> None:
    with pytest.raises(errors.UsageError, match=message.replace("(", r"\(")):
        machineconfig.render(options)


def test_committed_example_is_what_the_command_prints(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    render_machineconfig.add_arguments(parser)
    argv = ["--internal-ip", "192.168.127.10/24", "--internal-ipv6", "fd00:127::10/64", "--image", OPTIONS.image]
    assert render_machineconfig.run(parser.parse_args(argv)) == 0
    assert capsys.readouterr().out == (REPO / "machineconfigs/99-master-snoreloc.yaml").read_text()


def test_cli_rejects_an_address_without_prefix() -> None:
    with pytest.raises(errors.UsageError):
        machineconfig.parse_address("192.168.127.10", 4)
    with pytest.raises(errors.UsageError):
        machineconfig.parse_address("fd00::1/64", 4)


# --- the dispatcher script, run for real with fake nmcli and ip on PATH --------------------------------------------


@pytest.fixture
def fake_bin(tmp_path: pathlib.Path) -> pathlib.Path:
    directory = tmp_path / "bin"
    directory.mkdir()
    for name, text in (("nmcli", FAKE_NMCLI), ("ip", FAKE_IP)):
        (directory / name).write_text(text)
        (directory / name).chmod(0o755)
    (tmp_path / "state").mkdir()
    return directory


def _dispatch(
    tmp_path: pathlib.Path, fake_bin: pathlib.Path, *args: str, options: machineconfig.FactoryOptions = OPTIONS
) -> list[str]:
    script = tmp_path / "30-snoreloc-internal-ip"
    script.write_text(machineconfig.dispatcher_script(options))
    script.chmod(0o755)
    state = tmp_path / "state"
    env = {"PATH": f"{fake_bin}:/usr/bin:/bin", "FAKE_STATE": str(state), "CONNECTION_UUID": "5fcd-uuid"}
    command.SubprocessRunner(env=env).run(["bash", str(script), *args], timeout=30)
    calls = state / "calls"
    return calls.read_text().splitlines() if calls.exists() else []


@pytest.mark.allow_subprocess
def test_dispatcher_adds_missing_addresses_on_its_pre_up(tmp_path: pathlib.Path, fake_bin: pathlib.Path) -> None:
    (tmp_path / "state/nm-ipv4").write_text("10.42.0.10/24\n")
    (tmp_path / "state/ip-addr").write_text("7: br-ex    inet 10.42.0.10/24 brd 10.42.0.255 scope global br-ex\n")
    assert _dispatch(tmp_path, fake_bin, "br-ex", "pre-up") == [
        "ip -o addr show dev br-ex",
        "ip addr add 192.168.127.10/24 dev br-ex",
        "nmcli -e no --get-values ipv4.addresses connection show 5fcd-uuid",
        "nmcli connection modify 5fcd-uuid +ipv4.addresses 192.168.127.10/24",
        "ip -o addr show dev br-ex",
        "ip addr add fd00:127::10/64 dev br-ex nodad",
        "nmcli -e no --get-values ipv6.addresses connection show 5fcd-uuid",
        "nmcli connection modify 5fcd-uuid +ipv6.addresses fd00:127::10/64",
    ]


@pytest.mark.allow_subprocess
def test_dispatcher_adds_to_the_device_even_when_the_profile_refuses(
    tmp_path: pathlib.Path, fake_bin: pathlib.Path
) -> None:
    (tmp_path / "state/modify-fails").write_text("")
    calls = _dispatch(tmp_path, fake_bin, "br-ex", "pre-up")
    assert "ip addr add 192.168.127.10/24 dev br-ex" in calls
    assert "ip addr add fd00:127::10/64 dev br-ex nodad" in calls


@pytest.mark.allow_subprocess
def test_dispatcher_ipv6_primary_comes_first(tmp_path: pathlib.Path, fake_bin: pathlib.Path) -> None:
    options = machineconfig.FactoryOptions(internal_ips=(V4, V6), ipv6_primary=True, image="x")
    calls = [c for c in _dispatch(tmp_path, fake_bin, "br-ex", "pre-up", options=options) if " add " in c]
    assert calls == ["ip addr add fd00:127::10/64 dev br-ex nodad", "ip addr add 192.168.127.10/24 dev br-ex"]
    assert "KUBELET_NODE_IP=fd00:127::10" in machineconfig.kubelet_dropin(options)


@pytest.mark.allow_subprocess
@pytest.mark.parametrize("args", [("eno1", "pre-up"), ("br-ex", "up"), ("br-ex", "down"), ()])
def test_dispatcher_ignores_other_interfaces_and_actions(
    tmp_path: pathlib.Path, fake_bin: pathlib.Path, args: tuple[str, ...]
) -> None:
    assert _dispatch(tmp_path, fake_bin, *args) == []


@pytest.mark.allow_subprocess
def test_dispatcher_is_idempotent(tmp_path: pathlib.Path, fake_bin: pathlib.Path) -> None:
    (tmp_path / "state/nm-ipv4").write_text("10.42.0.10/24, 192.168.127.10/24\n")
    (tmp_path / "state/nm-ipv6").write_text("fd00:127::10/64\n")
    (tmp_path / "state/ip-addr").write_text(
        "7: br-ex    inet 192.168.127.10/24 scope global br-ex\\       valid_lft forever\n"
        "7: br-ex    inet6 fd00:127::10/64 scope global nodad \\       valid_lft forever\n"
    )
    calls = _dispatch(tmp_path, fake_bin, "br-ex", "pre-up")
    assert not [call for call in calls if "modify" in call or " add " in call], calls


@pytest.mark.allow_subprocess
def test_dispatcher_ipv4_only_does_not_touch_ipv6(tmp_path: pathlib.Path, fake_bin: pathlib.Path) -> None:
    options = machineconfig.FactoryOptions(internal_ips=(V4,), image="x", interface="br-ex")
    calls = _dispatch(tmp_path, fake_bin, "br-ex", "pre-up", options=options)
    assert "ip addr add 192.168.127.10/24 dev br-ex" in calls and not any("ipv6" in c for c in calls)


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
@pytest.mark.allow_subprocess
def test_dispatcher_is_shellcheck_clean(tmp_path: pathlib.Path) -> None:
    script = tmp_path / "script"
    script.write_text(machineconfig.dispatcher_script(OPTIONS))
    result = command.SubprocessRunner().run(["shellcheck", "-s", "bash", str(script)], timeout=60, check=False)
    assert result.returncode == 0, result.stdout


# --- node-local DNS for a factory cluster installed without it (--node-dns) ----------------------------------------

NODE_DNS = machineconfig.FactoryOptions(
    internal_ips=(V4,), image="quay.io/snoreloc/snoreloc:0.1.0", node_dns="sno1.factory.example.com"
)


def test_node_dns_adds_dnsmasq_its_script_and_the_resolv_conf_dispatcher() -> None:
    mc = machineconfig.render(NODE_DNS)
    files = _files(mc)
    assert files[machineconfig.DNSMASQ_SCRIPT]["mode"] == 0o755 and files[machineconfig.FORCEDNS_PATH]["mode"] == 0o755
    assert machineconfig.decode_file(files[machineconfig.NM_UNMANAGED_RESOLV]) == "[main]\nrc-manager=unmanaged\n"
    units = {unit["name"]: unit for unit in mc["spec"]["config"]["systemd"]["units"]}
    assert units["dnsmasq.service"]["enabled"] is True
    assert "ExecStartPre=/usr/local/bin/dnsmasq_config.sh" in units["dnsmasq.service"]["contents"]
    assert machineconfig.DNSMASQ_SCRIPT not in _files(machineconfig.render(OPTIONS)), "only when asked"


def test_the_dnsmasq_unit_is_ordered_as_the_platforms_after_ovs_configuration() -> None:
    """OCPBUGS-47627: the platform's SNO unit (openshift/assisted-service internal/network/manifests_generator.go,
    commit aa1aeeca1) starts dnsmasq after ovs-configuration.service, which builds br-ex; after network.target alone
    dnsmasq could start before /etc/resolv.conf exists. Ours orders the same, read as systemd reads a unit."""
    mc = machineconfig.render(NODE_DNS)
    unit = {u["name"]: u for u in mc["spec"]["config"]["systemd"]["units"]}["dnsmasq.service"]["contents"]
    parsed = configparser.ConfigParser(strict=False, interpolation=None, comment_prefixes=("#", ";"))
    parsed.read_string(unit)
    assert parsed["Unit"]["After"].split() == ["network.target", "ovs-configuration.service"]
    assert parsed["Unit"]["Before"].split() == ["kubelet.service", "crio.service"]
    assert unit == machineconfig.dnsmasq_unit_text()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (machineconfig.FactoryOptions(image="i", node_dns="sno1.example.com"), "needs the internal address"),
        (machineconfig.FactoryOptions(internal_ips=(V4,), image="i", node_dns="Not A Domain"), "not a cluster domain"),
    ],
)
def test_bad_node_dns_options_are_usage_errors(options: machineconfig.FactoryOptions, message: str) -> None:
    with pytest.raises(errors.UsageError, match=message):
        machineconfig.render(options)


@pytest.mark.allow_subprocess
def test_the_node_dns_script_answers_the_install_names_then_the_overrides(tmp_path: pathlib.Path) -> None:
    script = tmp_path / "dnsmasq_config.sh"
    script.write_text(machineconfig.node_dns_script(NODE_DNS, "dnsmasq-config.sh").replace("/etc/", f"{tmp_path}/etc/"))
    conf = tmp_path / "etc/dnsmasq.d/single-node.conf"

    command.SubprocessRunner().run(["bash", str(script)], timeout=30)
    assert conf.read_text() == "".join(
        f"address=/{name}.sno1.factory.example.com/192.168.127.10\n" for name in ("apps", "api-int", "api")
    )

    overrides = tmp_path / "etc/default/sno_dnsmasq_configuration_overrides"
    overrides.parent.mkdir(parents=True)
    overrides.write_text("SNO_CLUSTER_NAME_OVERRIDE=store042\nSNO_BASE_DOMAIN_OVERRIDE=edge.example.net\n")
    command.SubprocessRunner().run(["bash", str(script)], timeout=30)
    assert "address=/api.store042.edge.example.net/192.168.127.10\n" in conf.read_text()


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
@pytest.mark.allow_subprocess
@pytest.mark.parametrize("name", ["dnsmasq-config.sh", "forcedns.sh"])
def test_node_dns_scripts_are_shellcheck_clean(tmp_path: pathlib.Path, name: str) -> None:
    script = tmp_path / "script"
    script.write_text(machineconfig.node_dns_script(NODE_DNS, name))
    result = command.SubprocessRunner().run(["shellcheck", "-s", "bash", str(script)], timeout=60, check=False)
    assert result.returncode == 0, result.stdout

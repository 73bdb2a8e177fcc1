"""The node's DNS overrides file (host/node_dns): our three keys merged into the factory's file, the factory
names kept answered, and rollback restoring the file byte for byte with its mode, or its absence."""

from __future__ import annotations

from pathlib import Path

import pytest

from snoreloc import errors
from snoreloc.adapters import command, fs, systemd
from snoreloc.host import node_dns

VALUES = node_dns.wanted("store042.edge.example.net", "192.168.127.10")
FACTORY_CONF = (
    "address=/apps.sno1.factory.example.com/192.168.127.10\n"
    "address=/api-int.sno1.factory.example.com/192.168.127.10\n"
    "address=/api.sno1.factory.example.com/192.168.127.10\n"
)


@pytest.fixture
def host(tmp_path: Path) -> fs.HostFS:
    root = fs.HostFS(tmp_path / "root")
    root.write_text(node_dns.SCRIPT_CONF, FACTORY_CONF)
    return root


def _units() -> systemd.Systemd:
    runner = command.FakeRunner()
    runner.on(["systemctl", "restart"], command.Result(0))
    return systemd.Systemd(runner)


def test_split_and_values() -> None:
    assert node_dns.split("store042.edge.example.net") == ("store042", "edge.example.net")
    assert VALUES == {
        "SNO_CLUSTER_NAME_OVERRIDE": "store042",
        "SNO_BASE_DOMAIN_OVERRIDE": "edge.example.net",
        "SNO_DNSMASQ_IP_OVERRIDE": "192.168.127.10",
    }


def test_a_factory_file_is_merged_and_restored_exactly(host: fs.HostFS, tmp_path: Path) -> None:
    original = b"# site tweaks\nSNO_CLUSTER_NAME_OVERRIDE=sno1\nEXTRA='kept as is'\n"
    host.write_bytes(node_dns.OVERRIDES, original, mode=0o640)
    state = tmp_path / "state"

    node_dns.write(host, state, VALUES)
    node_dns.write(host, state, VALUES)  # a re-run keeps the first original

    text = host.read_text(node_dns.OVERRIDES)
    assert text.splitlines()[0] == "# site tweaks" and "EXTRA='kept as is'" in text
    assert node_dns.parse(text) == {**VALUES, "EXTRA": "kept as is"} and host.mode(node_dns.OVERRIDES) == 0o640
    assert host.read_text(node_dns.KEPT).splitlines()[1:] == FACTORY_CONF.splitlines()
    assert node_dns.kept_domains(host)[1] == "api-int.sno1.factory.example.com"
    units = _units()

    restored = node_dns.restore(host, units, state)

    assert restored is not None and restored.existed
    assert host.read_bytes(node_dns.OVERRIDES) == original and host.mode(node_dns.OVERRIDES) == 0o640
    assert not host.exists(node_dns.KEPT)
    assert units.runner.ran("systemctl", "restart", node_dns.UNIT)  # type: ignore[attr-defined]
    assert node_dns.restore(host, units, state) is None, "nothing left to restore"


def test_an_absent_file_is_absent_again_after_rollback(host: fs.HostFS, tmp_path: Path) -> None:
    node_dns.write(host, tmp_path / "state", VALUES)
    assert host.mode(node_dns.OVERRIDES) == 0o600  # as the lifecycle agent creates it (issue 35)

    restored = node_dns.restore(host, _units(), tmp_path / "state")

    assert restored is not None and not restored.existed
    assert not host.exists(node_dns.OVERRIDES) and not host.exists(node_dns.KEPT)


def test_a_backup_of_another_path_is_refused(host: fs.HostFS, tmp_path: Path) -> None:
    state = tmp_path / "state"
    node_dns.write(host, state, VALUES)
    backup = state / node_dns.BACKUP_DIR / node_dns.BACKUP_FILES[node_dns.OVERRIDES]
    backup.write_text(backup.read_text().replace(node_dns.OVERRIDES, "/etc/shadow"))

    with pytest.raises(errors.UnavailableError, match="not a file snoreloc backs up"):
        node_dns.restore(host, _units(), state)


def _script_ran(host: fs.HostFS, domain: str) -> None:
    """What the platform's script writes at dnsmasq's restart for the overrides' `domain`."""
    host.write_text(
        node_dns.SCRIPT_CONF, "".join(f"address=/{n}.{domain}/192.168.127.10\n" for n in ("apps", "api-int", "api"))
    )


def test_an_earlier_site_is_kept_through_off_and_on_again_until_dropped(host: fs.HostFS, tmp_path: Path) -> None:
    """Issue 35: factory -> A, node-local DNS off (the factory's files back, A kept), on again for C (the factory's
    names kept again, A still kept), A dropped once the cluster is off it, rollback leaves the factory's state."""
    state, units = tmp_path / "state", _units()
    first, third = "store041.edge.example.net", "store043.edge.example.net"
    node_dns.write(host, state, node_dns.wanted(first, "192.168.127.10"))
    _script_ran(host, first)

    node_dns.restore(host, units, state, keep_used=True)
    _script_ran(host, "sno1.factory.example.com")
    assert not host.exists(node_dns.OVERRIDES) and not host.exists(node_dns.KEPT)
    assert node_dns.earlier_domains(host) == (first,) and not node_dns.backed_up(state)

    third_values = node_dns.wanted(third, "192.168.127.10")
    assert node_dns.still_answered(host, third_values) == (first,), "the factory's own names are not an earlier site's"
    node_dns.write(host, state, third_values)
    assert node_dns.kept_domains(host)[1] == "api-int.sno1.factory.example.com"
    assert node_dns.earlier_domains(host) == (first,)

    assert node_dns.drop_earlier(host, state, (first,)) == [f"apps.{first}", f"api-int.{first}", f"api.{first}"]
    assert not host.exists(node_dns.EARLIER) and node_dns.drop_earlier(host, state, (first,)) == []
    node_dns.restore(host, units, state)
    assert not any(host.exists(p) for p in (node_dns.OVERRIDES, node_dns.KEPT, node_dns.EARLIER))
    assert not list((state / node_dns.BACKUP_DIR).glob("*.json"))

from __future__ import annotations

import stat

import pytest

from snoreloc import errors
from snoreloc.adapters import fs


def test_paths_live_under_the_root(host: fs.HostFS) -> None:
    assert host.path("/etc/snoreloc/sealed") == host.root / "etc/snoreloc/sealed"
    assert host.path("etc/issue.d") == host.root / "etc/issue.d"
    assert host.host_path(host.root / "run/snoreloc/x") == "/run/snoreloc/x"
    assert host.host_path(host.root / ".hidden") == "/.hidden"


def test_climbing_out_of_the_root_is_refused(host: fs.HostFS) -> None:
    with pytest.raises(errors.InternalError):
        host.path("/etc/../../outside")


def test_atomic_write_has_the_mode_and_leaves_no_temp(host: fs.HostFS) -> None:
    host.write_text("/var/lib/snoreloc/key", "secret", mode=0o600)
    host.write_text("/var/lib/snoreloc/key", "secret2", mode=0o600)
    assert host.read_text("/var/lib/snoreloc/key") == "secret2"
    assert stat.S_IMODE(host.path("/var/lib/snoreloc/key").stat().st_mode) == 0o600
    assert host.listdir("/var/lib/snoreloc") == ["key"]


def test_mkdir_mode_remove_and_tree(host: fs.HostFS) -> None:
    host.mkdir("/var/lib/snoreloc/site-config/sub", 0o700)
    assert host.mode("/var/lib/snoreloc/site-config/sub") == 0o700
    host.write_bytes("/var/lib/snoreloc/site-config/sub/a", b"x")
    host.remove_tree("/var/lib/snoreloc/site-config")
    assert not host.exists("/var/lib/snoreloc/site-config")
    host.remove("/nothing/there")

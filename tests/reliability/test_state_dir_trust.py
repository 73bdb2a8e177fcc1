"""A state directory, lock, log and status file that someone else prepared must not become a lever on root.

Each attack plants something where snoreloc keeps its state (another owner, loose modes, symlinks to files we
would then truncate, chmod or append to, a FIFO, a huge or deeply nested status.json) and checks that snoreloc
refuses with the reason (exit 77 for a directory or file it will not trust, 69 for a status file it cannot read)
and that the planted target is byte-for-byte and mode-for-mode what it was.
"""

from __future__ import annotations

import os
import pathlib
import time
from collections.abc import Callable

import pytest

from snoreloc import errors, logs
from snoreloc.cli import main
from snoreloc.engine import journal, lock, paths

from . import figures, harness

VICTIM_TEXT = "do not touch\n"
KUBECONFIG = harness.UNREACHABLE_KUBECONFIG


def _victim(tmp_path: pathlib.Path) -> pathlib.Path:
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM_TEXT)
    victim.chmod(0o644)
    return victim


def _unchanged(victim: pathlib.Path) -> bool:
    return victim.read_text() == VICTIM_TEXT and (victim.stat().st_mode & 0o777) == 0o644


def _state(root: pathlib.Path) -> pathlib.Path:
    return root / "var/lib/snoreloc"


def _other_owner(root: pathlib.Path, victim: pathlib.Path) -> None:
    state = _state(root)
    state.mkdir(parents=True)
    (state / "snoreloc.log").symlink_to(victim)
    os.chown(state, 4321, 4321)


def _group_writable(root: pathlib.Path, victim: pathlib.Path) -> None:
    _state(root).mkdir(parents=True)
    _state(root).chmod(0o770)


def _world_writable(root: pathlib.Path, victim: pathlib.Path) -> None:
    _state(root).mkdir(parents=True)
    _state(root).chmod(0o1777)


def _symlinked_state(root: pathlib.Path, victim: pathlib.Path) -> None:
    target = victim.parent / "elsewhere"
    target.mkdir(mode=0o755)
    _state(root).parent.mkdir(parents=True)
    _state(root).symlink_to(target)


def _symlinked_backups(root: pathlib.Path, victim: pathlib.Path) -> None:
    target = victim.parent / "elsewhere"
    target.mkdir(mode=0o755)
    _state(root).mkdir(parents=True, mode=0o700)
    (_state(root) / "backups").symlink_to(target)


def _log_symlink(root: pathlib.Path, victim: pathlib.Path) -> None:
    _state(root).mkdir(parents=True, mode=0o700)
    (_state(root) / "snoreloc.log").symlink_to(victim)


def _log_fifo(root: pathlib.Path, victim: pathlib.Path) -> None:
    _state(root).mkdir(parents=True, mode=0o700)
    os.mkfifo(_state(root) / "snoreloc.log")


def _lock_symlink(root: pathlib.Path, victim: pathlib.Path) -> None:
    _state(root).mkdir(parents=True, mode=0o700)
    (_state(root) / "lock").symlink_to(victim)  # the lock lives in the state directory (paths.Paths.lock)


ATTACKS: dict[str, Callable[[pathlib.Path, pathlib.Path], None]] = {
    "state-dir-other-owner": _other_owner,
    "state-dir-group-writable": _group_writable,
    "state-dir-world-writable": _world_writable,
    "state-dir-symlink": _symlinked_state,
    "backups-dir-symlink": _symlinked_backups,
    "log-symlink": _log_symlink,
    "log-fifo": _log_fifo,
    "lock-symlink": _lock_symlink,
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_run_refuses_untrusted_state(name: str, tmp_path: pathlib.Path) -> None:
    victim = _victim(tmp_path)
    root = tmp_path / "root"
    root.mkdir()
    ATTACKS[name](root, victim)
    site = harness.write_site(tmp_path / "site")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    argv = harness.snoreloc(
        "run", "--cluster-only", "--site-config", str(site), "--kubeconfig", str(kubeconfig), "--root", str(root)
    )
    result = harness.measure(argv, timeout=30.0)
    passed = result.code == 77 and _unchanged(victim) and "refusing" in result.stderr
    figures.record("state-dir", name, passed, seconds=result.seconds)
    assert result.code == 77, result.stderr
    assert "refusing" in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert _unchanged(victim)
    elsewhere = victim.parent / "elsewhere"
    assert not elsewhere.exists() or (elsewhere.stat().st_mode & 0o777 == 0o755 and not any(elsewhere.iterdir()))


def test_trusted_state_dir_is_used(tmp_path: pathlib.Path) -> None:
    """The control: a fresh directory is created 0700 and passes the same check."""
    the_paths = paths.Paths.under(tmp_path)
    the_paths.ensure()
    assert the_paths.state_dir.stat().st_mode & 0o777 == 0o700
    assert paths.untrusted_reason(os.lstat(the_paths.state_dir)) is None


def test_lock_symlink_target_not_truncated(tmp_path: pathlib.Path) -> None:
    victim = _victim(tmp_path)
    link = tmp_path / "lock"
    link.symlink_to(victim)
    with pytest.raises(errors.PermissionDenied):
        lock.RunLock(link).acquire()
    assert _unchanged(victim)


def test_log_symlink_not_followed(tmp_path: pathlib.Path) -> None:
    victim = _victim(tmp_path)
    link = tmp_path / "snoreloc.log"
    link.symlink_to(victim)
    with pytest.raises(errors.PermissionDenied), logs.file_log(link):
        pass
    assert _unchanged(victim)


def _huge_status(path: pathlib.Path) -> None:
    with path.open("wb") as handle:
        handle.truncate(256 * 1024 * 1024)  # sparse: costs no disk, but a whole read would cost 256 MiB


def _nested_status(path: pathlib.Path) -> None:
    path.write_text("[" * 100_000 + "]" * 100_000)


def _symlink_status(path: pathlib.Path) -> None:
    target = path.parent / "elsewhere.json"
    target.write_text("{}")
    path.symlink_to(target)


def _fifo_status(path: pathlib.Path) -> None:
    os.mkfifo(path)


def _huge_integer_status(path: pathlib.Path) -> None:
    path.write_text('{"version": ' + "9" * 50_000 + "}")


STATUS_ATTACKS: dict[str, Callable[[pathlib.Path], None]] = {
    "status-256-mib": _huge_status,
    "status-nested-arrays": _nested_status,
    "status-symlink": _symlink_status,
    "status-fifo": _fifo_status,
    "status-huge-integer": _huge_integer_status,
}


@pytest.mark.parametrize("name", sorted(STATUS_ATTACKS))
def test_status_file_read_bounded(name: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    STATUS_ATTACKS[name](state / "status.json")
    started = time.perf_counter()
    with pytest.raises(errors.UnavailableError) as caught:
        journal.read(state / "status.json")
    code = main.main(["status", "--state-dir", str(state)])
    seconds = time.perf_counter() - started
    err = capsys.readouterr().err
    figures.record("state-dir", name, code == 69 and seconds < 5.0, seconds=seconds)
    assert "status.json" in str(caught.value) and caught.value.hint
    assert code == 69, err
    assert "status.json" in err and "Traceback" not in err
    assert seconds < 5.0

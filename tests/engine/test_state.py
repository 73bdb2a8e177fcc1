"""Lock, backups, fingerprints, plan rendering and the status/analyze commands, without a cluster."""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path

import pytest

from snoreloc import errors, redact
from snoreloc.adapters import kube
from snoreloc.cli import main
from snoreloc.engine import backups, fingerprint, lock, paths, plan, runner
from snoreloc.siteconfig import model
from snoreloc.steps import base

from .conftest import Harness

SECRET_REF = kube.Ref(kube.SECRETS, "pull-secret", "openshift-config")


def test_second_run_is_refused_while_the_lock_is_held(tmp_path: Path) -> None:
    the_paths = paths.Paths.under(tmp_path)
    with lock.RunLock(the_paths.lock):
        assert lock.held(the_paths.lock)
        with pytest.raises(errors.LockedError, match=r"another snoreloc run \(pid \d+\) is in progress") as info:
            lock.RunLock(the_paths.lock).acquire()
        assert info.value.exit_code == 69
    assert not lock.held(the_paths.lock)
    assert the_paths.lock == tmp_path / "var/lib/snoreloc/lock"


def test_two_state_directories_under_one_root_lock_apart(tmp_path: Path) -> None:
    """Two clusters relocated from one workstation: each state directory has its own lock."""
    first = paths.Paths.under(tmp_path, tmp_path / "cluster-a")
    second = paths.Paths.under(tmp_path, tmp_path / "cluster-b")
    with lock.RunLock(first.lock), lock.RunLock(second.lock):
        assert lock.held(first.lock) and lock.held(second.lock)
    assert first.lock.parent == first.state_dir


def test_run_command_exits_69_when_locked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "site.yaml"
    site.write_text(
        "apiVersion: snoreloc.io/v1alpha1\nkind: SiteConfig\nmetadata: {name: s1}\nspec: {domain: a.example.com}\n"
    )
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t0k3n-abcdef}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    with lock.RunLock(paths.Paths.under(tmp_path).lock):
        code = main.main(["run", "--cluster-only", "--site-config", str(site), "--kubeconfig", str(kubeconfig),
                          "--root", str(tmp_path)])  # fmt: skip
    assert code == 69
    err = capsys.readouterr().err
    assert "another snoreloc run" in err
    assert "Traceback" not in err


def test_backup_keeps_the_first_original_in_a_private_file(harness: Harness) -> None:
    store = backups.Store(harness.paths.backups, harness.clock)
    original = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pull-secret"}, "data": {"k": "djE="}}
    store.save(SECRET_REF, original)
    store.save(SECRET_REF, {**original, "data": {"k": "djI="}})
    [entry] = store.entries()
    assert entry.original == original
    assert oct(entry.path.stat().st_mode & 0o777) == "0o600"
    assert oct(harness.paths.backups.stat().st_mode & 0o777) == "0o700"


def test_restored_puts_back_spec_data_and_labels_not_status() -> None:
    original = {"kind": "X", "metadata": {"name": "a", "labels": {"a": "1"}}, "spec": {"x": [1, 2]}}
    current = {
        "kind": "X",
        "metadata": {"name": "a", "resourceVersion": "9", "labels": {"b": "2"}, "annotations": {"n": "1"}},
        "spec": {"x": [3], "y": True},
        "status": {"ok": True},
    }
    assert backups.restored(current, original) == {
        "kind": "X",
        "metadata": {"name": "a", "resourceVersion": "9", "labels": {"a": "1"}},
        "spec": {"x": [1, 2]},
        "status": {"ok": True},
    }


def test_fingerprint_is_stable_and_hides_bytes() -> None:
    one = model.SiteConfig(name="s", domain="a.example.com", pull_secret=model.PullSecret({"auths": {}}))
    two = model.SiteConfig(name="s", domain="a.example.com", pull_secret=model.PullSecret({"auths": {}}))
    other = model.SiteConfig(name="s", domain="a.example.com", pull_secret=model.PullSecret({"auths": {"x": {}}}))
    assert fingerprint.of(one) == fingerprint.of(two) != fingerprint.of(other)
    assert "auths" not in fingerprint.canonical(one)


def test_plan_masks_secret_values_but_shows_they_change() -> None:
    token = "c2VjcmV0LXRva2VuLXZhbHVlLTEyMzQ="
    redact.register_secret("hunter2-password-value")
    before = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "p"}, "data": {".dockerconfigjson": "b2xk"}}
    after = {**before, "data": {".dockerconfigjson": token}}
    change = base.ObjectChange(SECRET_REF, base.Action.UPDATE, before, after, why="pull secret hunter2-password-value")
    text = plan.render([base.Plan("cluster-config", (change,))])
    assert "~ update Secret openshift-config/pull-secret" in text
    assert token not in text and "b2xk" not in text and "hunter2" not in text
    assert text.count(redact.MASK) >= 3
    data = plan.as_json([base.Plan("cluster-config", (change,))])
    assert token not in json.dumps(data)


def test_plan_of_a_created_tls_secret_hides_the_key() -> None:
    key = base64.b64encode(b"-----BEGIN PRIVATE KEY-----\nMIIEabc\n-----END PRIVATE KEY-----\n").decode()
    obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c"}, "data": {"tls.key": key}}
    text = plan.render([base.Plan("certificates", (base.create(SECRET_REF, obj),))])
    assert key not in text
    assert "+ create" in text


def _status_doc(state: str, **steps: dict) -> dict:
    return {"state": state, "order": list(steps), "steps": steps}


@pytest.mark.parametrize(
    ("state", "code"), [("done", 0), ("failed", 1), ("done-with-warnings", 2), ("partial", 1), ("new", 1)]
)
def test_status_exit_codes(tmp_path: Path, state: str, code: int, capsys: pytest.CaptureFixture[str]) -> None:
    the_paths = paths.Paths.under(tmp_path)
    the_paths.ensure()
    the_paths.status.write_text(json.dumps(_status_doc(state, a={"state": "done", "duration": 1.5})))
    assert main.main(["status", "--root", str(tmp_path)]) == code
    assert f"status: {state}" in capsys.readouterr().out


def test_status_running_with_lock_held_is_3_and_without_is_interrupted(tmp_path: Path) -> None:
    the_paths = paths.Paths.under(tmp_path)
    the_paths.ensure()
    the_paths.status.write_text(json.dumps(_status_doc("running", a={"state": "running"})))
    with lock.RunLock(the_paths.lock):
        assert main.main(["status", "--root", str(tmp_path)]) == 3
    assert main.main(["status", "--root", str(tmp_path)]) == 1


def test_status_long_and_json_show_error_and_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    the_paths = paths.Paths.under(tmp_path)
    the_paths.ensure()
    failed = {"state": "failed", "error": {"message": "settle: timed out", "hint": "run again", "exit_code": 75}}
    the_paths.status.write_text(json.dumps(_status_doc("failed", a={"state": "done"}, b=failed)))
    main.main(["status", "--long", "--root", str(tmp_path)])
    out = capsys.readouterr().out
    assert "b: failed" in out and "error: settle: timed out" in out and "hint: run again" in out
    main.main(["status", "--output", "json", "--root", str(tmp_path)])
    assert json.loads(capsys.readouterr().out)["steps"]["b"]["error"]["hint"] == "run again"


def test_analyze_reports_per_step_timings(harness: Harness, capsys: pytest.CaptureFixture[str]) -> None:
    harness.steps[1].sleep = 30.0
    ctx, jour = harness.context()
    runner.Runner(harness.steps, ctx, jour).run()
    assert main.main(["analyze", "--root", str(harness.root), "--output", "json"]) == 0
    rows = {r["step"]: r for r in json.loads(capsys.readouterr().out)["steps"]}
    assert rows["beta"]["seconds"] == pytest.approx(30.0)
    assert rows["alpha"]["seconds"] == pytest.approx(0.0)
    main.main(["analyze", "--root", str(harness.root)])
    assert "100.0%" in capsys.readouterr().out


def test_status_wait_returns_once_the_run_ends(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    the_paths = paths.Paths.under(tmp_path)
    the_paths.ensure()
    the_paths.status.write_text(json.dumps(_status_doc("running", a={"state": "running"})))
    held = lock.RunLock(the_paths.lock)
    held.acquire()

    def finish() -> None:
        the_paths.status.write_text(json.dumps(_status_doc("done", a={"state": "done"})))
        held.release()

    timer = threading.Timer(0.3, finish)
    timer.start()
    try:
        assert main.main(["status", "--wait", "--timeout", "10", "--root", str(tmp_path)]) == 0
    finally:
        timer.join()
    assert "status: done" in capsys.readouterr().out

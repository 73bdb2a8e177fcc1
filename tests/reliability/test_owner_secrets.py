"""The owner's admin keys never leave the owner's directory, and kubeadmin's hash never leaves the site-config and
the cluster's Secret (issue 32), through the real command line against the simulator over HTTPS.

The flow a stick-only site follows: `admin-access init` on the owner's machine, the CA's certificate copied beside
the site-config (the medium), `run -vv`, `plan`, `status`, `report`, `collect-logs`, `rollback`, then
`admin-access kubeconfig`. Scanned for every base64 line of the owner's two private keys: the stdout and stderr of
every command, every file of the medium, every file under the host root (state, logs, backups), the support
bundle, and every ConfigMap and Secret the cluster holds. Scanned for the password hash (and its base64): the same,
except the cluster (its Secret holds it, which is the point) and the site-config itself. The owner's key files are
0600 and the kubeconfig too.
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import shutil
import stat
import tarfile
import textwrap

import pytest
import yaml

from snoreloc_sim.openshift import simulator

from . import harness
from .test_secret_hygiene import FAKE_JOURNALCTL, FAKE_NSENTER

pytestmark = pytest.mark.simonly  # reads the simulator's store

PASSWORD_HASH = "$2b$11$" + "Q" * 22 + "z" * 31  # well-formed bcrypt; nothing logs in with it here


def _key_lines(directory: pathlib.Path) -> list[str]:
    lines: list[str] = []
    for name in ("admin-ca.key", "admin.key"):
        pem = (directory / name).read_text()
        lines += [line for line in pem.splitlines() if len(line) >= 32 and not line.startswith("-----")]
        lines.append(base64.b64encode(pem.encode()).decode()[60:120])  # as a kubeconfig carries it (past the header)
    return lines


def _hits(outputs: dict[str, bytes], secrets: list[str]) -> list[tuple[str, str]]:
    return [
        (where, value[:6] + "...") for where, data in outputs.items() for value in secrets if value.encode() in data
    ]


def _files(base: pathlib.Path, label: str) -> dict[str, bytes]:
    return {f"{label}/{p.relative_to(base)}": p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def _mode(path: pathlib.Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.slow
def test_the_owners_keys_and_the_hash_stay_where_they_belong(
    sim: simulator.Simulator, tmp_path: pathlib.Path, root: pathlib.Path
) -> None:
    outputs: dict[str, bytes] = {}

    def command(label: str, argv: list[str], codes: tuple[int, ...], env: dict[str, str] | None = None) -> None:
        result = harness.measure(argv, timeout=120.0, env=env)
        outputs[f"{label}:stdout"], outputs[f"{label}:stderr"] = result.stdout.encode(), result.stderr.encode()
        assert result.code in codes, (label, result.code, result.stderr[-3000:])

    factory_hash = base64.b64encode(("$2a$10$" + "F" * 22 + "h" * 31).encode()).decode()
    kubeadmin = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kubeadmin", "namespace": "kube-system"}}
    if sim.cluster.store.find(sim.cluster.types["secrets"], "kubeadmin", "kube-system") is None:
        sim.cluster.store.create(sim.cluster.types["secrets"], {**kubeadmin, "data": {"kubeadmin": factory_hash}})
    owner = tmp_path / "owner"
    command("init", harness.snoreloc("admin-access", "init", "--dir", str(owner), "--name", "edge9"), (0,))
    assert {p.name: _mode(p) for p in owner.iterdir()} == {
        "admin-ca.crt": 0o644,
        "admin-ca.key": 0o600,
        "admin.crt": 0o644,
        "admin.key": 0o600,
    }
    site = harness.write_site(tmp_path / "site")
    shutil.copy(owner / "admin-ca.crt", site.parent / "owner-admin-ca.crt")
    document = yaml.safe_load(site.read_text())
    document["spec"]["adminAccess"] = {
        "clientCA": {"file": "owner-admin-ca.crt"},
        "kubeadmin": {"passwordHash": PASSWORD_HASH},
    }
    site.write_text(yaml.safe_dump(document, sort_keys=False))

    command("run -vv", harness.debug(harness.run_args(site, root, sim)), (0, 2))
    plan = harness.run_args(site, root, sim)
    plan[plan.index("run")] = "plan"
    plan.remove("--cluster-only")
    command("plan", plan, (0,))
    state = ["--root", str(root)]
    command("status", harness.snoreloc("status", "--long", *state), (0, 2))
    command("status json", harness.snoreloc("status", "--output", "json", *state), (0, 2))
    command("report json", [*harness.run_args(site, root, sim), "--output", "json"], (0, 2))
    report = json.loads(outputs["report json:stdout"])
    assert any(line.startswith("the factory's kubeadmin password") for line in report.get("revoked", [])), report
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "journalctl").write_text(textwrap.dedent(FAKE_JOURNALCTL.format(auth="none", token="none")))
    (fake_bin / "nsenter").write_text(FAKE_NSENTER)
    for tool in fake_bin.iterdir():
        tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake_bin}:{os.environ['PATH']}"}
    tarball = tmp_path / "logs.tar.gz"
    command("collect-logs", harness.snoreloc("collect-logs", *state, "--output", str(tarball)), (0,), env)

    kubeconfig = tmp_path / "owner.kubeconfig"
    api = f"https://api.{harness.NEW_DOMAIN}:6443"
    command(
        "kubeconfig",
        harness.snoreloc(
            "admin-access", "kubeconfig", "--dir", str(owner), "--server", api,
            "--api-ca", str(owner / "admin-ca.crt"), "--output", str(kubeconfig),
        ),
        (0,),
    )  # fmt: skip
    assert _mode(kubeconfig) == 0o600
    cluster = {
        f"cluster:{kind}": json.dumps(sim.cluster.store.list(sim.cluster.types[kind])).encode()
        for kind in ("secrets", "configmaps")
    }
    with tarfile.open(tarball, "r:gz") as tar:
        bundle = {f"tarball:{m.name}": f.read() for m in tar.getmembers() if (f := tar.extractfile(m)) is not None}
    medium = _files(site.parent, "medium")
    host = _files(root, "root")

    keys = _key_lines(owner)
    assert len(keys) >= 4
    assert _hits({"kubeconfig": kubeconfig.read_bytes()}, keys)  # the scan sees the key where it belongs
    everywhere = {**outputs, **medium, **host, **bundle, **cluster}
    assert _hits(everywhere, keys) == []
    hashes = [PASSWORD_HASH, base64.b64encode(PASSWORD_HASH.encode()).decode()]
    medium.pop("medium/site-config.yaml")  # the hash's one place on the medium: the site-config carries it
    assert _hits({**outputs, **medium, **host, **bundle}, hashes) == []
    assert any(PASSWORD_HASH.encode() in data or hashes[1].encode() in data for data in cluster.values())

    command("rollback", harness.snoreloc("rollback", "--kubeconfig", str(sim.kubeconfig_path), *state), (0, 2))
    assert "the factory's admin access comes back" in outputs["rollback:stderr"].decode()
    assert _hits({k: v for k, v in outputs.items() if k.startswith("rollback")}, keys + hashes) == []

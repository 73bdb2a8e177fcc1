"""What the reliability tests share: the agent as a measured subprocess, host-tree snapshots, a site to move to.

`measure` runs a command the way a technician would, through a bare launcher that reaps it with `os.wait4`, so
every case reports its own wall time and peak RSS (not the test runner's). `snapshot` records every path under a
root with its mode and a digest of its content, so "changed nothing" is one equality.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

NEW_DOMAIN = "edge9.example.net"
SITE_USER_AUTH = base64.b64encode(b"edge9-puller:Wq7-site-pull-pass-5521").decode()
MIRROR_AUTH = base64.b64encode(b"mirror-bot:Zk3-mirror-token-0918").decode()
PULL_SECRET: dict[str, Any] = {
    "auths": {
        "mirror.edge9.example.net:5000": {"auth": SITE_USER_AUTH, "email": "ops@edge9.example.net"},
        "registry.edge9.example.net": {"auth": MIRROR_AUTH},
    }
}

# A kubeconfig whose API nobody serves (port 1): for cases that must be refused before any request.
UNREACHABLE_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: not-used-here}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@dataclass(frozen=True)
class Measured:
    """How a command ended: exit code, its output, wall seconds and peak resident memory in MiB."""

    code: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss_mb: float


def snoreloc(*args: str) -> list[str]:
    """The argv of the agent, run from this interpreter (the venv the suite runs in)."""
    return [sys.executable, "-m", "snoreloc", *args]


LAUNCHER = pathlib.Path(__file__).resolve().parents[2] / "bench" / "launch.py"


def measure(argv: Sequence[str], *, timeout: float = 60.0, env: Mapping[str, str] | None = None) -> Measured:
    """Run `argv` to its end (its process group killed after `timeout`), measured by `bench/launch.py`.

    The launcher is a bare interpreter that reaps the command with `os.wait4`: Linux carries the peak RSS of the
    process that forks across `exec`, so a command started straight from a test worker reports at least the
    worker's own size. Through the launcher, a case's figure is the command's own (floored at a few MB)."""
    with tempfile.TemporaryDirectory() as tmp:
        result = pathlib.Path(tmp) / "launch.json"
        out, err = pathlib.Path(tmp) / "out", pathlib.Path(tmp) / "err"
        launcher = [sys.executable, "-I", "-S", str(LAUNCHER), str(result), *argv]
        with out.open("wb") as stdout, err.open("wb") as stderr:
            process = subprocess.Popen(
                launcher, stdout=stdout, stderr=stderr, env=dict(env) if env is not None else None,
                start_new_session=True,
            )  # fmt: skip
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait()
        facts = json.loads(result.read_text()) if result.exists() else {}
        seconds = facts.get("finished", timeout) - facts.get("started", 0.0)
        code = facts.get("exit_code", process.returncode)
        output = out.read_text(errors="replace"), err.read_text(errors="replace")
        return Measured(code, *output, seconds, facts.get("maxrss_kb", 0) / 1024)


def snapshot(root: pathlib.Path) -> dict[str, tuple[int, str]]:
    """Every path under `root` (symlinks not followed): its mode and a digest of its content or link target."""
    found: dict[str, tuple[int, str]] = {}
    for directory, names, files in os.walk(root):
        for name in names + files:
            path = pathlib.Path(directory, name)
            info = path.lstat()
            found[str(path.relative_to(root))] = (info.st_mode, _digest(path, info.st_mode))
    return found


def _digest(path: pathlib.Path, mode: int) -> str:
    if os.path.islink(path):
        return "link:" + os.readlink(path)
    if not path.is_file() or path.is_fifo():
        return ""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_site(directory: pathlib.Path, *, domain: str = NEW_DOMAIN, ca_pem: bytes | None = None) -> pathlib.Path:
    """A site-config for the simulated cluster with a file pull secret (and a registry CA file when given)."""
    directory.mkdir(parents=True, exist_ok=True)
    secret = directory / "pull-secret.json"
    secret.write_text(json.dumps(PULL_SECRET))
    secret.chmod(0o600)
    spec: dict[str, Any] = {
        "domain": domain,
        "pullSecret": {"file": "pull-secret.json"},
        "imageDigestMirrors": [
            {"source": "quay.io/openshift-release-dev/ocp-release", "mirrors": ["mirror.edge9.example.net:5000/ocp"]}
        ],
        "imageTagMirrors": [{"source": "registry.redhat.io/rhel9", "mirrors": ["mirror.edge9.example.net:5000/rhel9"]}],
        "removeMirrors": ["factory-mirror"],
    }
    if ca_pem is not None:
        (directory / "registry-ca.crt").write_bytes(ca_pem)
        spec["registryCA"] = [{"registry": "mirror.edge9.example.net:5000", "certificate": {"file": "registry-ca.crt"}}]
    document = {"apiVersion": "snoreloc.io/v1alpha1", "kind": "SiteConfig", "metadata": {"name": "edge9"}, "spec": spec}
    path = directory / "site-config.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def run_args(site: pathlib.Path, root: pathlib.Path, sim: Any, *extra: str) -> list[str]:
    """`snoreloc run --cluster-only` against `sim`, its state under `root`, time scaled to the simulator."""
    return snoreloc(
        "run", "--cluster-only", "--site-config", str(site), "--kubeconfig", str(sim.kubeconfig_path),
        "--root", str(root), "--time-scale", str(sim.speed), "--poll-interval", "2",
        "--ingress-endpoint", f"127.0.0.1:{sim.router_address[1]}", *extra,
    )  # fmt: skip


def debug(argv: list[str]) -> list[str]:
    """The same agent command with debug logging (`-vv` before the sub-command)."""
    at = argv.index("snoreloc") + 1
    return [*argv[:at], "-vv", *argv[at:]]


def site_model(ca_pem: str) -> Any:
    """The same site as `write_site`, as the loader would hand it to the engine (for in-process runs)."""
    from snoreloc.siteconfig import model  # noqa: PLC0415 (only the in-process runs need it)

    return model.SiteConfig(
        name="edge9",
        domain=NEW_DOMAIN,
        pull_secret=model.PullSecret(PULL_SECRET),
        image_digest_mirrors=(
            model.Mirror("quay.io/openshift-release-dev/ocp-release", ("mirror.edge9.example.net:5000/ocp",)),
        ),
        image_tag_mirrors=(model.Mirror("registry.redhat.io/rhel9", ("mirror.edge9.example.net:5000/rhel9",)),),
        remove_mirrors=("factory-mirror",),
        registry_ca=(model.RegistryCA("mirror.edge9.example.net:5000", ca_pem),),
    )

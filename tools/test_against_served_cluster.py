"""Run the cluster scenarios the way they run against a real cluster, with a simulator standing in for it.

The suite switches to a real cluster when `SNORELOC_TEST_KUBECONFIG` is set: the `simonly` tests are skipped, facts
come from the API, each scenario rolls back after itself, and the session checks the cluster was left as found.
No real cluster can run here, so this serves one simulator with `snoreloc sim serve` in its own process, points
that switch at it, and runs `tests/cluster` serially (one shared cluster). A scenario that still leaned on the
simulator's internals, or left the cluster changed, fails here instead of on someone's lab cluster.

Usage: python tools/test_against_served_cluster.py [pytest args...]
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPEED = "600"
STARTUP_SECONDS = 30.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start(workdir: Path, options: list[str], what: str) -> subprocess.Popen[bytes]:
    """`snoreloc sim serve OPTIONS` in its own process, its kubeconfig at workdir/kubeconfig once it serves (also
    used by tools/test_against_served_hub.py)."""
    kubeconfig = workdir / "kubeconfig"
    argv = [sys.executable, "-m", "snoreloc", "sim", "serve", *options, "--kubeconfig-out", str(kubeconfig)]
    log = (workdir / "serve.log").open("wb")
    server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + STARTUP_SECONDS
    while not kubeconfig.exists():
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            log_text = (workdir / "serve.log").read_text()
            sys.exit(f"{what} did not start within {STARTUP_SECONDS:.0f} s:\n{log_text}")
        time.sleep(0.05)
    return server


def serve(workdir: Path, router_port: int) -> subprocess.Popen[bytes]:
    return start(workdir, ["--speed", SPEED, "--router-port", str(router_port)], "the simulator")


def main(extra: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="snoreloc-served-") as tmp:
        workdir, router_port = Path(tmp), free_port()
        server = serve(workdir, router_port)
        env = dict(os.environ)
        env.update(
            SNORELOC_TEST_KUBECONFIG=str(workdir / "kubeconfig"),
            SNORELOC_TEST_INGRESS=f"127.0.0.1:{router_port}",
            SNORELOC_TEST_TIME_SCALE=SPEED,
        )
        try:
            argv = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "tests/cluster", *extra]
            return subprocess.run(argv, env=env, check=False).returncode
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

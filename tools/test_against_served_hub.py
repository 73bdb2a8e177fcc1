"""Run the hub tests the way they run against a real hub, with a hub simulator standing in for it.

The hub tests switch to a real hub when `SNORELOC_TEST_HUB_KUBECONFIG` is set: the `hubsimonly` tests are skipped,
the Site CRD is installed once and kept, and each test works in namespace `fleet`, deleted (and waited for) after
it. No real kube-apiserver can run here, so this serves one hub simulator with `snoreloc sim serve --hub` in its own
process, with the real server's 10 s token cache, points that switch at it, and runs the `realhub` tests serially
(one shared hub). A test that still leaned on the simulator's internals, assumed revocation at once, or left the
hub changed fails here instead of on someone's hub.

Usage: python tools/test_against_served_hub.py [pytest args...]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from test_against_served_cluster import start  # this directory (the script's own) is on sys.path

CACHE_SECONDS = "10"  # kube-apiserver's TokenSuccessCacheTTL (snoreloc_sim.hub.tokens.REAL_CACHE_SECONDS)
TESTS = ("tests/hub", "tests/fleetops")


def serve(workdir: Path) -> subprocess.Popen[bytes]:
    return start(workdir, ["--hub", "--token-cache-seconds", CACHE_SECONDS], "the hub simulator")


def main(extra: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="snoreloc-served-hub-") as tmp:
        workdir = Path(tmp)
        server = serve(workdir)
        env = {**os.environ, "SNORELOC_TEST_HUB_KUBECONFIG": str(workdir / "kubeconfig")}
        try:
            argv = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "-m", "realhub", *TESTS, *extra]
            return subprocess.run(argv, env=env, check=False).returncode
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A relocation run inside the test process, against a simulator, with a hook on every step transition.

The fault matrix needs to switch faults on exactly while one step runs; the engine's progress callback says when
each step plans, runs, skips and finishes, so the hook sees the same transitions the journal records.
"""

from __future__ import annotations

import pathlib
import time
from collections.abc import Callable

from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.engine import journal, order, paths, pipeline, runner
from snoreloc.siteconfig import model
from snoreloc.steps import context
from snoreloc_sim.openshift import simulator

Hook = Callable[[str, str], None]
# The fault matrix's steps, in the engine's own order: every cluster step but those this site gives no work to (the
# harness site sets no SSH keys, catalog sources, admin access, node labels, extra manifests, proxy or NTP, so those
# steps only read; the steps before them already prove faults during reads).
UNCONFIGURED = ("ssh-keys", "catalogs", "admin-access", "node-labels", "manifests", "proxy", "ntp")
STEPS = tuple(step.name for step in order.cluster_steps() if step.name not in UNCONFIGURED)
FINISHED = (journal.RunState.DONE, journal.RunState.DONE_WITH_WARNINGS)


def wait_until_up(sim: simulator.Simulator, seconds: float = 30.0) -> None:
    """Block (bounded) until the API answers and the master pool is not mid-update: a technician re-runs once the
    node is back. A pool still updating may yet drain and reboot, which on a real node would kill the run anyway."""
    deadline = time.monotonic() + seconds
    while sim.cluster.availability.down() is not None or _pool_updating(sim):
        assert time.monotonic() < deadline, f"the simulated node was not back within {seconds} s"
        time.sleep(0.05)


def _pool_updating(sim: simulator.Simulator) -> bool:
    pools = sim.cluster.types["machineconfigpools.machineconfiguration.openshift.io"]
    pool = sim.cluster.store.find(pools, "master", "") or {}
    found = {c.get("type"): c.get("status") for c in (pool.get("status") or {}).get("conditions") or []}
    return found.get("Updating") == "True"


def client_for(sim: simulator.Simulator, *, read_timeout: float = 30.0) -> kube.Client:
    scaled = clock_mod.ScaledClock(sim.speed)
    return kube.Client.from_kubeconfig(
        str(sim.kubeconfig_path), clock=scaled, policy=kube.Policy(read_timeout=read_timeout)
    )


def relocate(
    sim: simulator.Simulator, site: model.SiteConfig, root: pathlib.Path, hook: Hook | None = None, **client: float
) -> runner.Result:
    """One `run --cluster-only` with state under `root`; raises what the engine raises."""
    settings = context.Settings(ingress_endpoint=sim.router_address, poll_interval=2.0, csr_wait=30.0)
    request = pipeline.Request(
        site, paths.Paths.under(root), runner.Options(), settings, resolve=lambda _: ["127.0.0.1"]
    )
    api = client_for(sim, **client)
    try:
        return pipeline.execute(request, api, clock_mod.ScaledClock(sim.speed), progress=hook)
    finally:
        api.close()

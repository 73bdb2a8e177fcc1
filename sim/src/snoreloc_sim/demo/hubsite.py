"""Sites on a simulated hub and their sticks, for the fleet demo (`snoreloc demo --fleet N`); the hub's tests
prepare their hub with the same `prepare_hub`, and their node relocates with the same `flow.relocate`.

The hub is prepared as `snoreloc fleet install` would leave it for Sites (the CRD from the shipped `deploy/`, a
namespace); a stick is what `snoreloc fleet make-media --out-dir` writes, its credential asked for as that command
asks (for many sticks at once, then made one by one). Like the rest of `snoreloc_sim.demo`, this sits outside the
product layers and may import the agent, the fleet and the simulator.
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

from snoreloc_fleet.controller import reconcile
from snoreloc_fleet.resource import site
from snoreloc_fleet.verbs import install
from snoreloc_fleet.verbs import make_media as makemedia

from snoreloc.siblings import clock, kube, waits

SITES = reconcile.SITES


def prepare_hub(admin: kube.Client, namespace: str) -> None:
    """The fleet's CRDs (Site, Wave: from the shipped deploy/ files, as `fleet install` applies them) and the Sites'
    namespace."""
    for crd in (obj for obj in install.manifests() if obj["kind"] == "CustomResourceDefinition"):
        admin.create(install.KINDS[(crd["apiVersion"], crd["kind"])], crd)
    admin.create(install.KINDS[("v1", "Namespace")], {"metadata": {"name": namespace}})


def phases(admin: kube.Client, namespace: str) -> collections.Counter[str]:
    """How many Sites of the namespace are in each phase ("" for a Site the controller has not seen yet)."""
    listed = admin.list(SITES, namespace)
    return collections.Counter(str((obj.get("status") or {}).get("phase", "")) for obj in listed)


def wait_phase(
    admin: kube.Client, namespace: str, name: str, phase: site.Phase, budget: float, *, hint: str = ""
) -> dict[str, Any]:
    """Site `name` once its status.phase is `phase`; WaitTimeout (with `hint`) after `budget` seconds."""

    def reached() -> dict[str, Any] | None:
        obj = admin.get(kube.Ref(SITES, name, namespace))
        return obj if (obj.get("status") or {}).get("phase") == phase.value else None

    wait = waits.Wait("fleet-demo", f"site {name} to be {phase.value}", budget, 0.2, 15.0, hint)
    return waits.until(reached, wait, clock.SystemClock())


def ask_for_sticks(admin: kube.Client, namespace: str, names: list[str], budget: float, *, hint: str = "") -> None:
    """Ask the hub for the reporting credentials of `names` at once, as `fleet make-media` asks for each (its
    media-requested annotation), and wait (at most `budget` seconds) until the controller has issued them all: the
    sticks are then made one after the other without waiting each in turn."""
    system = clock.SystemClock()
    asked = {name: makemedia.request(admin, namespace, name, system) for name in names}

    def issued() -> int | None:
        for name, stamp in list(asked.items()):  # those issued are not asked about again
            if makemedia.settled(admin, admin.get(kube.Ref(SITES, name, namespace)), stamp, system.now()) is not None:
                del asked[name]
        return None if asked else len(names)

    wait = waits.Wait(
        "fleet-demo", f"the controller to issue {len(names)} reporting credentials", budget, 0.5, 15.0, hint
    )
    waits.until(issued, wait, system)


def make_stick(admin: kube.Client, namespace: str, name: str, out: Path) -> list[str]:
    """What `snoreloc fleet make-media NAME --out-dir OUT` writes (the hub's reporting kubeconfig included, asked
    for when not issued yet); the files' names."""
    tree = makemedia.make(admin, namespace, name)
    makemedia.write_dir(out, tree)
    return sorted(tree)

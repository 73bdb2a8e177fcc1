"""Sites on a simulated hub and their sticks: the pieces the fleet demo (`snoreloc demo --fleet N`) and the hub's
end-to-end test (`tests/hub/test_fleet_e2e.py`) both drive (the node that then relocates is `flow.relocate`).

The hub is prepared as `snoreloc fleet install` would leave it for Sites (the CRD from the shipped `deploy/`, a
namespace); a Site's files are kept as a fleet owner keeps them (the pull secret in a Secret, the rest in a
ConfigMap) and referenced from `spec.files`; a stick is what `snoreloc fleet make-media` writes. Like the rest of
`snoreloc_sim.demo`, this sits outside the product layers and may import the agent, the fleet and the simulator.
"""

from __future__ import annotations

import base64
import collections
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from snoreloc_fleet import install, makemedia, site
from snoreloc_fleet.controller import reconcile

from snoreloc import waits
from snoreloc.adapters import clock, kube

SECRET_FILES = frozenset({"pull-secret.json"})  # of the demo's files, the ones kept in a Secret
SITES = reconcile.SITES


def prepare_hub(admin: kube.Client, namespace: str) -> None:
    """The Site CRD (from the shipped deploy/ files, as `fleet install` applies it) and the Sites' namespace."""
    crd = next(obj for obj in install.manifests() if obj["kind"] == "CustomResourceDefinition")
    admin.create(install.KINDS[(crd["apiVersion"], crd["kind"])], crd)
    admin.create(install.KINDS[("v1", "Namespace")], {"metadata": {"name": namespace}})


def _key(file: str) -> str:
    return file.replace("/", "_")  # a Secret's or ConfigMap's key holds no slash


def keep_files(admin: kube.Client, namespace: str, holder: str, files: Mapping[str, bytes]) -> dict[str, Any]:
    """Store a Site's files in Secret `<holder>-secrets` and ConfigMap `<holder>-files`; the Site's `spec.files`."""
    secret = {_key(k): base64.b64encode(v).decode() for k, v in files.items() if k in SECRET_FILES}
    plain = {_key(k): v.decode() for k, v in files.items() if k not in SECRET_FILES}
    admin.create(kube.SECRETS, {"metadata": {"name": f"{holder}-secrets", "namespace": namespace}, "data": secret})
    admin.create(kube.CONFIGMAPS, {"metadata": {"name": f"{holder}-files", "namespace": namespace}, "data": plain})
    refs = {}
    for file in files:
        kind, suffix = ("secretKeyRef", "secrets") if file in SECRET_FILES else ("configMapKeyRef", "files")
        refs[file] = {kind: {"name": f"{holder}-{suffix}", "key": _key(file)}}
    return refs


def apply_site(
    admin: kube.Client, namespace: str, name: str, config: Mapping[str, Any], refs: Mapping[str, Any]
) -> None:
    """Create Site `name` with site-config spec `config` and file references `refs` (from `keep_files`)."""
    obj = {
        "apiVersion": site.API_VERSION, "kind": site.KIND, "metadata": {"name": name, "namespace": namespace},
        "spec": {"siteConfig": dict(config), "files": dict(refs)},
    }  # fmt: skip
    admin.create(SITES, obj)


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


def make_stick(admin: kube.Client, namespace: str, name: str, out: Path) -> list[str]:
    """What `snoreloc fleet make-media NAME --out-dir OUT` writes (the hub's reporting kubeconfig included); the
    files' names."""
    tree = makemedia.make(admin, namespace, name)
    makemedia.write_dir(out, tree)
    return sorted(tree)

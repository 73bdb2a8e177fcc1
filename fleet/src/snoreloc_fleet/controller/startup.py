"""The controller's start-up: wait until the API serves the Site CRD, then let kopf watch Sites.

On a hub the controller and its CRD arrive in any order (`kubectl apply -k`, Argo CD syncing a directory). kopf
(1.45, `kopf/_core/reactor/observation.py`, `resource_observer`) resolves the resources its handlers name once, by
discovery, when it starts; with `settings.scanning.disabled` (ours: the controller may not list CRDs cluster-wide,
and watching every CRD of a hub for one of them is waste) it never looks again, so a controller started before the
CRD logged "Unresolved resources cannot be served (try creating their CRDs)" once and served nothing for ever
(issue 34 saw it on a real kube-apiserver and on the hub simulator; a kopf user reports the same at start-up in
azimuth-cloud/zenith issue 15; kopf's documentation and issues say no more than its module's docstring).
With scanning enabled kopf would watch `customresourcedefinitions` and rescan: a cluster-wide list/watch the
controller's RBAC does not grant (`deploy/rbac.yaml`), and which kopf, when refused, also only warns about.

So before kopf starts, `until_served` asks discovery (`GET /apis/<group>/<version>`, which every authenticated
client may read: the `system:discovery` ClusterRole) whether `sites` is served, each attempt bounded by the client's
connect and read timeouts and none retried inside (`retry=False`), and keeps asking with a back-off from
`FIRST_S` doubling to `EVERY_S` for as long as the controller runs. Visible: a log line at each attempt (so at most
one a `EVERY_S` once it has waited a while) and the gauge `snoreloc_fleet_site_crd_served` (0 while waiting, 1
once served). A CRD deleted after the controller started is outside this: kopf's watch then fails and retries on
its own (its log says so).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from snoreloc.siblings import kube
from snoreloc_fleet.resource import site

LOG = logging.getLogger(__name__)
FIRST_S = 1.0  # the first pause after "not served yet"
EVERY_S = 30.0  # the longest pause between two looks (and so between two log lines)
DISCOVERY_PATH = f"/apis/{site.GROUP}/{site.VERSION}"
CRD_NAME = site.CRD_NAME


def served(client: kube.Client) -> str | None:
    """None when the API serves `sites` now; otherwise why not (one request, not retried)."""
    try:
        document = client.request("GET", DISCOVERY_PATH, retry=False)
    except kube.NotFound:
        return f"{DISCOVERY_PATH} is not served (the CRD {CRD_NAME} is not installed or not yet Established)"
    except (kube.Unreachable, kube.ApiError) as exc:
        return f"discovery failed: {exc}"
    names = {str(entry.get("name", "")) for entry in (document or {}).get("resources") or []}
    if site.PLURAL in names:
        return None
    return f"{DISCOVERY_PATH} does not list {site.PLURAL} yet"


def until_served(
    client: kube.Client,
    stop: threading.Event,
    *,
    report: Callable[[bool], None] = lambda _: None,
    first: float = FIRST_S,
    every: float = EVERY_S,
) -> bool:
    """Wait until the API serves Sites (True) or `stop` is set (False). `report(served)` is called at each look."""
    started, pause, attempt = time.monotonic(), first, 0
    while True:
        attempt += 1
        why = served(client)
        report(why is None)
        if why is None:
            if attempt > 1:
                LOG.info("the CRD %s is served after %.0fs: serving Sites", CRD_NAME, time.monotonic() - started)
            return True
        LOG.warning(
            "waiting for the CRD %s (attempt %d, %.0fs so far, next look in %gs): %s",
            CRD_NAME, attempt, time.monotonic() - started, pause, why,
        )  # fmt: skip
        if stop.wait(pause):
            return False
        pause = min(pause * 2, every)

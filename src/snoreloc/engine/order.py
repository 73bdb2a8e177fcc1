"""The run order: every step of a relocation in the one list it runs in, host steps first, then the cluster's, with
one host step after the cluster's first settle that lets go what the node kept for the cluster until it moved
(`settled_host_steps`).

As cloud-init's `cloud.cfg` lists its modules per stage, this module lists the steps; nothing else places one (no
setting names its step, no step names its neighbour). A step that applies a site setting names that setting
(`base.AppliesSetting`), which is how the registry's settings meet their steps here: for `plan`'s costs, for
preflight's checks that must come before any change (`base.ChecksFirst`), for the host steps `plan` can show
without a cluster (`base.PlansOffline`) and the ones `rollback` undoes on the node (`base.RestoresHost`).

The host steps: the site network, node DNS, kubelet, the API; then `shelf` (issue 37), which judged the time on the
shelf before anything changed (`base.ChecksHostFirst`) and, once the API answers, waits for the control-plane
certificates the platform regenerates, so the kube-controller-manager's csr-signer is valid before the `csr` step
approves the kubelet's renewal CSRs.

Why this order (issues 4, 12, 14): changes of one kind together, settles after them. The node's CSRs come first:
while the node is NotReady no rollout can happen; preflight and settle keep approving while they wait. The routes
need only openshift-apiserver's rollout, so they run before the settle, overlapping the kube-apiserver revision; the
settle still waits for everything. The owner's admin access (`admin-access`) comes right after that settle: the
factory's ways in are revoked only once the relocated cluster has proved healthy (a run that fails before leaves
the factory's technician the access they need to look), and not while the domain step's kube-apiserver revision
takes the API away on a single node (the settle waits that out); it rolls nothing out (the API server reloads its
client CAs live), so it needs no settle of its own. The node's labels go on once the cluster has settled, before
the site's extra manifests (whose workloads may select the node by them). The extra manifests follow once the
cluster carries its new names; then the last writers, the proxy and NTP, whose changes reboot the node (only the
final settle rides that out): written back to back they land in one pool update (the MCO renders after a 5 s
pause) and one reboot.

On the node, the fleet's gate (`engine.fleetgate`, when the medium names a hub) sits between the two: after the API
answers, so a held node shows its hold with its network committed, and before `csr`, the first write to the cluster,
so a held node has changed nothing on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from snoreloc.host.services import HostServices
from snoreloc.siteconfig import setting
from snoreloc.steps import base
from snoreloc.steps.cluster import (
    admin_access,
    catalogs,
    certificates,
    cluster_config,
    csr,
    domain,
    manifests,
    node_labels,
    ntp,
    preflight,
    proxy,
    routes,
    settle,
    ssh_keys,
)
from snoreloc.steps.host import api_wait, kubelet_start, node_dns, node_dns_prune, shelf_life, site_network
from snoreloc.steps.openshift import name_clashes


def host_steps(host: HostServices, state_dir: Path) -> list[base.Step]:
    """The host steps, in the order they run before the cluster steps."""
    return [
        site_network.SiteNetwork(host),
        node_dns.NodeDns(host, state_dir),
        kubelet_start.StartKubelet(host),
        api_wait.WaitForApi(),
        shelf_life.ShelfLife(host),
    ]


SETTLED = "settle"  # the cluster step after which the cluster carries its new names and is healthy on them


def settled_host_steps(host: HostServices, state_dir: Path) -> list[base.Step]:
    """The host steps that run once the cluster has settled on its new names (right after the `settle` step): what
    the node kept for the cluster until it moved (an earlier site's names, `node-dns-prune`) is let go. Not last:
    a step after the final settle would meet the whole-run deadline after all the work is done."""
    return [node_dns_prune.NodeDnsPrune(host, state_dir)]


def node_steps(host: HostServices, state_dir: Path, gate: base.Step | None = None) -> list[base.Step]:
    """Every step of a run on the node, in order: the host steps, the fleet's gate (`gate`, when the medium names a
    hub), the cluster steps with the host steps that follow the first settle among them."""
    cluster = cluster_steps()
    at = [step.name for step in cluster].index(SETTLED) + 1
    gated = [gate] if gate is not None else []
    return [*host_steps(host, state_dir), *gated, *cluster[:at], *settled_host_steps(host, state_dir), *cluster[at:]]


def cluster_steps() -> list[base.Step]:
    """The cluster steps, in the order they run."""
    return _with_preflight_checks(
        [
            csr.Csr(),
            preflight.Preflight(),
            certificates.Certificates(),
            cluster_config.ClusterConfig(),
            ssh_keys.STEP,
            catalogs.STEP,
            domain.Domain(),
            routes.Routes(),
            settle.Settle("settle"),
            admin_access.STEP,
            node_labels.STEP,
            manifests.STEP,
            proxy.STEP,
            ntp.STEP,
            settle.Settle("final-settle"),
        ]
    )


def _with_preflight_checks(steps: list[base.Step]) -> list[base.Step]:
    """`steps` with preflight given every later step's check that must refuse before any change."""
    checks: list[preflight.Check] = [name_clashes.preflight_check]
    checks += [step.preflight_check for step in steps if isinstance(step, base.ChecksFirst)]
    return [preflight.Preflight(checks=checks) if isinstance(step, preflight.Preflight) else step for step in steps]


def settings_applied(steps: Sequence[base.Step]) -> dict[str, setting.Setting[Any]]:
    """The setting each of `steps` applies, by the step's name (steps that apply none are left out)."""
    return {step.name: step.setting for step in steps if isinstance(step, base.AppliesSetting)}


def costs() -> dict[str, setting.Cost]:
    """What each cluster step that applies a setting costs, by the step's name: for `plan` and the docs."""
    return {name: entry.cost for name, entry in settings_applied(cluster_steps()).items()}

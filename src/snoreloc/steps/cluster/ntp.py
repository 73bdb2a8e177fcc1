"""The node's time sources: /etc/chrony.conf written by a MachineConfig of ours, `99-master-snoreloc-chrony`.

OpenShift configures chrony only through a MachineConfig that writes /etc/chrony.conf ("Configuring chrony time
service", OpenShift docs), and the machine-config daemon reboots the node for it on 4.12, 4.14 and 4.16: in
machine-config-operator `pkg/daemon/update.go`, `calculatePostConfigChangeActionFromMCDiffs` applies a changed file
without a reboot only when it is the pull secret, the CA bundle, registries.conf and its kin, or under
/etc/nmstate/openshift; any other path ("default:") is `postConfigChangeActionReboot`. The way around it, a node
disruption policy in MachineConfiguration `cluster` mapping /etc/chrony.conf to a restart of chronyd
(`calculatePostConfigChangeNodeDisruptionActionFromMCDiffs`), is a Technology Preview in 4.16 (OpenShift 4.16 docs,
"Using node disruption policies"; MCO `docs/NodeDisruptionPolicy.md`) and only generally available from 4.17, so
on the releases we relocate this step reboots the node. Writing the file on the host before kubelet starts does not
save that reboot either: the daemon decides from the difference between rendered configs, not from the disk, so the
MachineConfig the cluster must carry still reboots the node; and without it the file is not what the cluster says
the node runs (where an installer's MachineConfig already writes /etc/chrony.conf, the daemon's config drift monitor
marks the node degraded over it).

So this step runs right after the proxy, the other write that may reboot: the two land within the render
controller's 5 s pause (`renderDelay`, MCO `pkg/controller/render/render_controller.go`), so in one pool update and
one reboot, and the final settle rides it out. Should the proxy's reboot begin first, planning waits for the API
(bounded by `timeouts.settle`) and the MachineConfig then costs a second reboot rather than a failed run.

Our MachineConfig sorts after the usual ones (the assisted installer's `50-masters-chrony-configuration`), so its
/etc/chrony.conf is the one the node gets; one that sorts after ours and writes the same file would win, and is
refused before any change (preflight), as is a MachineConfig of our name that is not ours.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Any

from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc.siteconfig import model
from snoreloc.siteconfig.settings import ntp as ntp_setting
from snoreloc.siteconfig.settings import timeouts as timeouts_setting
from snoreloc.steps import base, context
from snoreloc.steps.openshift import machineconfigs, ownership

CHRONY_CONFIG = kube.Ref(kube.MACHINECONFIGS, ntp_setting.MACHINECONFIG)
CHRONY_PATH = ntp_setting.CHRONY_FILE
KEEP = context.Keep(rollback=ntp_setting.SETTING.rollback)  # recorded on its backup
FILE_MODE = 0o644
# The rest of RHCOS's default chrony.conf, as the OpenShift docs' chrony example keeps it.
DEFAULTS = ("driftfile /var/lib/chrony/drift", "makestep 1.0 3", "rtcsync", "logdir /var/log/chrony")


def chrony_conf(site: model.Ntp) -> str:
    """The chrony.conf for the site's sources (each a checked host name or address: one line each)."""
    lines = ["# Written by snoreloc from the site-config (spec.ntp)."]
    lines += [f"server {server} iburst" for server in site.servers]
    lines += [f"pool {pool} iburst" for pool in site.pools]
    return "\n".join([*lines, *DEFAULTS]) + "\n"


def machine_config(site: model.Ntp) -> kube.Obj:
    contents = {"source": "data:," + urllib.parse.quote(chrony_conf(site))}
    file = {"path": CHRONY_PATH, "mode": FILE_MODE, "overwrite": True, "contents": contents}
    config = {"ignition": {"version": machineconfigs.IGNITION_VERSION}, "storage": {"files": [file]}}
    metadata = {"name": CHRONY_CONFIG.name, "labels": {**machineconfigs.ROLE_LABEL, **ownership.MANAGED_BY}}
    return {"apiVersion": kube.MACHINECONFIGS.api_version, "kind": "MachineConfig", "metadata": metadata,
            "spec": {"config": config}}  # fmt: skip


def writes_chrony(config: kube.Obj) -> bool:
    files = ((((config.get("spec") or {}).get("config") or {}).get("storage") or {}).get("files")) or []
    return any(entry.get("path") == CHRONY_PATH for entry in files)


def others_writing_chrony(ctx: context.Context) -> list[str]:
    """Names of the master MachineConfigs other than ours that also write /etc/chrony.conf, in merge order."""
    names = []
    for config in ctx.kube.list(kube.MACHINECONFIGS):
        meta = config.get("metadata") or {}
        role = (meta.get("labels") or {}).get(machineconfigs.ROLE)
        if meta.get("name") != CHRONY_CONFIG.name and role == "master" and writes_chrony(config):
            names.append(str(meta.get("name")))
    return sorted(names)


def refuse_winners(others: list[str]) -> None:
    """The MachineConfig merged last wins a file; one after ours would keep the site's servers off the node."""
    after = [name for name in others if name > CHRONY_CONFIG.name]
    if after:
        raise errors.PermanentStepError(
            f"ntp: MachineConfig {', '.join(after)} also writes {CHRONY_PATH} and is merged after "
            f"{CHRONY_CONFIG.name}, so the site's time sources would never reach the node",
            hint=f"Remove {CHRONY_PATH} from {', '.join(after)} (or the object, if it is no longer needed), or leave "
            "spec.ntp out and set the servers there, then run again.",
        )


def require_free(ctx: context.Context) -> list[str]:
    """Refuse what would keep the site's sources off the node (preflight calls it, so before any change); returns
    the other MachineConfigs that write /etc/chrony.conf."""
    if ctx.site.get(ntp_setting.SETTING) is None:
        return []
    ownership.refuse_users(CHRONY_CONFIG, ctx.kube.find(CHRONY_CONFIG), step="ntp")
    others = others_writing_chrony(ctx)
    refuse_winners(others)
    return others


def ntp_changes(ctx: context.Context, site: model.Ntp) -> list[base.ObjectChange]:
    current = ctx.kube.find(CHRONY_CONFIG)
    desired = machine_config(site)
    why = "node time sources (chrony)"
    if current is None:
        return [base.create(CHRONY_CONFIG, desired, rollouts=(base.MCP_MASTER,), why=why, keep=KEEP)]

    def mutate(obj: kube.Obj) -> kube.Obj:
        obj["spec"] = {**(obj.get("spec") or {}), "config": desired["spec"]["config"]}
        return obj

    change = base.update(CHRONY_CONFIG, current, mutate, rollouts=(base.MCP_MASTER,), why=why, keep=KEEP)
    return [] if change is None else [change]


def note(site: model.Ntp, others: list[str]) -> str:
    sources = ", ".join([*site.servers, *(f"pool {pool}" for pool in site.pools)])
    text = (
        f"ntp: chrony from {sources}; this reboots the node: OpenShift 4.12-4.16 applies {CHRONY_PATH} with a "
        "machine-config pool update and a REBOOT; a proxy change of this run shares it"
    )
    return text + (f"; replaces {CHRONY_PATH} of MachineConfig {', '.join(others)} on the node" if others else "")


class Ntp(base.ObjectStep):
    name = "ntp"
    setting = ntp_setting.SETTING  # the setting this step applies
    description = "setting the node's time sources (machine-config update, reboots the node)"

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {"ntp": ctx.site.get(ntp_setting.SETTING)}

    def plan(self, ctx: context.Context) -> base.Plan:
        site = ctx.site.get(ntp_setting.SETTING)
        if site is None:
            return base.Plan(self.name)
        settle = float(ctx.site.get(timeouts_setting.SETTING).settle)
        return base.wait_for(ctx, self.name, "the API to answer", settle, lambda: self._plan(ctx, site))

    def preflight_check(self, ctx: context.Context) -> list[str]:
        """Before any change: `require_free`; it adds no notes to the plan."""
        require_free(ctx)
        return []

    def _plan(self, ctx: context.Context, site: model.Ntp) -> base.Plan:
        others = require_free(ctx)
        changes = ntp_changes(ctx, site)
        return base.Plan(self.name, tuple(changes), (note(site, others),) if changes else ())


STEP = Ntp()  # placed by `engine.order.cluster_steps`

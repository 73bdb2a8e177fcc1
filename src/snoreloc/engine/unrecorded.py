"""What restoring an object sets in motion when its backup does not say: backups taken before issue 31 (which
recorded none), and objects whose step declares none (the core steps' objects, the site's extra manifests).

Since issue 31 the step that writes an object records on its backup what its setting declares
(`setting.Setting.rollback`, kept by `engine.backups`); this is the one place that judges the rest, by the object
and then by its kind, as `engine.restore`'s table did (the facts: `../shared/research/openshift-rollouts-on-sno.md`).
"""

from __future__ import annotations

from collections.abc import Mapping

from snoreloc.adapters import kube
from snoreloc.engine import backups
from snoreloc.siteconfig import setting
from snoreloc.siteconfig.settings import ntp, proxy
from snoreloc.steps.cluster import domain

MCP_MASTER = "mcp/master"
_CRIO_RELOAD = "a machine-config update without a reboot (CRI-O reload)"

_BY_KIND: Mapping[str, setting.Rollback] = {
    "APIServer": setting.Rollback(
        ("kube-apiserver",), why="a new kube-apiserver revision (the API is away about a minute)"
    ),
    "Ingress": setting.Rollback(
        ("openshift-apiserver",), why="openshift-apiserver rolls out; the console and OAuth routes move back"
    ),
    "IngressController": setting.Rollback(("ingress",), why="the router rolls out"),
    "ImageDigestMirrorSet": setting.Rollback((MCP_MASTER,), why=_CRIO_RELOAD),
    "ImageTagMirrorSet": setting.Rollback((MCP_MASTER,), why=_CRIO_RELOAD),
    "ImageContentSourcePolicy": setting.Rollback((MCP_MASTER,), why=_CRIO_RELOAD),
}

_BY_OBJECT: Mapping[str, setting.Rollback] = {
    kube.Ref(kube.PROXIES, "cluster").key: proxy.SETTING.rollback,
    kube.Ref(kube.MACHINECONFIGS, ntp.MACHINECONFIG).key: ntp.SETTING.rollback,
    kube.Ref(kube.SECRETS, "pull-secret", "openshift-config").key: setting.Rollback(
        (MCP_MASTER,), why="the pull secret goes back: a machine-config update without a reboot"
    ),
}


_INGRESS = kube.Ref(kube.INGRESSES, "cluster").key
_INGRESS_STAYS = setting.Rollback(why="the Ingress goes back (its apps domain is unchanged: no rollout)")


def rollback(entry: backups.Entry, current: kube.Obj | None = None) -> setting.Rollback:
    """What restoring `entry` over `current` sets in motion, judged by its object and kind (its backup recorded
    nothing). The cluster Ingress rolls openshift-apiserver out only when the apps domain it generates hosts under
    moves (`domain.routing_domain`): back from the factory's own domain it moves nothing."""
    ref = entry.ref
    if ref.key == _INGRESS and _same_routing(entry.original or {}, current or {}):
        return _INGRESS_STAYS
    if ref.key in _BY_OBJECT:
        return _BY_OBJECT[ref.key]
    if ref.resource.kind == "MachineConfig":
        return setting.Rollback((MCP_MASTER,), why=f"MachineConfig {ref.name}: a machine-config update")
    return _BY_KIND.get(ref.resource.kind, setting.Rollback())


def _same_routing(original: kube.Obj, current: kube.Obj) -> bool:
    return domain.routing_domain(original.get("spec") or {}) == domain.routing_domain(current.get("spec") or {})

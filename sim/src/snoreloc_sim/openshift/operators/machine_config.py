"""Machine-config operator: node-level configuration changes become one MachineConfigPool `master` update.

Inputs: the pull secret (`openshift-config/pull-secret`), image mirroring objects (ICSP, IDMS, ITMS: create,
update or delete), Image `cluster` spec, the `openshift-config` ConfigMaps that `additionalTrustedCA` and the
Proxy's `trustedCA` name, Proxy `cluster` spec, and MachineConfigs. An update takes ~120 s on SNO; it needs a
reboot (API refused for ~240 s in the middle) only when a MachineConfig changed other than in core's SSH keys
(`needs_reboot`), or a proxy URL or noProxy (`proxy_reboots`). Pull secret, mirrors and registry
CA are applied live, as MCO does from 4.13 for IDMS/ITMS and the pull secret; ICSP on 4.14 is treated the same
(no reboot): the simulator chooses the drain-free path for every registries.conf change, so a relocation never pays
a reboot for mirrors.

Coalescing rule: the first change opens a 5 s (cluster time) window; every change inside it joins the same
update. A change during an update queues exactly one follow-up update, which starts when the current one ends
and carries every change that arrived meanwhile. So two changes 1 s apart give one update.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import threading

from snoreloc_sim.kube import model
from snoreloc_sim.openshift.operators import base, conditions, watch

Obj = model.Obj

OPERATOR = "machine-config"
POOL = "master"
CONFIG_NAMESPACE = "openshift-config"
PULL_SECRET = "pull-secret"  # noqa: S105 (a secret's name)
DEBOUNCE_SECONDS = 5.0
UPDATE_SECONDS = 120.0
DRAIN_SECONDS = 30.0
REBOOT_SECONDS = 240.0
AFTER_REBOOT_SECONDS = 30.0
MIRROR_KEYS = frozenset({base.ICSPS, base.IDMS, base.ITMS})
ANNOTATION = "machineconfiguration.openshift.io/"


def rendered_name(serial: int) -> str:
    return "rendered-master-" + hashlib.sha256(f"sim-{serial}".encode()).hexdigest()[:32]


def pool_counts(updated: bool) -> Obj:
    one, done = 1, int(updated)
    return {
        "machineCount": one,
        "updatedMachineCount": done,
        "readyMachineCount": done,
        "unavailableMachineCount": one - done,
        "degradedMachineCount": 0,
    }


def pool_conditions(existing: list[Obj], updated: bool, target: str, now: str) -> list[Obj]:
    if updated:
        message = f"All nodes are updated with MachineConfig {target}"
        updates = [conditions.Condition("Updated", "True", "", message), conditions.Condition("Updating", "False")]
    else:
        message = f"All nodes are updating to MachineConfig {target}"
        updates = [conditions.Condition("Updated", "False"), conditions.Condition("Updating", "True", "", message)]
    return conditions.merge(existing, updates, now)


class MachineConfigOperator:
    def __init__(self, cluster: model.Cluster) -> None:
        self._cluster = cluster
        self._lock = threading.Lock()
        self._reboot = False
        self._renders = itertools.count(2)
        self._serial = base.Serial(cluster, OPERATOR, self._plan, debounce=DEBOUNCE_SECONDS)

    def watches(self) -> tuple[watch.Watch, ...]:
        """The MCO's inputs: MachineConfigs and the mirror sets (created, deleted, or a new spec), the cluster
        Image and Proxy configs (their spec), and the secrets and config maps of openshift-config it renders
        from (their payload, checked against the names the configs reference)."""
        spec, payload = ("spec",), ("data", "binaryData")
        objects = (base.MACHINECONFIGS, *sorted(MIRROR_KEYS))
        return (
            *(watch.Watch(key, self._object_changed, changed=spec, any_create_or_delete=True) for key in objects),
            watch.Watch(base.IMAGES, self._cluster_config_changed, name="cluster", changed=spec),
            watch.Watch(base.PROXIES, self._cluster_config_changed, name="cluster", changed=spec),
            *(
                watch.Watch(
                    key, self._config_changed, namespace=CONFIG_NAMESPACE, changed=payload, any_create_or_delete=True
                )
                for key in (base.SECRETS, base.CONFIGMAPS)
            ),
        )

    def _object_changed(self, change: watch.Change) -> None:
        key = change.rtype.key
        reboot = key == base.MACHINECONFIGS and needs_reboot(change.old, change.new)
        self._request(f"{key}/{change.meta.get('name')}", reboot)

    def _cluster_config_changed(self, change: watch.Change) -> None:
        key = change.rtype.key
        self._request(f"{key}/cluster", key == base.PROXIES and proxy_reboots(change.old, change.new))

    def _config_changed(self, change: watch.Change) -> None:
        trigger = self._config_trigger(change.rtype.key, change.meta.get("name"))
        if trigger is not None:
            self._request(trigger, reboot=False)

    def _request(self, trigger: str, reboot: bool) -> None:
        if reboot:
            with self._lock:
                self._reboot = True
        self._serial.request(trigger)

    def _config_trigger(self, key: str, name: object) -> str | None:
        if key == base.SECRETS and name == PULL_SECRET:
            return f"secret {CONFIG_NAMESPACE}/{PULL_SECRET}"
        image = base.find(self._cluster, base.IMAGES, "cluster")
        trusted = (((image or {}).get("spec") or {}).get("additionalTrustedCA") or {}).get("name")
        if key == base.CONFIGMAPS and trusted and name == trusted:
            return f"configmap {CONFIG_NAMESPACE}/{name}"
        proxy = base.find(self._cluster, base.PROXIES, "cluster")
        proxy_ca = (((proxy or {}).get("spec") or {}).get("trustedCA") or {}).get("name")
        if key == base.CONFIGMAPS and proxy_ca and name == proxy_ca:
            return f"configmap {CONFIG_NAMESPACE}/{name} (proxy trusted CA)"
        return None

    def _plan(self, trigger: str) -> list[base.Step]:
        with self._lock:
            reboot, self._reboot = self._reboot, False
        target = rendered_name(next(self._renders))
        begin = (0.0, lambda: self._begin(target, trigger))
        if not reboot:
            return [begin, (UPDATE_SECONDS, lambda: self._finish(target))]
        return [
            begin,
            (DRAIN_SECONDS, self._reboot_node),
            (REBOOT_SECONDS + AFTER_REBOOT_SECONDS, lambda: self._finish(target)),
        ]

    def _begin(self, target: str, trigger: str) -> None:
        self._write_pool(updated=False, target=target)
        self._annotate_node({"desiredConfig": target, "state": "Working"})
        message = f"Working towards {target} (pool {POOL} updating for {trigger})"
        conditions.set_operator(self._cluster, OPERATOR, conditions.progressing("PoolUpdating", message))

    def _reboot_node(self) -> None:
        self._cluster.recorder.reboot()
        self._cluster.availability.outage(self._cluster.timeline.scaled(REBOOT_SECONDS), "refuse")

    def _finish(self, target: str) -> None:
        self._write_pool(updated=True, target=target)
        self._annotate_node({"currentConfig": target, "desiredConfig": target, "state": "Done"})
        conditions.set_operator(self._cluster, OPERATOR, conditions.settled())

    def _write_pool(self, *, updated: bool, target: str) -> None:
        pool = base.find(self._cluster, base.MACHINECONFIGPOOLS, POOL)
        if pool is None:
            return
        status = pool.setdefault("status", {})
        status.update(pool_counts(updated))
        status["conditions"] = pool_conditions(status.get("conditions") or [], updated, target, base.timestamp())
        status["observedGeneration"] = pool["metadata"].get("generation", 1)
        if updated:
            status["configuration"] = {"name": target}
        base.write_status(self._cluster, base.MACHINECONFIGPOOLS, pool)

    def _annotate_node(self, values: dict[str, str]) -> None:
        nodes = base.rtype(self._cluster, base.NODES)
        for node in self._cluster.store.list(nodes):
            annotations = node["metadata"].setdefault("annotations", {})
            annotations.update({ANNOTATION + k: v for k, v in values.items()})
            self._cluster.store.update(nodes, node, check_rv=False)


def needs_reboot(old: Obj | None, new: Obj | None) -> bool:
    """Whether a MachineConfig change reboots the node: any change but one of `core`'s SSH keys alone.

    machine-config-operator `pkg/daemon/update.go`: ssh keys (like the pull secret) are
    `postConfigChangeActionNone`, "no special action"; `pkg/daemon/update_test.go` "test that a SSH key change is
    none". A MachineConfig that carries nothing but the ignition version and core's keys adds nothing else either.

    A file reboots unless it is one of the few `calculatePostConfigChangeActionFromMCDiffs` (same file) lists (the
    pull secret, CA bundles, registries.conf and its kin, /etc/nmstate/openshift): /etc/chrony.conf is not, so a
    chrony MachineConfig reboots the node on 4.12, 4.14 and 4.16. A node disruption policy (MachineConfiguration
    `cluster`, `calculatePostConfigChangeNodeDisruptionActionFromMCDiffs`) could map it to a chronyd restart, but it
    is Technology Preview in 4.16 (OpenShift 4.16 docs, "Using node disruption policies") and GA only from 4.17, a
    release the simulator does not seed; so it is not modelled.
    """
    return _without_ssh_keys(old) != _without_ssh_keys(new)


PROXY_REBOOT_FIELDS = ("httpProxy", "httpsProxy", "noProxy")


def proxy_reboots(old: Obj | None, new: Obj | None) -> bool:
    """A change of the proxy's URLs or noProxy reboots the node; of its trusted CA alone, it does not.

    openshift-docs, "Replacing the default ingress certificate" (the note on `oc patch proxy/cluster`): updating only
    the trusted CA rewrites `openshift-config-user-ca-bundle.crt` without a reboot (kubelet and CRI-O restart);
    changing any other proxy parameter, such as noProxy, reboots each node.
    """
    before = {k: ((old or {}).get("spec") or {}).get(k) for k in PROXY_REBOOT_FIELDS}
    after = {k: ((new or {}).get("spec") or {}).get(k) for k in PROXY_REBOOT_FIELDS}
    return before != after


def _without_ssh_keys(obj: Obj | None) -> object:
    spec = copy.deepcopy((obj or {}).get("spec") or {})
    config = spec.get("config") or {}
    config.pop("ignition", None)
    passwd = config.get("passwd") or {}
    users = [{k: v for k, v in user.items() if k != "sshAuthorizedKeys"} for user in passwd.get("users") or []]
    users = [user for user in users if user != {"name": "core"}]
    if users:
        passwd["users"] = users
    else:
        passwd.pop("users", None)
    if not passwd:
        config.pop("passwd", None)
    if not config:
        spec.pop("config", None)
    return spec

"""SSH keys for the node's `core` user, written to the `99-master-ssh` MachineConfig the installer created.

The machine-config daemon only ever changes `sshAuthorizedKeys` of `core` (it adds no users), and a change of
keys alone is applied by rewriting the authorized keys file, with no drain and no reboot: machine-config-operator
`pkg/daemon/update.go` lists ssh keys under `postConfigChangeActionNone` ("ssh keys or the pull secret"), and
`pkg/daemon/update_test.go` checks that "a SSH key change is none"; the same on 4.12, 4.14 and 4.16. It still
renders a new MachineConfig for the pool, so the pool updates once: this step runs right after cluster-config,
inside the same machine-config rollout.

In `add` mode a key counts as present when its type and key match, whatever its comment. Other users, other keys
of the object and its labels are left as they are; the whole object is backed up before the first write.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from snoreloc.adapters import kube
from snoreloc.siteconfig import model
from snoreloc.siteconfig.settings import ssh_keys as ssh_keys_setting
from snoreloc.steps import base, context
from snoreloc.steps.openshift import machineconfigs, ownership

SSH_CONFIG = kube.Ref(kube.MACHINECONFIGS, ssh_keys_setting.MACHINECONFIG)
KEEP = context.Keep(rollback=ssh_keys_setting.SETTING.rollback)  # recorded on its backup
USER = "core"


def _identity(line: str) -> tuple[str, ...]:
    """A key without its comment: what makes two authorized_keys lines the same key."""
    return tuple(line.split()[:2])


def core_keys(config: kube.Obj) -> list[str]:
    """The keys `core` has in a MachineConfig (none when it has no such user)."""
    users = (((config.get("spec") or {}).get("config") or {}).get("passwd") or {}).get("users") or []
    for user in users:
        if user.get("name") == USER:
            return list(user.get("sshAuthorizedKeys") or [])
    return []


def desired_keys(site: model.SshKeys, current: list[str]) -> list[str]:
    if site.mode is model.SshKeysMode.REPLACE:
        return list(site.keys)
    present = {_identity(line) for line in current}
    return current + [line for line in site.keys if _identity(line) not in present]


def with_keys(config: kube.Obj, keys: list[str]) -> kube.Obj:
    """`config` with core's keys set to `keys`, every other field and user kept."""
    ignition = config.setdefault("spec", {}).setdefault("config", {})
    ignition.setdefault("ignition", {"version": machineconfigs.IGNITION_VERSION})
    users = ignition.setdefault("passwd", {}).setdefault("users", [])
    core = next((user for user in users if user.get("name") == USER), None)
    if core is None:
        core = {"name": USER}
        users.append(core)
    core["sshAuthorizedKeys"] = keys
    return config


def _new_config(keys: list[str]) -> kube.Obj:
    metadata = {"name": SSH_CONFIG.name, "labels": {**machineconfigs.ROLE_LABEL, **ownership.MANAGED_BY}}
    obj: kube.Obj = {"apiVersion": kube.MACHINECONFIGS.api_version, "kind": "MachineConfig", "metadata": metadata}
    return with_keys(obj, keys)


def ssh_changes(ctx: context.Context) -> list[base.ObjectChange]:
    site = ctx.site.get(ssh_keys_setting.SETTING)
    if site is None:
        return []
    why = f"core's SSH keys, {site.mode.value}"
    current = ctx.kube.find(SSH_CONFIG)
    if current is None:
        return [base.create(SSH_CONFIG, _new_config(list(site.keys)), rollouts=(base.MCP_MASTER,), why=why, keep=KEEP)]

    def mutate(obj: kube.Obj) -> kube.Obj | None:
        keys = desired_keys(site, core_keys(obj))
        return None if keys == core_keys(obj) else with_keys(obj, keys)

    change = base.update(SSH_CONFIG, current, mutate, rollouts=(base.MCP_MASTER,), why=why, keep=KEEP)
    return [] if change is None else [change]


class SshKeys(base.ObjectStep):
    name = "ssh-keys"
    setting = ssh_keys_setting.SETTING  # the setting this step applies
    description = "updating core's SSH keys (machine-config update, no reboot)"
    note = ssh_keys_setting.SETTING.cost.note

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {"ssh_keys": ctx.site.get(ssh_keys_setting.SETTING)}

    def changes(self, ctx: context.Context) -> list[base.ObjectChange]:
        return ssh_changes(ctx)


STEP = SshKeys()  # placed by `engine.order.cluster_steps`

"""SSH keys for `core` over HTTPS: set, re-run, changed, added to the factory's, and rolled back exactly.

The keys go into the `99-master-ssh` MachineConfig; the machine-config pool updates once without a reboot (the
simulator models the daemon's no-reboot path for a key-only change)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from snoreloc.engine import pipeline
from snoreloc.siteconfig import model
from snoreloc.steps.cluster import ssh_keys
from snoreloc.steps.openshift import machineconfigs, ownership

from .conftest import Relocation, contains, site_config, spec_of, wait_healthy

SSH = ssh_keys.SSH_CONFIG
OTHER_STEPS = ("certificates", "cluster-config", "domain", "routes", "csr")


def new_key(comment: str) -> str:
    public = ed25519.Ed25519PrivateKey.generate().public_key()
    line = public.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    return f"{line} {comment}"


@pytest.fixture
def factory_key(relocation: Relocation) -> Iterator[str]:
    """A key `core` already has on the factory cluster (put back after the test on a real one)."""
    original = relocation.get(SSH)
    key = new_key("factory")
    relocation.client.modify(SSH, lambda obj: ssh_keys.with_keys(obj, [key]))
    relocation.undo.append(lambda: relocation.client.modify(SSH, lambda obj: {**obj, "spec": original["spec"]}))
    wait_healthy(relocation)
    yield key


def keys_on_cluster(r: Relocation) -> list[str]:
    return ssh_keys.core_keys(r.get(SSH))


def test_replace_sets_cores_keys_and_a_rerun_writes_nothing(relocation: Relocation, factory_key: str) -> None:
    site = site_config(ssh_authorized_keys=model.SshKeys((new_key("site-admin"),)))
    result = relocation.run(site)
    assert result.actions["ssh-keys"] == "ran"
    assert keys_on_cluster(relocation) == list(site.ssh_authorized_keys.keys)  # type: ignore[union-attr]
    writes = relocation.client.writes
    again = relocation.run(site)
    assert set(again.actions.values()) == {"skipped"}
    assert relocation.client.writes == writes


def test_add_keeps_the_factory_key_and_lists_a_known_key_once(relocation: Relocation, factory_key: str) -> None:
    added = new_key("site-admin")
    same_as_factory = factory_key.rsplit(" ", 1)[0] + " another-comment"
    relocation.run(site_config(ssh_authorized_keys=model.SshKeys((same_as_factory, added), model.SshKeysMode.ADD)))
    assert keys_on_cluster(relocation) == [factory_key, added]


def test_a_changed_key_reruns_only_the_ssh_step(relocation: Relocation) -> None:
    relocation.run(site_config(ssh_authorized_keys=model.SshKeys((new_key("first"),))))
    changed = site_config(ssh_authorized_keys=model.SshKeys((new_key("second"),)))
    writes = relocation.client.writes
    result = relocation.run(changed)
    assert result.actions["ssh-keys"] == "ran"
    assert {result.actions[name] for name in OTHER_STEPS} == {"skipped"}
    assert relocation.client.writes - writes == 1  # 99-master-ssh, and nothing else
    assert keys_on_cluster(relocation) == list(changed.ssh_authorized_keys.keys)  # type: ignore[union-attr]


def test_rollback_restores_the_ssh_config_exactly(relocation: Relocation, factory_key: str) -> None:
    before = spec_of(relocation.get(SSH))
    relocation.run(site_config(ssh_authorized_keys=model.SshKeys((new_key("site-admin"),))))
    assert spec_of(relocation.get(SSH)) != before
    pipeline.rollback(relocation.paths, relocation.client, relocation.clock)
    assert contains(spec_of(relocation.get(SSH)), before)
    assert keys_on_cluster(relocation) == [factory_key]


def test_no_ssh_keys_in_the_site_config_leaves_the_machine_config_alone(relocation: Relocation) -> None:
    before = relocation.get(SSH)
    result = relocation.run(site_config())
    assert result.actions["ssh-keys"] == "ran"  # ran, planned nothing
    assert relocation.get(SSH)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


@pytest.mark.simonly  # deleting and re-creating 99-master-ssh rolls the master pool (a reboot) on a real node
def test_a_missing_ssh_config_is_created_with_our_label_and_removed_by_rollback(relocation: Relocation) -> None:
    relocation.client.delete(SSH)
    key = new_key("site-admin")
    relocation.run(site_config(ssh_authorized_keys=model.SshKeys((key,))))
    created = relocation.get(SSH)
    assert created["metadata"]["labels"] == {**machineconfigs.ROLE_LABEL, **ownership.MANAGED_BY}
    assert ssh_keys.core_keys(created) == [key]
    pipeline.rollback(relocation.paths, relocation.client, relocation.clock)
    assert relocation.client.find(SSH) is None


def test_the_plan_names_the_machine_config_says_no_reboot_and_writes_nothing(relocation: Relocation) -> None:
    before = relocation.get(SSH)
    result = relocation.run(site_config(ssh_authorized_keys=model.SshKeys((new_key("site-admin"),))), dry_run=True)
    step = next(p for p in result.plans if p.step == "ssh-keys")
    assert [c.ref for c in step.changes] == [SSH]
    assert any("without draining or rebooting" in note for note in step.notes)
    assert relocation.get(SSH) == before

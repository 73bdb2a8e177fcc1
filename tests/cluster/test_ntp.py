"""The node's time sources over HTTPS: the chrony MachineConfig set, re-run, one server changed, shared with the
proxy's reboot, rolled back exactly, and the objects that would take /etc/chrony.conf from us refused before any
change."""

from __future__ import annotations

import urllib.parse

import pytest

from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc.engine import pipeline
from snoreloc.factory import seal
from snoreloc.siteconfig import model
from snoreloc.steps.cluster import ntp, proxy

from .conftest import Relocation, progressing, settled, site_config, wait_rollout

# A chrony MachineConfig reboots the node (and again when rolled back): on a real cluster given to the suite the
# test's clean-up would meet that outage. The tests that write one (or a user's MachineConfig, which rolls the pool
# just the same) are `simonly` for that reason (REBOOTS); the plan-only test runs on a real cluster too.
REBOOTS = pytest.mark.simonly

REF = ntp.CHRONY_CONFIG
OTHER_STEPS = ("certificates", "cluster-config", "ssh-keys", "domain", "routes", "csr", "proxy")
SITE_NTP = model.Ntp(servers=("ntp1.edge7.example.net", "192.0.2.123"), pools=("pool.edge7.example.net",))


def chrony_text(obj: kube.Obj) -> str:
    (entry,) = obj["spec"]["config"]["storage"]["files"]
    assert entry["path"] == "/etc/chrony.conf"
    source = entry["contents"]["source"]
    assert source.startswith("data:,")
    return urllib.parse.unquote(source.removeprefix("data:,"))


def machine_config(name: str, text: str) -> kube.Obj:
    contents = {"source": "data:," + urllib.parse.quote(text)}
    files = [{"path": "/etc/chrony.conf", "mode": 420, "overwrite": True, "contents": contents}]
    metadata = {"name": name, "labels": {"machineconfiguration.openshift.io/role": "master"}}
    config = {"ignition": {"version": "3.2.0"}, "storage": {"files": files}}
    return {"apiVersion": kube.MACHINECONFIGS.api_version, "kind": "MachineConfig", "metadata": metadata,
            "spec": {"config": config}}  # fmt: skip


def add_machine_config(r: Relocation, name: str, text: str = "server factory.example.org iburst\n") -> None:
    before = progressing(r, "machine-config")
    r.client.create(kube.MACHINECONFIGS, machine_config(name, text))
    r.undo.append(lambda: r.client.delete(kube.Ref(kube.MACHINECONFIGS, name)))
    wait_rollout(r, "machine-config", before)  # the pool update and the reboot it causes


def test_the_servers_are_planned_as_one_machine_config_that_reboots_and_nothing_is_written(
    relocation: Relocation,
) -> None:
    writes = relocation.client.writes
    plans = relocation.run(site_config(ntp=SITE_NTP), dry_run=True).plans
    (planned,) = [p for p in plans if p.step == "ntp"]
    assert [str(change.ref) for change in planned.changes] == [str(REF)]
    text = chrony_text(planned.changes[0].after)
    assert "server ntp1.edge7.example.net iburst" in text and "pool pool.edge7.example.net iburst" in text
    assert relocation.client.writes == writes


@REBOOTS
def test_the_servers_are_set_with_one_reboot_and_a_rerun_writes_nothing(relocation: Relocation) -> None:
    reboots = relocation.sim.cluster.recorder.reboots
    site = site_config(ntp=SITE_NTP)
    plans = relocation.run(site, dry_run=True).plans
    assert any("reboots the node" in note for p in plans if p.step == "ntp" for note in p.notes)
    assert relocation.run(site).actions["ntp"] == "ran"
    created = relocation.get(REF)
    assert created["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "snoreloc"
    lines = chrony_text(created).splitlines()
    assert "server ntp1.edge7.example.net iburst" in lines and "server 192.0.2.123 iburst" in lines
    assert "pool pool.edge7.example.net iburst" in lines and "driftfile /var/lib/chrony/drift" in lines
    assert relocation.sim.cluster.recorder.reboots == reboots + 1
    writes = relocation.client.writes
    assert set(relocation.run(site).actions.values()) == {"skipped"}
    assert relocation.client.writes == writes


@REBOOTS
def test_a_changed_server_reruns_only_the_ntp_step(relocation: Relocation) -> None:
    relocation.run(site_config(ntp=SITE_NTP))
    writes = relocation.client.writes
    moved = model.Ntp(servers=("ntp2.edge7.example.net", "192.0.2.123"), pools=SITE_NTP.pools)
    result = relocation.run(site_config(ntp=moved))
    assert result.actions["ntp"] == "ran"
    assert {result.actions[name] for name in OTHER_STEPS} == {"skipped"}
    assert relocation.client.writes - writes == 1  # the MachineConfig, nothing else
    assert "server ntp2.edge7.example.net iburst" in chrony_text(relocation.get(REF)).splitlines()


# At the suite's 600x the MCO's 5 s render pause lasts 8 ms, less than the agent takes between two steps; at 10x it
# lasts 500 ms: a window our step-to-step time fits in even on a loaded machine, as it fits the real 5 s.
@pytest.mark.slow
@pytest.mark.parametrize("sim", [{"speed": 10.0}], indirect=True)
@REBOOTS
def test_ntp_and_proxy_share_one_pool_update_and_one_reboot(relocation: Relocation) -> None:
    recorder = relocation.sim.cluster.recorder
    reboots, updates = recorder.reboots, len(recorder.rollouts)
    url = "http://proxy.edge7.example.net:3128"
    relocation.run(site_config(ntp=SITE_NTP, proxy=model.Proxy(url, url, (".edge7.example.net",))))
    assert recorder.reboots == reboots + 1
    late = [r for r in recorder.rollouts[updates:] if r.operator == "machine-config" and REF.name in r.trigger]
    assert len(late) == 1 and "proxies.config.openshift.io/cluster" in late[0].trigger
    assert relocation.get(proxy.PROXY_CLUSTER)["spec"]["httpProxy"] == url


@REBOOTS
def test_rollback_removes_the_machine_config_across_the_reboot_it_causes(relocation: Relocation) -> None:
    relocation.run(site_config(ntp=SITE_NTP))
    # deleting the MachineConfig reboots the node again: the rollback rides that out, and returns settled
    pipeline.rollback(relocation.paths, relocation.client, relocation.clock)
    assert settled(relocation.client)
    assert relocation.client.find(REF) is None
    assert list(relocation.paths.backups.glob("*.json")) == []


@REBOOTS
def test_a_users_machine_config_of_our_name_is_refused_before_any_change(relocation: Relocation) -> None:
    add_machine_config(relocation, REF.name)
    theirs = relocation.get(REF)
    writes = relocation.client.writes
    with pytest.raises(errors.PermanentStepError, match="not created by snoreloc"):
        relocation.run(site_config(ntp=SITE_NTP))
    assert relocation.client.writes == writes
    assert relocation.get(REF)["metadata"] == theirs["metadata"]
    [clash] = seal.KubeClusterFacts(relocation.client).name_clashes()  # the setting's `owns`, checked at the factory
    assert f"MachineConfig {REF.name} exists but was not created by snoreloc" in clash


@REBOOTS
def test_a_chrony_machine_config_merged_after_ours_is_refused_before_any_change(relocation: Relocation) -> None:
    add_machine_config(relocation, "99-master-zz-chrony")
    writes = relocation.client.writes
    with pytest.raises(errors.PermanentStepError, match=r"99-master-zz-chrony also writes /etc/chrony\.conf"):
        relocation.run(site_config(ntp=SITE_NTP))
    assert relocation.client.writes == writes


@REBOOTS
def test_the_installers_chrony_machine_config_is_kept_and_named_in_the_plan(relocation: Relocation) -> None:
    add_machine_config(relocation, "50-masters-chrony-configuration")
    theirs = relocation.get(kube.Ref(kube.MACHINECONFIGS, "50-masters-chrony-configuration"))
    plans = relocation.run(site_config(ntp=SITE_NTP), dry_run=True).plans
    note = next(note for p in plans if p.step == "ntp" for note in p.notes)
    assert "50-masters-chrony-configuration" in note
    relocation.run(site_config(ntp=SITE_NTP))
    after = relocation.get(kube.Ref(kube.MACHINECONFIGS, "50-masters-chrony-configuration"))
    assert after["spec"] == theirs["spec"]

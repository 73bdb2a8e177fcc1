"""What a restore causes is recorded on each backup as it is taken (issue 31), and a backup without the record (taken
before) is judged as it always was: by class, seeded. For every object a setting's step writes, a backup with its
setting's record and the same backup without any forecast the same rollouts, reboot and reason, over generated
originals and current states; and a labels-only backup keeps the first value of each key across runs and puts back
only its keys."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.engine import backups, restore
from snoreloc.siteconfig import setting
from snoreloc.siteconfig.settings import catalog_sources, node_labels, ntp, proxy, ssh_keys
from snoreloc.steps import context

CASES = 40
# Each object a setting's step writes, with the setting whose `rollback` its backup records.
OBJECTS = [
    (kube.Ref(kube.MACHINECONFIGS, ntp.MACHINECONFIG), ntp.SETTING),
    (kube.Ref(kube.MACHINECONFIGS, ssh_keys.MACHINECONFIG), ssh_keys.SETTING),
    (kube.Ref(kube.PROXIES, "cluster"), proxy.SETTING),
    (kube.Ref(kube.CATALOGSOURCES, "site-redhat", "openshift-marketplace"), catalog_sources.SETTING),
    (kube.Ref(kube.OPERATORHUBS, "cluster"), catalog_sources.SETTING),
]
PROXY_FIELDS = ("httpProxy", "httpsProxy", "noProxy", "trustedCA", "readinessEndpoints")


def _spec(rng: random.Random) -> dict[str, object]:
    return {name: f"v{rng.randint(0, 2)}" for name in rng.sample(PROXY_FIELDS, rng.randint(0, len(PROXY_FIELDS)))}


def _obj(ref: kube.Ref, spec: dict[str, object]) -> kube.Obj:
    return {"apiVersion": ref.resource.api_version, "kind": ref.resource.kind, "metadata": {"name": ref.name},
            "spec": spec}  # fmt: skip


def _entries(tmp_path: Path, ref: kube.Ref, original: kube.Obj | None, keep: context.Keep) -> list[backups.Entry]:
    store = backups.Store(tmp_path, clock_mod.SystemClock())
    store.save(ref, original, keep)
    return store.entries()


@pytest.mark.parametrize(("ref", "declared"), OBJECTS, ids=lambda x: str(x) if isinstance(x, kube.Ref) else "")
def test_a_recorded_backup_forecasts_what_an_unrecorded_one_did(
    ref: kube.Ref, declared: setting.Setting[Any], tmp_path: Path
) -> None:
    rng = random.Random(str(ref))
    keep = context.Keep(rollback=declared.rollback)
    for case in range(CASES):
        existed = rng.random() < 0.8
        original = _obj(ref, _spec(rng)) if existed else None
        current = _obj(ref, _spec(rng)) if rng.random() < 0.9 else None
        (recorded,) = _entries(tmp_path / f"r{case}", ref, original, keep)
        (bare,) = _entries(tmp_path / f"b{case}", ref, original, context.WHOLE)
        assert recorded.rollback == keep.rollback and bare.rollback is None
        assert restore.effect_of(recorded, current) == restore.effect_of(bare, current), (original, current)


def test_the_proxy_reboots_only_when_its_urls_or_no_proxy_go_back(tmp_path: Path) -> None:
    ref = kube.Ref(kube.PROXIES, "cluster")
    keep = context.Keep(rollback=proxy.SETTING.rollback)
    (entry,) = _entries(tmp_path, ref, _obj(ref, {"httpProxy": "a", "trustedCA": {"name": "x"}}), keep)
    ca_only = restore.effect_of(entry, _obj(ref, {"httpProxy": "a", "trustedCA": {"name": "y"}}))
    urls = restore.effect_of(entry, _obj(ref, {"httpProxy": "b", "trustedCA": {"name": "x"}}))
    assert not ca_only.reboot and urls.reboot and "reboots" in urls.why
    assert restore.effect_of(entry, _obj(ref, {"httpProxy": "a", "trustedCA": {"name": "x"}})) == restore.Effect()


def _node(labels: dict[str, str]) -> kube.Obj:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "sno", "labels": dict(labels)}}


def test_a_labels_backup_keeps_the_first_value_of_each_key_and_restores_only_its_keys(tmp_path: Path) -> None:
    rng = random.Random(31)
    ref = kube.Ref(kube.NODES, "sno")
    keys = [f"site.example/{i}" for i in range(8)]
    for case in range(CASES):
        store = backups.Store(tmp_path / str(case), clock_mod.SystemClock())
        factory = {key: f"f{rng.randint(0, 3)}" for key in rng.sample(keys, rng.randint(0, 4))}
        node = {**factory, "kubernetes.io/hostname": "sno"}
        kept: dict[str, str | None] = {}
        for _run in range(rng.randint(1, 3)):  # runs that each set some keys, and users who change others
            ours = rng.sample(keys, rng.randint(1, 4))
            store.save(ref, _node(node), context.Keep(node_labels.SETTING.rollback, tuple(ours)))
            kept.update({key: node.get(key) for key in ours if key not in kept})
            node.update({key: "site" for key in ours})
            node[f"user.example/{rng.randint(0, 9)}"] = "theirs"
        (entry,) = store.entries()
        assert entry.labels is not None and set(entry.labels) == set(kept)
        assert entry.rollback == node_labels.SETTING.rollback
        after = backups.restored_entry(entry, _node(node))["metadata"]["labels"]
        wanted = {k: v for k, v in node.items() if k not in kept} | {k: v for k, v in kept.items() if v is not None}
        assert after == wanted
        doc = json.loads(entry.path.read_text())
        assert doc["ref"]["kind"] == "Node" and "status" not in doc["original"]

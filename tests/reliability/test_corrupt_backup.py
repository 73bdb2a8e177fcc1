"""A corrupt backup file is reported by name with what to do; `rollback` still restores everything else, and a new
run refuses to add to backups it could not roll back (exit 69, not 70)."""

from __future__ import annotations

import pathlib
from collections.abc import Callable

import pytest

from snoreloc import errors
from snoreloc.adapters import clock, kube
from snoreloc.engine import backups
from snoreloc_sim.openshift import simulator

from . import figures, inprocess

CONFIGMAP = kube.resource_for("v1", "ConfigMap")


def _garbage(path: pathlib.Path) -> None:
    path.write_text("{not json")


def _wrong_shape(path: pathlib.Path) -> None:
    path.write_text('{"ref": 5}')


def _nested(path: pathlib.Path) -> None:
    path.write_text("[" * 50_000 + "]" * 50_000)


def _huge(path: pathlib.Path) -> None:
    with path.open("wb") as handle:
        handle.truncate(100 * 1024 * 1024)


CORRUPTIONS: dict[str, Callable[[pathlib.Path], None]] = {
    "backup-not-json": _garbage,
    "backup-wrong-shape": _wrong_shape,
    "backup-nested-arrays": _nested,
    "backup-100-mib": _huge,
}


def _configmap(name: str, value: str) -> kube.Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"v": value},
    }


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_rollback_restores_the_rest_and_names_the_corrupt_file(
    name: str, sim: simulator.Simulator, tmp_path: pathlib.Path
) -> None:
    api = inprocess.client_for(sim)
    refs = [kube.Ref(CONFIGMAP, f"{name}-{i}", "default") for i in range(3)]
    store = backups.Store(tmp_path, clock.SystemClock())
    for ref in refs:
        original = api.create(CONFIGMAP, _configmap(ref.name, "before"))
        store.save(ref, original)
        api.modify(ref, lambda current: {**current, "data": {"v": "after"}})
    broken = tmp_path / f"{refs[1].key}.json"
    assert broken.exists()
    CORRUPTIONS[name](broken)
    with pytest.raises(errors.UnavailableError) as refused:
        backups.Store(tmp_path, clock.SystemClock()).usable()
    with pytest.raises(errors.UnavailableError) as caught:
        backups.rollback(api, backups.Store(tmp_path, clock.SystemClock()))
    values = [(api.find(ref) or {}).get("data", {}).get("v") for ref in refs]
    api.close()
    passed = values == ["before", "after", "before"] and str(broken) in str(caught.value)
    figures.record("state-dir", name, passed)
    assert caught.value.exit_code == 69 and refused.value.exit_code == 69
    assert str(broken) in str(caught.value) and str(broken) in str(refused.value)
    assert caught.value.hint and "by hand" in caught.value.hint
    assert values == ["before", "after", "before"]
    assert broken.exists() and not (tmp_path / f"{refs[0].key}.json").exists()

"""Extra manifests only the cluster can refuse: `snoreloc run --cluster-only`, as a process, exits 65 naming the
file and the object, having written nothing (the simulator counts no write; dry runs are not writes)."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest
import yaml

from snoreloc_sim.openshift import simulator

from . import harness

CASES = {
    "kind-not-served": (
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}},
        "Widget default/w: this cluster does not serve kind Widget in example.com/v1",
    ),
    "group-not-served": (
        {"apiVersion": "v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": "default"}},
        "Gadget default/g: this cluster does not serve kind Gadget in v1",
    ),
    "schema-error": (
        {"apiVersion": "config.openshift.io/v1", "kind": "OperatorHub", "metadata": {"name": "cluster"},
         "spec": {"disableAllDefaultSources": "yes please"}},
        # kube-apiserver's answer to an apply body of the wrong type: a 500 (see typed.py), refused at once
        "OperatorHub cluster: failed to create typed patch object (/cluster; config.openshift.io/v1, Kind=OperatorHub):"
        " .spec.disableAllDefaultSources: expected boolean",
    ),
}  # fmt: skip
GOOD = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fine", "namespace": "default"}, "data": {}}


@pytest.fixture(scope="module")
def sim() -> Iterator[simulator.Simulator]:
    with simulator.Simulator(seed="4.16", speed=600.0) as running:
        yield running


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_manifest_the_cluster_refuses_exits_65_before_any_write(
    case: str, tmp_path: pathlib.Path, sim: simulator.Simulator
) -> None:
    manifest, wanted = CASES[case]
    site = harness.write_site(tmp_path / "site")
    (site.parent / "manifests").mkdir()
    (site.parent / "manifests" / "10-site.yaml").write_text(yaml.safe_dump_all([GOOD, manifest]))
    document = yaml.safe_load(site.read_text())
    document["spec"]["extraManifests"] = {"directory": "manifests"}
    site.write_text(yaml.safe_dump(document, sort_keys=False))
    root = tmp_path / "root"
    root.mkdir()
    writes = sim.cluster.recorder.writes
    result = harness.measure(harness.run_args(site, root, sim), timeout=120.0)
    assert result.code == 65, result.stderr
    assert "manifests/10-site.yaml document 2 (line " in result.stderr
    assert wanted in result.stderr
    assert "Traceback" not in result.stderr
    assert sim.cluster.recorder.writes == writes, "a refused manifest let the run write"

"""The shipped `examples/site-config.yaml`, every site setting in it, run end to end through the CLI on a 4.16
cluster: what the documentation promises a site gets, it gets; a second run changes nothing; and `snoreloc
kubeconfig` then names the example's API."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from snoreloc.cli import main
from snoreloc.steps.cluster import ntp
from snoreloc_sim import simulator

from .test_kubeconfig import endpoint

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# The example's proxy and NTP reboot the node, which a cluster given to the suite would have to live through; and
# at the suite's usual 600x the example's own `timeouts.total` (5,400 s) would be 9 s of wall time. 60x gives it 90.
pytestmark = [pytest.mark.simonly, pytest.mark.parametrize("sim", [{"speed": 60.0}], indirect=True)]


def _site(sim: simulator.Simulator, tmp_path: Path) -> Path:
    """The examples directory as shipped, with `kubelet.nodeName` naming the simulated node."""
    copy = tmp_path / "examples"
    shutil.copytree(EXAMPLES, copy)
    path = copy / "site-config.yaml"
    doc = yaml.safe_load(path.read_text())
    (node,) = sim.cluster.store.list(sim.cluster.types["nodes"], None)
    doc["spec"]["kubelet"]["nodeName"] = node["metadata"]["name"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _run(sim: simulator.Simulator, site: Path, state: Path) -> int:
    host, port = sim.router_address
    argv = ["run", "--cluster-only", "--site-config", str(site), "--kubeconfig", str(sim.kubeconfig_path)]
    argv += ["--state-dir", str(state), "--ingress-endpoint", f"{host}:{port}", "--time-scale", str(sim.speed)]
    return main.main(argv)


def _get(sim: simulator.Simulator, key: str, name: str, namespace: str = "") -> dict[str, Any]:
    found: dict[str, Any] | None = sim.cluster.store.find(sim.cluster.types[key], name, namespace)
    assert found is not None, f"{key} {namespace}/{name} is missing"
    return found


def test_the_shipped_example_relocates_with_every_setting(sim: simulator.Simulator, tmp_path: Path) -> None:
    site = _site(sim, tmp_path)
    state = tmp_path / "state"
    assert _run(sim, site, state) in (0, 2)  # 2: done, with warnings (the example names a mirror set absent here)

    expected = yaml.safe_load((EXAMPLES / "site-config.yaml").read_text())["spec"]
    ingress = _get(sim, "ingresses.config.openshift.io", "cluster")
    assert ingress["spec"]["appsDomain"] == f"apps.{expected['domain']}"
    proxy = _get(sim, "proxies.config.openshift.io", "cluster")["spec"]
    assert proxy["httpProxy"] == expected["proxy"]["httpProxy"] and proxy["noProxy"] == ",".join(
        expected["proxy"]["noProxy"]
    )
    chrony = _get(sim, "machineconfigs.machineconfiguration.openshift.io", ntp.CHRONY_CONFIG.name)
    assert "server ntp1.store-0412.example.com iburst" in json.dumps(chrony).replace("%20", " ")
    catalog = expected["catalogSources"]["sources"][0]
    assert (
        _get(sim, "catalogsources.operators.coreos.com", catalog["name"], "openshift-marketplace")["spec"]["image"]
        == catalog["image"]
    )
    assert _get(sim, "operatorhubs.config.openshift.io", "cluster")["spec"]["disableAllDefaultSources"] is True
    ssh = json.dumps(_get(sim, "machineconfigs.machineconfiguration.openshift.io", "99-master-ssh"))
    assert expected["sshAuthorizedKeys"]["keys"][0].split()[1] in ssh
    for manifest in sorted((EXAMPLES / "manifests").glob("*.yaml")):
        for doc in yaml.safe_load_all(manifest.read_text()):
            meta = doc["metadata"]
            plural = {"Namespace": "namespaces", "ConfigMap": "configmaps"}[doc["kind"]]
            _get(sim, plural, meta["name"], meta.get("namespace", ""))
    assert sim.cluster.recorder.reboots >= 1, "the example's proxy and NTP change reboot the node"

    writes = sim.cluster.recorder.writes
    assert _run(sim, site, state) in (0, 2)
    assert sim.cluster.recorder.writes == writes, "a second run of the same site-config must write nothing"

    out = tmp_path / "admin.kubeconfig"
    argv = ["kubeconfig", "--site-config", str(site), "--kubeconfig", str(sim.kubeconfig_path), "-o", str(out)]
    argv += ["--from", str(sim.kubeconfig_path), "--address", endpoint(str(sim.kubeconfig_path))]
    assert main.main(argv) == 0
    cluster = yaml.safe_load(out.read_text())["clusters"][0]["cluster"]
    assert cluster["tls-server-name"] == f"api.{expected['domain']}"  # the address dialled, the new name verified

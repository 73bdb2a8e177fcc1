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

from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.cli import main
from snoreloc.steps.cluster import ntp
from snoreloc_sim import pytest_plugin
from snoreloc_sim.openshift import simulator

from .test_kubeconfig import endpoint

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# At the suite's usual 600x the example's own `timeouts.total` (5,400 s) would be 9 s of wall time. 60x gives it 90.
pytestmark = pytest.mark.parametrize("sim", [{"speed": 60.0}], indirect=True)


def _node_name(kubeconfig: str) -> str:
    client = kube.Client.from_kubeconfig(kubeconfig, clock=clock_mod.SystemClock())
    try:
        (node,) = client.list(kube.NODES)
    finally:
        client.close()
    return str(node["metadata"]["name"])


def _site(kubeconfig: str, tmp_path: Path) -> Path:
    """The examples directory as shipped, with `kubelet.nodeName` naming the cluster's node (the simulator's is the
    example's own; a real cluster's is not)."""
    copy = tmp_path / "examples"
    shutil.copytree(EXAMPLES, copy)
    path = copy / "site-config.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["spec"]["kubelet"]["nodeName"] = _node_name(kubeconfig)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_the_shipped_example_plans_every_setting_on_the_cluster_under_test_and_changes_nothing(
    cluster_target: pytest_plugin.ClusterTarget, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`snoreloc plan` of the shipped example against the cluster under test (a real one too): the cluster's dry
    runs accept every object the example would write, and nothing changes."""
    site = _site(cluster_target.kubeconfig, tmp_path)
    host, port = cluster_target.router_address
    argv = ["plan", "--cluster-only", "--site-config", str(site), "--kubeconfig", cluster_target.kubeconfig,
            "--state-dir", str(tmp_path / "state"), "--ingress-endpoint", f"{host}:{port}",
            "--time-scale", str(cluster_target.speed)]  # fmt: skip
    before = _resource_versions(cluster_target.kubeconfig)
    assert main.main(argv) == 0
    shown = capsys.readouterr().out
    expected = yaml.safe_load((EXAMPLES / "site-config.yaml").read_text())["spec"]
    for wanted in (f"apps.{expected['domain']}", expected["proxy"]["noProxy"][0], ntp.CHRONY_CONFIG.name,
                   expected["catalogSources"]["sources"][0]["name"]):  # fmt: skip
        assert wanted in shown
    assert _resource_versions(cluster_target.kubeconfig) == before, "a plan changes nothing"


def _resource_versions(kubeconfig: str) -> list[str]:
    client = kube.Client.from_kubeconfig(kubeconfig, clock=clock_mod.SystemClock())
    try:
        refs = [kube.Ref(kube.PROXIES, "cluster"), kube.Ref(kube.INGRESSES, "cluster")]
        return [client.get(ref)["metadata"]["resourceVersion"] for ref in refs]
    finally:
        client.close()


def _run(sim: simulator.Simulator, site: Path, state: Path) -> int:
    host, port = sim.router_address
    argv = ["run", "--cluster-only", "--site-config", str(site), "--kubeconfig", str(sim.kubeconfig_path)]
    argv += ["--state-dir", str(state), "--ingress-endpoint", f"{host}:{port}", "--time-scale", str(sim.speed)]
    return main.main(argv)


def _get(sim: simulator.Simulator, key: str, name: str, namespace: str = "") -> dict[str, Any]:
    found: dict[str, Any] | None = sim.cluster.store.find(sim.cluster.types[key], name, namespace)
    assert found is not None, f"{key} {namespace}/{name} is missing"
    return found


# The example's proxy and NTP reboot the node, which a cluster given to the suite would have to live through, and
# the test counts the simulator's writes and reboots.
@pytest.mark.simonly
def test_the_shipped_example_relocates_with_every_setting(sim: simulator.Simulator, tmp_path: Path) -> None:
    site = _site(str(sim.kubeconfig_path), tmp_path)
    state = tmp_path / "state"
    assert _run(sim, site, state) in (0, 2)  # 2: done, with warnings (the seed's routes with certificates of their own)

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

"""End to end: Sites applied to the hub -> the controller validates them and issues their credentials -> the stick
is made from the hub (`snoreloc fleet make-media`) -> the demo's node relocates against the OpenShift simulator and
its reports land in its Site's status -> the hub shows Relocated. A site that cannot reach the hub relocates as
before, and its `snoreloc status --output json`, carried back, is proven and applied by `snoreloc fleet
import-report`; a changed report, or another site's, is refused.

Two simulators run: the OpenShift one (the node's cluster, sped up) and the plain Kubernetes hub."""

from __future__ import annotations

import base64
import json
import pathlib
from typing import Any

import pytest
import yaml
from snoreloc_fleet import credentials, site

from snoreloc.adapters import clock, fs, kube
from snoreloc.cli import main
from snoreloc.engine import node, paths, runner
from snoreloc.siteconfig import medium
from snoreloc.steps import context
from snoreloc_sim import simulator
from snoreloc_sim.demo import flow as demo
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import NS, SITES, Running, get_site, report_kubeconfig, site_client, wait_phase

pytestmark = pytest.mark.simonly


def _demo_site(sim: simulator.Simulator, scratch: pathlib.Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The demo's site-config spec and its files, as the demo writes them for a node."""
    root = fs.HostFS(scratch)
    path = demo.write_site(root, sim)
    config = yaml.safe_load(path.read_text())
    tree = medium.contents(path)
    tree.pop(medium.SITE_CONFIG_NAME)
    return config["spec"], tree


def _inputs(admin: kube.Client, name: str, files: dict[str, bytes]) -> dict[str, Any]:
    """The Site's files as the fleet owner keeps them: the pull secret in a Secret, the rest in a ConfigMap."""
    secret_files = {"pull-secret.json"}
    secret = {k.replace("/", "_"): base64.b64encode(v).decode() for k, v in files.items() if k in secret_files}
    plain = {k.replace("/", "_"): v.decode() for k, v in files.items() if k not in secret_files}
    admin.create(kube.SECRETS, {"metadata": {"name": f"{name}-secrets", "namespace": NS}, "data": secret})
    admin.create(kube.CONFIGMAPS, {"metadata": {"name": f"{name}-files", "namespace": NS}, "data": plain})
    refs = {}
    for file in files:
        kind, holder = ("secretKeyRef", "secrets") if file in secret_files else ("configMapKeyRef", "files")
        refs[file] = {kind: {"name": f"{name}-{holder}", "key": file.replace("/", "_")}}
    return refs


def _apply_site(admin: kube.Client, name: str, spec: dict[str, Any], files: dict[str, bytes]) -> None:
    obj = {
        "apiVersion": site.API_VERSION, "kind": site.KIND, "metadata": {"name": name, "namespace": NS},
        "spec": {"siteConfig": spec, "files": _inputs(admin, name, files)},
    }  # fmt: skip
    admin.create(SITES, obj)


def _make_stick(hub: HubSimulator, name: str, out: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["fleet", "make-media", name, "-n", NS, "--kubeconfig", str(hub.kubeconfig_path), "--out-dir", str(out)]
    assert main.main(argv) == 0
    assert medium.HUB_FILE in capsys.readouterr().err


def _two_sites_and_a_stick(
    hub: HubSimulator,
    admin: kube.Client,
    sim: simulator.Simulator,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> fs.HostFS:
    """The demo's site as Site store-042 and a copy with another domain as store-043, both Ready; store-042's stick
    made from the hub into the node's /etc/snoreloc. The node's host root."""
    spec, files = _demo_site(sim, tmp_path / "demo")
    _apply_site(admin, "store-042", spec, files)
    _apply_site(admin, "store-043", {**spec, "domain": "store043.edge.example.net"}, files)
    for name in ("store-042", "store-043"):
        wait_phase(admin, name, site.Phase.READY)
    root = fs.HostFS(tmp_path / "root")
    _make_stick(hub, "store-042", root.path("/etc/snoreloc"), capsys)
    return root


def _relocate(root: fs.HostFS, sim: simulator.Simulator) -> node.NodeRequest:
    request = node.NodeRequest(
        paths=paths.Paths.under(root.path("/")),
        options=runner.Options(),
        settings=context.Settings(ingress_endpoint=sim.router_address, poll_interval=5.0),
        page_host="127.0.0.1",
        page_port=0,
    )
    services = demo.services(root, sim, clock.ScaledClock(sim.cluster.timeline.speed))
    try:
        result = node.relocate(request, services)
    finally:
        for served in services.pages:
            served.stop()
    assert result.state.value in ("done", "done-with-warnings")
    return request


def _status_json(root: fs.HostFS, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    main.main(["status", "--output", "json", "--root", str(root.path("/"))])
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def test_sites_applied_on_the_hub_relocate_and_report_back(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Any,
    sim: simulator.Simulator,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    running: Running = start_controller()
    root = _two_sites_and_a_stick(hub, admin, sim, tmp_path, capsys)
    assert (root.path("/etc/snoreloc") / medium.HUB_FILE).stat().st_mode & 0o777 == 0o600

    request = _relocate(root, sim)

    obj = wait_phase(admin, "store-042", site.Phase.RELOCATED, timeout=60)
    agent = obj["status"][site.STATUS_AGENT]
    assert agent["runState"] in ("done", "done-with-warnings") and agent["source"] == "node"
    assert agent["siteConfigDigest"] == obj["status"]["media"]["digest"]
    assert agent["stepsDone"] == agent["stepsTotal"] == len(agent["steps"]) > 10
    conditions = {c["type"]: (c["status"], c["reason"]) for c in obj["status"]["conditions"]}
    assert conditions["Relocated"] == ("True", "Done") and conditions["Reporting"] == ("True", "Reported")
    assert get_site(admin, "store-043")["status"]["phase"] == "Ready"
    assert running.controller.counters.status_writes < 40, "one status write per change, not per report"

    other = site_client(hub, report_kubeconfig(admin, "store-043"), "store-043.kubeconfig")
    try:
        with pytest.raises(kube.Forbidden, match="403"):
            path = kube.Ref(SITES, "store-042", NS).path("status")
            body = {"status": {"agent": {"runState": "failed"}}}
            other.request("PATCH", path, body=body, content_type=kube.MERGE_PATCH, retry=False)
    finally:
        other.close()
    credentials.revoke(admin, NS, "store-042")
    revoked = site_client(hub, (root.path("/etc/snoreloc") / medium.HUB_FILE).read_bytes(), "revoked.kubeconfig")
    try:
        with pytest.raises(kube.Forbidden, match="401"):
            revoked.request("GET", kube.Ref(SITES, "store-042", NS).path("status"), retry=False)
    finally:
        revoked.close()
    assert request.paths.status.exists()


def test_a_report_carried_back_by_hand_is_proven_then_applied(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Any,
    sim: simulator.Simulator,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    start_controller()
    root = _two_sites_and_a_stick(hub, admin, sim, tmp_path, capsys)
    hub_file = root.path("/etc/snoreloc") / medium.HUB_FILE  # this site's network cannot reach the hub
    config = yaml.safe_load(hub_file.read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:9"
    hub_file.write_text(yaml.safe_dump(config))

    _relocate(root, sim)  # exactly as without a hub

    assert get_site(admin, "store-042")["status"].get(site.STATUS_AGENT) is None
    report = _status_json(root, capsys)
    carried = tmp_path / "status.json"
    tampered = tmp_path / "tampered.json"
    changed = json.loads(json.dumps(report))
    changed["hub"]["report"]["runState"] = "failed"
    tampered.write_text(json.dumps(changed))
    foreign = tmp_path / "foreign.json"
    moved = json.loads(json.dumps(report))
    moved["hub"]["name"] = "store-043"
    foreign.write_text(json.dumps(moved))
    carried.write_text(json.dumps(report))
    kubeconfig = ["--kubeconfig", str(hub.kubeconfig_path)]
    assert main.main(["fleet", "import-report", str(tampered), *kubeconfig]) == 77
    assert main.main(["fleet", "import-report", str(foreign), *kubeconfig]) == 77
    assert get_site(admin, "store-042")["status"].get(site.STATUS_AGENT) is None
    assert main.main(["fleet", "import-report", str(carried), *kubeconfig]) == 0
    obj = wait_phase(admin, "store-042", site.Phase.RELOCATED)
    assert obj["status"][site.STATUS_AGENT]["source"] == "imported"
    conditions = {c["type"]: (c["status"], c["reason"]) for c in obj["status"]["conditions"]}
    assert conditions["Reporting"] == ("True", "Imported")

"""End to end: Sites applied to the hub -> the controller validates them and issues their credentials -> the stick
is made from the hub (`snoreloc fleet make-media`) -> the demo's node relocates against the OpenShift simulator and
its reports land in its Site's status -> the hub shows Relocated. A site that cannot reach the hub relocates as
before, and its `snoreloc status --output json`, carried back, is proven and applied by `snoreloc fleet
import-report`; a changed report, or another site's, is refused.

Two simulators run: the OpenShift one (the node's cluster, sped up) and the plain Kubernetes hub."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
import yaml
from snoreloc_fleet.hub import credentials
from snoreloc_fleet.resource import site

from snoreloc.adapters import kube
from snoreloc.cli import main
from snoreloc.siteconfig import medium
from snoreloc_sim.hub.simulator import HubSimulator
from snoreloc_sim.openshift import simulator

from .conftest import (
    NS,
    SITES,
    Running,
    get_site,
    refused_after_revocation,
    relocate_node,
    report_kubeconfig,
    site_client,
    status_json,
    two_sites_and_a_stick,
    wait_phase,
)

pytestmark = pytest.mark.simonly


def test_sites_applied_on_the_hub_relocate_and_report_back(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Any,
    sim: simulator.Simulator,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    running: Running = start_controller()
    root = two_sites_and_a_stick(hub, admin, tmp_path, capsys)
    assert (root.path("/etc/snoreloc") / medium.HUB_FILE).stat().st_mode & 0o777 == 0o600

    request = relocate_node(root, sim)

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
        refused_after_revocation(revoked, "GET", kube.Ref(SITES, "store-042", NS).path("status"))
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
    root = two_sites_and_a_stick(hub, admin, tmp_path, capsys)
    hub_file = root.path("/etc/snoreloc") / medium.HUB_FILE  # this site's network cannot reach the hub
    config = yaml.safe_load(hub_file.read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:9"
    hub_file.write_text(yaml.safe_dump(config))

    relocate_node(root, sim)  # exactly as without a hub

    assert get_site(admin, "store-042")["status"].get(site.STATUS_AGENT) is None
    report = status_json(root, capsys)
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

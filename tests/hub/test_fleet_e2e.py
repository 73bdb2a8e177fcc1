"""End to end: Sites applied to the hub -> the controller validates them and issues their credentials -> the stick
is made from the hub (`snoreloc fleet make-media`) -> the demo's node relocates against the OpenShift simulator and
its reports land in its Site's status -> the hub shows Relocated. A site that cannot reach the hub relocates as
before, and its `snoreloc status --output json`, carried back, is proven and applied by `snoreloc fleet
import-report`; a changed report, or another site's, is refused.

Two simulators run: the OpenShift one (the node's cluster, sped up) and the plain Kubernetes hub."""

from __future__ import annotations

import base64
import datetime as dt
import json
import pathlib
import urllib.parse
from typing import Any

import pytest
import yaml
from snoreloc_fleet.hub import adminaccess, credentials
from snoreloc_fleet.resource import site
from snoreloc_fleet.state import fleetstate, page

from hubsim.test_hub_kubectl import KUBECTL
from sealed import FACTORY_DOMAIN
from sim.test_client_certs import status as http_status
from snoreloc.adapters import clock, command, fs, kube
from snoreloc.cli import main
from snoreloc.engine import timeline
from snoreloc.factory import seal
from snoreloc.host import kubelet
from snoreloc.pki import shelf
from snoreloc.siteconfig import medium
from snoreloc_sim.hub.simulator import HubSimulator
from snoreloc_sim.openshift import simulator

from .conftest import (
    NS,
    SITES,
    Running,
    apply_site,
    demo_site,
    get_site,
    keep_files,
    make_stick,
    refused_after_revocation,
    relocate_node,
    report_kubeconfig,
    site_client,
    status_json,
    two_sites_and_a_stick,
    wait_for,
    wait_phase,
)

pytestmark = pytest.mark.simonly


def _sealed_with_horizon(root: fs.HostFS, sim: simulator.Simulator) -> dict[str, Any]:
    """The seal marker `seal` writes, with the horizon it reads from the simulated factory cluster (issue 37)."""
    secrets = {
        s["metadata"]["name"]: shelf.secret_not_after(s)
        for s in sim.seed_facts.sealed_secrets
        if s["metadata"]["name"] in shelf.BY_NAME
    }
    horizon, _ = seal.read_horizon(seal.Node(root, command.FakeRunner(), clock.SystemClock()), secrets)
    record = horizon.record()
    marker = {"domain": FACTORY_DOMAIN, "time": record["sealedAt"], "shelf": record}
    root.write_text(kubelet.SEAL_MARKER, json.dumps(marker), mode=0o644)
    return record


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

    sealed = _sealed_with_horizon(root, sim)
    request = relocate_node(root, sim)

    obj = wait_phase(admin, "store-042", site.Phase.RELOCATED, timeout=60)
    agent = obj["status"][site.STATUS_AGENT]
    horizon = {key: sealed[key] for key in ("mustBootBy", "setBy", "sealedAt")}
    assert agent["shelf"] == horizon, "the node reports the horizon its seal marker records"
    assert wait_for("status.shelf", lambda: get_site(admin, "store-042")["status"].get(site.STATUS_SHELF)) == {
        **horizon, "source": site.SHELF_REPORTED,
    }  # fmt: skip
    assert agent["runState"] in ("done", "done-with-warnings") and agent["source"] == "node"
    assert agent["siteConfigDigest"] == obj["status"]["media"]["digest"]
    assert agent["stepsDone"] == agent["stepsTotal"] == len(agent["steps"]) > 10
    assert agent["rollouts"] and all(r["endSeconds"] >= r["startSeconds"] for r in agent["rollouts"])
    assert agent["waits"] and all(w["what"] for w in agent["waits"])
    drawn = page.render([fleetstate.row(obj)], dt.datetime.now(dt.UTC), title="fleet", timelines=5)
    assert "rollout: kube-apiserver" in drawn, "the fleet report draws the node's rollouts"
    assert timeline.COLOURS["critical"] in drawn and timeline.WAIT_FILL in drawn, "the critical chain and waits"
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


def _dialled_at(kubeconfig: pathlib.Path, sim: simulator.Simulator, out: pathlib.Path) -> pathlib.Path:
    """The owner's kubeconfig as it is, but dialled at the simulator's address while still verifying the served
    certificate for the name it names (`tls-server-name`): the test machine has no DNS for the site."""
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    host = urllib.parse.urlsplit(cluster["server"]).hostname
    served = yaml.safe_load(pathlib.Path(sim.kubeconfig_path).read_text())["clusters"][0]["cluster"]["server"]
    cluster.update({"server": served, "tls-server-name": host})
    out.write_text(yaml.safe_dump(config))
    out.chmod(0o600)
    return out


def test_a_hub_site_ends_with_a_working_owner_kubeconfig_whose_key_never_left_the_hub(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Any,
    sim: simulator.Simulator,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
    kubectl: Any,
) -> None:
    """Issue 32 for a hub site: the hub makes the keys, only the CA's certificate travels, the node reports the
    API's CA, and `fleet admin-kubeconfig` hands over a kubeconfig that works against the relocated cluster
    (official client and Debian's kubectl) while the factory's admin kubeconfig gets 401."""
    start_controller()
    spec, files = demo_site(tmp_path / "demo")
    refs = keep_files(admin, NS, "store-042", files)
    apply_site(admin, NS, "store-042", config=spec, refs=refs)
    admin.patch(kube.Ref(SITES, "store-042", NS), {"spec": {"adminAccess": {"generate": True}}})
    wait_phase(admin, "store-042", site.Phase.READY)
    wait_for("admin keys", lambda: admin.find(kube.Ref(kube.SECRETS, adminaccess.secret_name("store-042"), NS)))
    root = fs.HostFS(tmp_path / "root")
    make_stick(hub, "store-042", root.path("/etc/snoreloc"), capsys)
    keys = admin.get(kube.Ref(kube.SECRETS, adminaccess.secret_name("store-042"), NS))
    key_pem = base64.b64decode(keys["data"][adminaccess.CLIENT_KEY])
    key_lines = [line for line in key_pem.decode().splitlines() if line and not line.startswith("-----")]

    request = relocate_node(root, sim)
    obj = wait_phase(admin, "store-042", site.Phase.RELOCATED, timeout=60)
    reported = obj["status"][site.STATUS_AGENT]["apiCA"]
    assert reported.startswith("-----BEGIN CERTIFICATE-----"), "the node reports the public CA of its API"

    out = tmp_path / "owner" / "store-042.kubeconfig"
    out.parent.mkdir(mode=0o700)
    capsys.readouterr()
    argv = ["fleet", "admin-kubeconfig", "store-042", "-n", NS, "--kubeconfig", str(hub.kubeconfig_path)]
    assert main.main([*argv, "--output", str(out)]) == 0
    assert out.stat().st_mode & 0o777 == 0o600
    owners = _dialled_at(out, sim, tmp_path / "owner" / "dialled.kubeconfig")
    factory = pathlib.Path(sim.factory_admin_kubeconfig)
    assert (http_status(owners), http_status(factory)) == (200, 401)
    if KUBECTL is not None:  # Debian's kubectl, as the owner would use it (CI unpacks it)
        assert kubectl("get", "ns", "-o", "name", kubeconfig=owners).code == 0
        refused = kubectl("get", "ns", "-o", "name", kubeconfig=factory)
        assert refused.code == 1 and "Unauthorized" in refused.err

    stick = [p for p in root.path("/etc/snoreloc").rglob("*") if p.is_file()]
    node_state = [p for p in request.paths.state_dir.rglob("*") if p.is_file()]
    texts = {str(p): p.read_bytes().decode("utf-8", "replace") for p in [*stick, *node_state]}
    texts["site status"] = json.dumps(get_site(admin, "store-042").get("status"))
    leaked = [where for where, text in texts.items() for line in key_lines if line in text]
    assert texts and leaked == [], "the owner's key never reaches the medium, the node or the Site's status"

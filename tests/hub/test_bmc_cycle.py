"""Zero touch end to end (issue 36 item 3 and 4): a Site delivered through its server's BMC, with sushy-tools'
Redfish emulator as that BMC (HTTPS, basic auth) and the controller's own image server. The controller inserts the
site's image when the Site is Ready, the emulator downloads it once, a harness plays the server (reads the
downloaded ISO, lays it out as the node's /etc/snoreloc and runs the agent's node flow against the OpenShift
simulator, reporting to the hub), the controller ejects it as soon as the node's report names its digest, and the
Site ends Relocated with no stick made by anyone. Then the faults: a wrong BMC password is named without the
password anywhere, and a node that never reads the image ends the bounded wait visibly, the URL answering 410."""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import pathlib
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
import requests
import yaml
from snoreloc_fleet.controller import bmccycle, metrics, operator, waves
from snoreloc_fleet.hub import credentials, mediaimage, redfish
from snoreloc_fleet.resource import keyorder, site
from snoreloc_fleet.resource import wave as wave_mod

from fleetops import promrules
from snoreloc.adapters import fs, kube
from snoreloc.siteconfig import medium
from snoreloc_sim.demo import bmc as demo_bmc
from snoreloc_sim.hub.simulator import HubSimulator
from snoreloc_sim.openshift import simulator

from .bmcemu import PASSWORD, SYSTEM, Emulator, _free_port, bmc, launched, tls
from .conftest import NS, SITES, Running, demo_site, get_site, keep_files, relocate_node, wait_for, wait_phase

__all__ = ["bmc"]  # the fixture, imported for pytest
pytestmark = pytest.mark.simonly


def _image_server(tmp_path: pathlib.Path, read_timeout: float = bmccycle.READ_TIMEOUT) -> bmccycle.ServerOptions:
    keys = tls(tmp_path / "image-tls")
    key_secret = kube.Ref(kube.SECRETS, "snoreloc-fleet-image-key", NS)
    return bmccycle.ServerOptions("127.0.0.1", 0, "", keys.cert, keys.key, key_secret, read_timeout)


def _bmc_site(
    admin: kube.Client, emulator: Emulator, tmp_path: pathlib.Path, name: str, password: str, **labels: str
) -> None:
    """The demo's site as Site `name`, delivered through the emulator (its CA in a ConfigMap, its login in a
    Secret: what the fleet demo writes, `demo.bmc.bmc_objects`), powered on once the image is in."""
    spec, files = demo_site(tmp_path / f"demo-{name}")
    refs = keep_files(admin, NS, name, files)
    objects, chosen = demo_bmc.bmc_objects(emulator, NS, name, password)
    for kind, body in objects:
        admin.create(kube.SECRETS if kind == "Secret" else kube.CONFIGMAPS, body)
    meta = {"name": name, "namespace": NS, "annotations": {keyorder.ANNOTATION: keyorder.annotation(spec)},
            "labels": labels}  # fmt: skip
    admin.create(SITES, {"apiVersion": site.API_VERSION, "kind": site.KIND, "metadata": meta,
                         "spec": {"siteConfig": spec, "files": refs, "delivery": chosen}})  # fmt: skip


def _record(admin: kube.Client, name: str) -> dict[str, Any]:
    return dict((get_site(admin, name).get("status") or {}).get(site.STATUS_DELIVERY) or {})


def _conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in (obj.get("status") or {}).get("conditions") or []}


def _until_state(admin: kube.Client, name: str, state: str, timeout: float = 60.0) -> dict[str, Any]:
    """The Site once its BMC cycle's record says `state`."""
    found = wait_for(
        f"{name}'s medium {state}",
        lambda: _record(admin, name).get("state") == state and get_site(admin, name),
        timeout,
    )
    return dict(found)


def _until_condition(admin: kube.Client, name: str, kind: str, expected: tuple[str, str]) -> dict[str, Any]:
    """The Site once its condition `kind` has (status, reason) `expected`."""

    def check() -> dict[str, Any] | None:
        obj = get_site(admin, name)
        return obj if _conditions(obj).get(kind) == expected else None

    return dict(wait_for(f"{name}'s {kind} {expected}", check))


_client = demo_bmc.client
play_the_server = demo_bmc.play_the_server  # what the server does: the fleet demo's, reading the downloaded ISO


def test_a_bmc_site_is_inserted_read_ejected_and_relocated_with_no_stick(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    bmc: Emulator,
    sim: simulator.Simulator,
    tmp_path: pathlib.Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    running = start_controller(image_server=_image_server(tmp_path))
    _bmc_site(admin, bmc, tmp_path, "store-042", PASSWORD)
    wait_phase(admin, "store-042", site.Phase.READY)
    record = _until_state(admin, "store-042", "Inserted")["status"][site.STATUS_DELIVERY]
    obj = get_site(admin, "store-042")
    assert record["digest"] == obj["status"]["media"]["digest"] and record["downloads"] == 1
    inserted = _until_condition(admin, "store-042", "MediaInserted", ("True", "Inserted"))
    assert _conditions(inserted)["NodeReadMedium"] == ("False", "WaitingForNode")

    root = fs.HostFS(tmp_path / "root")
    url, files = play_the_server(bmc, root)
    assert medium.HUB_FILE in files and medium.SITE_CONFIG_NAME in files
    assert len(bmc.downloaded()) == 1, "downloaded once"
    relocate_node(root, sim)

    done = wait_phase(admin, "store-042", site.Phase.RELOCATED, timeout=60)
    record = _until_state(admin, "store-042", "Ejected")["status"][site.STATUS_DELIVERY]
    assert record["downloads"] == 1 and record["readAt"] and record["ejectedAt"]
    assert _client(bmc).media().inserted is False, "the BMC's CD is empty"
    final = _until_condition(admin, "store-042", "MediaEjected", ("True", "Ejected"))
    assert _conditions(final)["NodeReadMedium"] == ("True", "Reported")
    assert _conditions(final)["MediaInserted"] == ("False", "Ejected")
    assert done["status"]["agent"]["siteConfigDigest"] == record["digest"]
    hub_ca = str(tmp_path / "image-tls/ca.crt")
    assert requests.get(url, verify=hub_ca, timeout=10).status_code == 410, "the URL is dead after the eject"
    assert site.MEDIA_REQUESTED not in (final["metadata"].get("annotations") or {}), "no stick was asked for"
    signature = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["signature"][0]
    events = admin.request("GET", f"/api/v1/namespaces/{NS}/events")
    token = yaml.safe_load(files[medium.HUB_FILE])["users"][0]["user"]["token"]
    (pull,) = [v for k, v in files.items() if "pull" in k]
    auths = [str(a["auth"]) for a in json.loads(pull)["auths"].values()]
    for text in (json.dumps(final), json.dumps(events), caplog.text):
        assert signature not in text and PASSWORD not in text, "the URL is a credential: never shown"
        assert token not in text and not any(a in text for a in auths), "the image's secrets stay in the image"
    assert "store-042: served" in caplog.text, "the image server logs the Site and the verdict"
    counters = running.controller.counters
    assert counters.delivery_writes == 2, "the BMC cycle writes twice a Site: inserted, ejected"
    print(f"\nBMC Site: {counters.status_writes} status writes, {counters.delivery_writes} delivery writes, "
          f"{counters.label_writes} label writes, {counters.reconciles} reconciles")  # fmt: skip


def test_a_wrong_bmc_password_is_named_never_shown_and_retried_until_fixed(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    bmc: Emulator,
    tmp_path: pathlib.Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    wrong = "wrong-bmc-password-never-shown"
    caplog.set_level(logging.INFO)
    start_controller(image_server=_image_server(tmp_path))
    _bmc_site(admin, bmc, tmp_path, "store-043", wrong)
    failed = _until_state(admin, "store-043", "Failed")
    record = failed["status"][site.STATUS_DELIVERY]
    assert record["problem"] == "BMCCredentials" and "credentialsName" in record["message"]
    shown = _until_condition(admin, "store-043", "MediaInserted", ("False", "BMCCredentials"))
    events = admin.request("GET", f"/api/v1/namespaces/{NS}/events")
    warned = [e for e in events["items"] if e["involvedObject"]["name"] == "store-043"]
    assert [(e["type"], e["reason"]) for e in warned] == [("Warning", "BMCCredentials")], "one Event, not one a retry"
    for text in (json.dumps(shown), json.dumps(events), caplog.text):
        assert wrong not in text and PASSWORD not in text
    assert bmc.downloaded() == [], "nothing was inserted"

    fixed = {"password": base64.b64encode(PASSWORD.encode()).decode()}
    admin.patch(kube.Ref(kube.SECRETS, "store-043-bmc", NS), {"data": fixed})
    recovered = _until_state(admin, "store-043", "Inserted")["status"][site.STATUS_DELIVERY]
    assert recovered["downloads"] == 1 and "problem" not in recovered, "the retry (backing off) found it fixed"


def test_a_node_that_never_reads_the_image_ends_the_wait_visibly_and_the_owner_redelivers(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    bmc: Emulator,
    tmp_path: pathlib.Path,
) -> None:
    start_controller(image_server=_image_server(tmp_path, read_timeout=6.0))
    _bmc_site(admin, bmc, tmp_path, "store-044", PASSWORD)
    _until_state(admin, "store-044", "Inserted")
    url = str(_client(bmc).media().image)
    began = time.monotonic()
    timed_out = _until_state(admin, "store-044", "TimedOut")
    assert time.monotonic() - began < 40
    shown = _until_condition(admin, "store-044", "NodeReadMedium", ("False", "ReadTimeout"))
    message = next(c["message"] for c in shown["status"]["conditions"] if c["type"] == "NodeReadMedium")
    assert "did not report" in message and "redeliver" in message
    assert timed_out["status"][site.STATUS_DELIVERY]["ejectedAt"]
    assert _client(bmc).media().inserted is False
    assert requests.get(url, verify=str(tmp_path / "image-tls/ca.crt"), timeout=10).status_code == 410

    time.sleep(2)  # nothing is inserted again on its own
    assert _record(admin, "store-044")["state"] == "TimedOut" and bmc.downloaded() == [], "ejected: the BMC dropped it"
    admin.patch(kube.Ref(SITES, "store-044", NS), {"metadata": {"annotations": {bmccycle.REDELIVER: "1"}}})
    again = _until_state(admin, "store-044", "Inserted")["status"][site.STATUS_DELIVERY]
    assert again["redeliver"] == "1" and again["downloads"] == 1 and len(bmc.downloaded()) == 1


def test_without_an_image_server_a_bmc_site_says_so(
    hub: HubSimulator, admin: kube.Client, controller: operator.Controller, bmc: Emulator, tmp_path: pathlib.Path
) -> None:
    _bmc_site(admin, bmc, tmp_path, "store-045", PASSWORD)
    shown = _until_condition(admin, "store-045", "MediaInserted", ("False", "NoImageServer"))
    assert "--image-server-address" in shown["status"][site.STATUS_DELIVERY]["message"]


def test_a_site_edited_while_inserted_gets_the_old_image_ejected_and_the_new_one_inserted_and_deleted_ejects(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    bmc: Emulator,
    tmp_path: pathlib.Path,
) -> None:
    start_controller(image_server=_image_server(tmp_path))
    _bmc_site(admin, bmc, tmp_path, "store-046", PASSWORD)
    first = _until_state(admin, "store-046", "Inserted")["status"][site.STATUS_DELIVERY]
    old_url = str(_client(bmc).media().image)
    admin.patch(kube.Ref(SITES, "store-046", NS), {"spec": {"siteConfig": {"domain": "store046.edge.example.net"}}})

    def replaced() -> dict[str, Any] | None:
        record = _record(admin, "store-046")
        return record if record.get("state") == "Inserted" and record.get("digest") != first["digest"] else None

    second = wait_for("the new image inserted", replaced, 60)
    assert second["digest"] == get_site(admin, "store-046")["status"]["media"]["digest"] and second["downloads"] == 1
    newest = max(bmc.downloaded(), key=lambda p: p.stat().st_mtime)
    assert b"store046.edge.example.net" in mediaimage.files(newest.read_bytes())[medium.SITE_CONFIG_NAME]
    assert str(_client(bmc).media().image) != old_url
    hub_ca = str(tmp_path / "image-tls/ca.crt")
    assert requests.get(old_url, verify=hub_ca, timeout=10).status_code == 410, "the old medium's URL is dead"

    new_url = str(_client(bmc).media().image)
    assert get_site(admin, "store-046")["metadata"]["finalizers"] == [bmccycle.FINALIZER], "held while inserted"
    admin.delete(kube.Ref(SITES, "store-046", NS))
    wait_for("the deleted Site's image ejected", lambda: _client(bmc).media().inserted is False, 30, 0.5)
    assert requests.get(new_url, verify=hub_ca, timeout=10).status_code == 410, "a deleted Site's URL is dead"
    wait_for("the Site gone once ejected", lambda: admin.find(kube.Ref(SITES, "store-046", NS)) is None, 30, 0.5)


def test_a_site_deleted_while_the_controller_was_down_is_ejected_by_the_next_one(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    bmc: Emulator,
    tmp_path: pathlib.Path,
) -> None:
    """The finalizer holds a Site whose image the BMC may hold: deleted while no controller runs, it waits
    (Terminating) for the next controller, which ejects from the BMC its record names and then lets it go. A
    deleted Site whose BMC login is gone (its namespace deleted with it) is let go at once, saying so."""
    first = start_controller(image_server=_image_server(tmp_path))
    _bmc_site(admin, bmc, tmp_path, "store-051", PASSWORD)
    recorded = _until_state(admin, "store-051", "Inserted")["status"][site.STATUS_DELIVERY]
    assert recorded["bmc"]["address"] == bmc.address and "password" not in json.dumps(recorded).lower()
    first.stop()
    admin.delete(kube.Ref(SITES, "store-051", NS))
    time.sleep(1)
    waiting = get_site(admin, "store-051")
    assert waiting["metadata"]["deletionTimestamp"] and _client(bmc).media().inserted, "held: nobody ejected yet"

    start_controller(image_server=_image_server(tmp_path))
    wait_for("the image ejected by the new controller", lambda: _client(bmc).media().inserted is False, 30, 0.5)
    wait_for("the Site gone", lambda: admin.find(kube.Ref(SITES, "store-051", NS)) is None, 30, 0.5)

    _bmc_site(admin, bmc, tmp_path, "store-052", PASSWORD)
    _until_state(admin, "store-052", "Inserted")
    admin.delete(kube.Ref(kube.SECRETS, "store-052-bmc", NS))
    admin.delete(kube.Ref(SITES, "store-052", NS))
    wait_for("the Site let go", lambda: admin.find(kube.Ref(SITES, "store-052", NS)) is None, 30, 0.5)
    events = admin.request("GET", f"/api/v1/namespaces/{NS}/events")
    given_up = [e for e in events["items"] if e["involvedObject"]["name"] == "store-052"
                and e["reason"] == site.Reason.EJECT_ABANDONED.value]  # fmt: skip
    assert len(given_up) == 1 and "eject it there by hand" in given_up[0]["message"]
    assert _client(bmc).media().inserted, "nothing could log into the BMC: the owner is told to eject it"


def test_a_deleted_sites_eject_at_a_dead_bmc_backs_off_and_is_given_up_at_its_bound(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The eject of a deleted Site whose BMC is gone is tried `EJECT_ATTEMPTS` times, backing off between (its own
    status writes wake passes that must not retry early), then given up, saying so; the Site goes."""
    monkeypatch.setattr(bmccycle, "EJECT_ATTEMPTS", 3)
    monkeypatch.setattr(bmccycle, "RETRY_S", 2.0)
    monkeypatch.setattr(redfish, "RETRIES", 1)  # a refused connection fails at once: only the back-off takes time
    monkeypatch.setattr(redfish, "RETRY_DELAY", 0)
    start_controller(image_server=_image_server(tmp_path))
    with launched(tmp_path) as emulator:
        _bmc_site(admin, emulator, tmp_path, "store-053", PASSWORD)
        _until_state(admin, "store-053", "Inserted")
    admin.delete(kube.Ref(SITES, "store-053", NS))
    began = time.monotonic()

    def failing() -> dict[str, Any] | None:
        obj = admin.find(kube.Ref(SITES, "store-053", NS))
        return obj if obj is not None and _record(admin, "store-053").get("attempts") == 2 else None

    record = dict(wait_for("two failed ejects", failing, 60, 0.2))["status"][site.STATUS_DELIVERY]
    assert record["problem"] == "BMCUnreachable" and record["retryAt"], "backing off, visibly"
    wait_for("the Site let go", lambda: admin.find(kube.Ref(SITES, "store-053", NS)) is None, 60, 0.5)
    # the back-off, 2 s then 4 s, held between the attempts (retryAt is kept to the second: up to 1 s early each)
    assert time.monotonic() - began >= 2.0 + 4.0 - 2.0
    events = admin.request("GET", f"/api/v1/namespaces/{NS}/events")
    warned = [e["reason"] for e in events["items"] if e["involvedObject"]["name"] == "store-053"]
    assert sorted(warned) == ["BMCUnreachable", site.Reason.EJECT_ABANDONED.value], "the first failure, the verdict"


def test_a_restarted_controller_serves_the_inserted_image_again_at_the_same_url(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    bmc: Emulator,
    tmp_path: pathlib.Path,
) -> None:
    """The URL the BMC holds stays good across a restart of the controller and its image server (the key is in a
    Secret, the grant is made again from the Site), so a BMC that fetches again (a reboot, a firmware's re-mount)
    is served; the count goes on."""
    port = _free_port()
    served = dataclasses.replace(_image_server(tmp_path), port=port, base=f"https://127.0.0.1:{port}")
    first = start_controller(image_server=served)
    _bmc_site(admin, bmc, tmp_path, "store-047", PASSWORD)
    _until_state(admin, "store-047", "Inserted")
    url = str(_client(bmc).media().image)
    first.stop()
    hub_ca = str(tmp_path / "image-tls/ca.crt")
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(url, verify=hub_ca, timeout=10)
    start_controller(image_server=served)
    wait_for("the image served again", lambda: requests.get(url, verify=hub_ca, timeout=10).status_code == 200, 30, 0.5)
    wait_for("the count going on", lambda: _record(admin, "store-047").get("downloads", 0) >= 2, 60)


def test_a_site_its_wave_holds_gets_no_credential_and_nothing_inserted(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    bmc: Emulator,
    tmp_path: pathlib.Path,
) -> None:
    """The controller asks for a BMC Site's credential itself, as make-media asks for a stick's: only when its
    wave's batch is open (the canary here); the Site in the next batch is held, and nothing goes into its BMC."""
    start_controller(image_server=_image_server(tmp_path))
    body = {"apiVersion": site.API_VERSION, "kind": wave_mod.KIND, "metadata": {"name": "autumn", "namespace": NS},
            "spec": {"selector": {"matchLabels": {"rollout": "autumn"}}, "canary": 1, "batches": ["1"],
                     "manualApproval": True}}  # fmt: skip
    admin.create(waves.WAVES, body)
    for name in ("store-048", "store-049"):  # valid at once: only the wave's plan keeps them from their BMCs
        _bmc_site(admin, bmc, tmp_path, name, PASSWORD, rollout="autumn")
    inserted = _until_state(admin, "store-048", "Inserted")
    assert site.view(inserted).gate.get("state") == site.GATE_OPEN
    held = _until_condition(admin, "store-049", "MediaReady", ("False", "Held"))
    assert _conditions(held)["MediaInserted"] == ("False", "NotInserted")
    assert _record(admin, "store-049") == {} and admin.find(
        kube.Ref(kube.SECRETS, credentials.binding_name("store-049"), NS)) is None  # fmt: skip
    assert len(bmc.downloaded()) == 1, "only the open batch's image was fetched"


def test_a_wave_selects_as_its_listing_would() -> None:
    """`wave.selects`, what the controller asks of a new BMC Site before its wave's pass, agrees with the list's
    `labelSelector` semantics (apimachinery `labels.Selector.Matches`)."""
    labels = {"rollout": "autumn", "region": "north"}
    assert wave_mod.selects({}, labels), "an empty selector selects everything"
    assert wave_mod.selects({"matchLabels": {"rollout": "autumn"}}, labels)
    assert not wave_mod.selects({"matchLabels": {"rollout": "spring"}}, labels)
    expressions = {
        ("region", "In", ("north", "east")): True, ("region", "NotIn", ("north",)): False,
        ("tier", "NotIn", ("gold",)): True, ("region", "Exists", ()): True, ("region", "DoesNotExist", ()): False,
        ("tier", "In", ("gold",)): False,
    }  # fmt: skip
    for (key, op, values), expected in expressions.items():
        selector = {"matchExpressions": [{"key": key, "operator": op, "values": list(values)}]}
        assert wave_mod.selects(selector, labels) is expected, (key, op, values)


def test_a_bmc_unreachable_then_back_is_named_and_retried_until_it_answers(
    hub: HubSimulator, admin: kube.Client, start_controller: Callable[..., Running], tmp_path: pathlib.Path
) -> None:
    port = _free_port()
    tls(tmp_path / "bmc-tls")  # the BMC's certificate, as it will present it once back
    absent = Emulator(f"redfish-virtualmedia+https://127.0.0.1:{port}{SYSTEM}", tmp_path / "bmc-tls/ca.crt", tmp_path)
    start_controller(image_server=_image_server(tmp_path))
    _bmc_site(admin, absent, tmp_path, "store-050", PASSWORD)
    failed = _until_condition(admin, "store-050", "MediaInserted", ("False", "BMCUnreachable"))
    record = failed["status"][site.STATUS_DELIVERY]
    assert record["state"] == "Failed" and record["retryAt"] and "did not answer" in record["message"]
    with launched(tmp_path, port) as back:
        inserted = _until_state(admin, "store-050", "Inserted")["status"][site.STATUS_DELIVERY]
        assert inserted["downloads"] == 1 and len(back.downloaded()) == 1
        assert _client(back).media().inserted


def test_the_delivery_states_and_the_image_answers_are_served_and_a_stuck_delivery_alerts(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    bmc: Emulator,
    tmp_path: pathlib.Path,
) -> None:
    """The controller's metrics for BMC delivery (scraped as Prometheus does): Sites by `status.delivery.state`, the
    image server's downloads by namespace and its refusals by status, no Site, URL or signature in any label; and
    `SnorelocBmcDeliveryStuck` evaluated by promtool on two scrapes (inserted, then timed out)."""
    fleet_metrics = metrics.FleetMetrics()
    endpoint = metrics.serve(fleet_metrics, 0, "127.0.0.1")
    scrape_url = f"http://127.0.0.1:{endpoint.port}/metrics"
    hub_ca = str(tmp_path / "image-tls/ca.crt")

    def served(state: str) -> promrules.Samples | None:
        samples = promrules.scrape(scrape_url)
        others = sum(v for k, v in samples.items() if k.startswith("snoreloc_fleet_delivery_sites{") and state not in k)
        return samples if samples.get(f'snoreloc_fleet_delivery_sites{{namespace="{NS}",state="{state}"}}') == 1 and (
            others == 0) else None  # fmt: skip

    try:
        start_controller(metrics=fleet_metrics, image_server=_image_server(tmp_path, read_timeout=4.0))
        _bmc_site(admin, bmc, tmp_path, "store-051", PASSWORD)
        inserted = wait_for("the metrics to show the medium inserted", lambda: served("Inserted"), 60)
        image_url = str(_client(bmc).media().image)
        _until_state(admin, "store-051", "TimedOut")
        assert requests.get(image_url, verify=hub_ca, timeout=10).status_code == 410, "ejected: gone"
        signature = urllib.parse.parse_qs(urllib.parse.urlsplit(image_url).query)["signature"][0]
        forged = image_url.replace(signature, "0" * 64)
        assert requests.get(forged, verify=hub_ca, timeout=10).status_code == 403, "not signed by this hub"
        timed_out = wait_for("the metrics to show the medium timed out", lambda: served("TimedOut"), 30)
        text = urllib.request.urlopen(scrape_url, timeout=10).read().decode()
    finally:
        endpoint.stop()
    assert inserted[f'snoreloc_fleet_image_downloads_total{{namespace="{NS}"}}'] == 1, "the BMC's one download"
    assert timed_out[f'snoreloc_fleet_image_downloads_total{{namespace="{NS}"}}'] == 1
    assert timed_out['snoreloc_fleet_image_refusals_total{code="410"}'] == 1
    assert timed_out['snoreloc_fleet_image_refusals_total{code="403"}'] == 1
    assert inserted['snoreloc_fleet_image_refusals_total{code="403"}'] == 0, "each refusal served from 0"
    for secret in ("store-051", signature, PASSWORD, "https://"):
        assert secret not in text, "no Site, URL or secret in a label"
    namespace = {"namespace": NS}
    expected = [
        promrules.alert("SnorelocBmcDeliveryStuck", "20m", []),  # timed out 10 minutes ago: not yet 15
        promrules.alert("SnorelocBmcDeliveryStuck", "30m", [(namespace, "1")]),
    ]
    promrules.promtool_test(tmp_path, promrules.series(inserted, timed_out, switch=10, total=40), expected)

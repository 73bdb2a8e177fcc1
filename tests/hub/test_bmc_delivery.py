"""Zero touch's hub pieces (issue 36 items 1 and 2): `spec.delivery` in metal3's BMC shape checked with one rule for
the controller and the CRD, the site's configuration image built in memory with the stick's files under the agent's
label, and the signed, expiring URL a BMC fetches it from (403 for a URL the hub never made, 410 for one that is no
longer good). The Site rules run over HTTPS against the hub simulator with the controller running."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from snoreloc_fleet.hub import imageurl, mediaimage
from snoreloc_fleet.resource import delivery, site

from snoreloc.adapters import kube
from snoreloc.siteconfig import discovery, medium
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import SITES, Running, get_site, site_object, wait_phase

GOOD = "redfish-virtualmedia://10.0.0.5/redfish/v1/Systems/1"
KEY = bytes(range(32))
DIGEST = "sha256:" + "ab" * 32


def _bmc(**bmc: Any) -> dict[str, Any]:
    return {"method": "bmc", "bmc": {"address": GOOD, "credentialsName": "store-bmc", **bmc}}


@pytest.mark.parametrize(
    ("address", "endpoint", "system"),
    [
        (GOOD, "https://10.0.0.5", "/redfish/v1/Systems/1"),
        ("redfish-virtualmedia+http://bmc.example:8000/redfish/v1/Systems/System.Embedded.1/", "http://bmc.example:8000",
         "/redfish/v1/Systems/System.Embedded.1"),
        ("redfish-virtualmedia+https://[fd00::5]:8443/redfish/v1/Systems/abc", "https://[fd00::5]:8443",
         "/redfish/v1/Systems/abc"),
    ],
)  # fmt: skip
def test_metal3_addresses_name_the_redfish_endpoint_and_system(address: str, endpoint: str, system: str) -> None:
    found, problems = delivery.read({"delivery": _bmc(address=address)})
    assert problems == [] and found.bmc is not None
    assert (found.method, found.bmc.endpoint, found.bmc.system_path) == (delivery.Method.BMC, endpoint, system)
    assert found.bmc.verify and found.bmc.power is delivery.Power.ON


@pytest.mark.parametrize(
    ("given", "field", "says"),
    [
        (_bmc(address="ipmi://10.0.0.5"), "spec.delivery.bmc.address", "scheme must be one of"),
        (_bmc(address="redfish-virtualmedia://admin:hunter2@10.0.0.5/redfish/v1/Systems/1"),
         "spec.delivery.bmc.address", "carries credentials"),
        (_bmc(address="redfish-virtualmedia://10.0.0.5/redfish/v1/Managers/1"), "spec.delivery.bmc.address",
         "/redfish/v1/Systems/ID"),
        (_bmc(address="redfish-virtualmedia://10.0.0.5:99999/redfish/v1/Systems/1"), "spec.delivery.bmc.address",
         "port"),
        (_bmc(credentialsName="../kube-system/x"), "spec.delivery.bmc.credentialsName", "not a Kubernetes name"),
        (_bmc(disableCertificateVerification=True, caConfigMapKeyRef={"name": "bmc-ca", "key": "ca.crt"}),
         "spec.delivery.bmc.disableCertificateVerification", "give one of"),
        (_bmc(power="cycle"), "spec.delivery.bmc.power", "one of on, restart, none"),
        ({"method": "bmc"}, "spec.delivery.bmc", "method bmc needs"),
        ({"method": "pigeon"}, "spec.delivery.method", "one of stick, bmc"),
    ],
)  # fmt: skip
def test_a_wrong_delivery_names_its_field_and_never_quotes_a_password(given: Any, field: str, says: str) -> None:
    found, problems = delivery.read({"delivery": given})
    assert found.method is delivery.Method.STICK, "nothing is delivered through a BMC the rules refused"
    assert [p.path for p in problems] == [field] and says in problems[0].message
    assert "hunter2" not in json.dumps([p.message for p in problems])


def test_no_delivery_is_the_stick_as_today() -> None:
    assert delivery.read({}) == (delivery.Delivery(delivery.Method.STICK), [])
    assert delivery.read({"delivery": {"method": "stick"}}) == (delivery.Delivery(delivery.Method.STICK), [])


@pytest.mark.simonly
def test_the_hub_admits_a_bmc_site_and_the_controller_refuses_a_wrong_one_with_its_field(
    hub: HubSimulator, admin: kube.Client, start_controller: Callable[..., Running]
) -> None:
    good = site_object("store-bmc")
    good["spec"]["delivery"] = _bmc()
    bad = site_object("store-badbmc")
    bad["spec"]["delivery"] = _bmc(address="redfish-virtualmedia://root:calvin@10.0.0.9/redfish/v1/Systems/1")
    admin.create(SITES, good)
    admin.create(SITES, bad)
    start_controller()
    assert wait_phase(admin, "store-bmc", site.Phase.READY)["spec"]["delivery"]["bmc"]["power"] == "on"
    refused = wait_phase(admin, "store-badbmc", site.Phase.INVALID)
    shown = json.dumps(refused["status"])
    assert "spec.delivery.bmc.address" in shown and "carries credentials" in shown
    assert "calvin" not in shown and "calvin" not in json.dumps(get_site(admin, "store-badbmc").get("status"))


def test_the_image_holds_the_sticks_files_under_the_agents_label(tmp_path: Path) -> None:
    tree = {
        medium.SITE_CONFIG_NAME: b"apiVersion: snoreloc.io/v1alpha1\nkind: SiteConfig\n",
        "pull-secret.json": b'{"auths": {}}',
        "certs/api/tls.crt": b"-----BEGIN CERTIFICATE-----\n",
        medium.HUB_FILE: b"apiVersion: v1\nkind: Config\n",
        "a-name.longer.than.eight-dot-three.yaml": b"x: 1\n",
    }
    image = mediaimage.build(tree)
    assert mediaimage.label(image) == discovery.LABEL
    assert mediaimage.files(image) == tree, "names keep their case, length and directories (Rock Ridge)"
    again = mediaimage.build(tree)
    assert mediaimage.same_files(again, tree)
    path = tmp_path / "site.iso"
    path.write_bytes(image)
    blkid = subprocess.run(["blkid", "-p", "-o", "export", str(path)], capture_output=True, text=True, check=False)
    if blkid.returncode == 0:  # util-linux's prober, as the node's discovery reads the label
        assert f"LABEL={discovery.LABEL}" in blkid.stdout.splitlines() and "TYPE=iso9660" in blkid.stdout


def test_a_signed_url_is_good_for_its_site_its_medium_and_its_time_only() -> None:
    grant = imageurl.Grant("fleet", "store-042", DIGEST, expires=2_000)
    made = imageurl.url("https://hub.example:8443/", KEY, grant)
    target = made.removeprefix("https://hub.example:8443")
    assert target.startswith("/images/fleet/store-042/sha256-" + "ab" * 32 + ".iso?")
    assert imageurl.check(KEY, target, 1_000, DIGEST).verdict is imageurl.Verdict.OK
    gone = {
        "expired": imageurl.check(KEY, target, 2_000, DIGEST),
        "ejected": imageurl.check(KEY, target, 1_000, None),
        "stale": imageurl.check(KEY, target, 1_000, "sha256:" + "cd" * 32),
    }
    assert {why: answer.verdict for why, answer in gone.items()} == dict.fromkeys(gone, imageurl.Verdict.GONE)
    other_site = target.replace("store-042", "store-043")
    longer = target.replace("expires=2000", "expires=9000")
    forged = imageurl.url("https://x", bytes(32), grant).removeprefix("https://x")
    for wrong in (other_site, longer, forged, "/images/../etc/passwd", target.split("?")[0], "/healthz"):
        answer = imageurl.check(KEY, wrong, 1_000, DIGEST)
        assert answer.verdict is imageurl.Verdict.FORBIDDEN, wrong
        assert imageurl.sign(KEY, grant) not in answer.reason


def test_the_image_url_never_travels_in_the_medium() -> None:
    """The URL is the credential for the image; the image must not hold it (nor the key that signs it)."""
    tree = {medium.SITE_CONFIG_NAME: b"kind: SiteConfig\n"}
    grant = imageurl.Grant("fleet", "store-042", medium.digest(tree), expires=2_000)
    image = mediaimage.build(tree)
    assert imageurl.sign(KEY, grant).encode() not in image and KEY not in image

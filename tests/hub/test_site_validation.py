"""A Site is checked with exactly the agent's rules: `kubectl apply` of a Site whose site-config is invalid shows
Validated=False with the findings `snoreloc validate` gives for the same file; secret material inline in a Site and
a missing input are refused with the field and what to do."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from snoreloc_fleet.controller import operator
from snoreloc_fleet.hub import sitemedium
from snoreloc_fleet.resource import site

from snoreloc.adapters import kube
from snoreloc.cli import main
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import PULL_SECRET, SITES, site_config, site_object, wait_phase

BROKEN = site_config(
    "store-9",
    domain="not a domain",
    network={"interfaces": [{"name": "eno1", "type": "ethernet", "state": "up", "ipv4": {"enabled": True,
             "dhcp": False, "address": [{"ip": "10.0.0.300", "prefix-length": 24}]}}]},
    ntp={"servers": []},
)  # fmt: skip


def _validate_cli(obj: dict[str, Any], directory: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """What `snoreloc validate --output json` says of the file the Site describes."""
    path = sitemedium.lay_out(directory, obj, {"pull-secret.json": json.dumps(PULL_SECRET).encode()})
    capsys.readouterr()
    assert main.main(["validate", "--output", "json", str(path)]) == 65
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


def test_an_invalid_site_config_shows_the_findings_snoreloc_validate_gives(
    hub: HubSimulator,
    admin: kube.Client,
    controller: operator.Controller,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    obj = site_object("store-9", BROKEN)
    admin.create(SITES, obj)
    served = wait_phase(admin, "store-9", site.Phase.INVALID)
    assert list(served["spec"]["siteConfig"]) == sorted(BROKEN), "the hub answers as a real one: keys sorted"
    status = served["status"]
    conditions = {c["type"]: c for c in status["conditions"]}
    assert (conditions["Validated"]["status"], conditions["Validated"]["reason"]) == ("False", "InvalidSiteConfig")
    assert conditions["MediaReady"]["status"] == "False"
    assert "credential" not in status and "media" not in status
    expected = _validate_cli(obj, tmp_path, capsys)["errors"]
    assert len(expected) >= 3
    shown = [
        (e["path"].replace("spec.siteConfig", "spec", 1), e["message"], e.get("line"))
        for e in status["validation"]["errors"]
    ]
    assert shown == [(e["path"], e["message"], e["line"]) for e in expected]
    assert admin.find(kube.Ref(kube.SECRETS, "store-9-report", "fleet")) is None


def test_secret_material_inline_is_refused(
    hub: HubSimulator, admin: kube.Client, controller: operator.Controller
) -> None:
    config = site_config(
        "store-8", pullSecret={"inline": {"auths": {"r.example:5000": {"auth": "dTpw"}}}, "mode": "merge"}
    )
    config["proxy"] = {"httpsProxy": "http://user:hunter2@proxy.example:3128"}
    admin.create(SITES, site_object("store-8", config))
    status = wait_phase(admin, "store-8", site.Phase.INVALID)["status"]
    assert status["reason"] == "InlineSecret"
    paths = [e["path"] for e in status["validation"]["errors"]]
    assert "spec.siteConfig.pullSecret.inline" in paths
    assert "spec.siteConfig.proxy.httpsProxy" in paths
    assert "hunter2" not in json.dumps(status) and "dTpw" not in json.dumps(status)


def test_a_missing_secret_is_named_with_the_fix(
    hub: HubSimulator, admin: kube.Client, controller: operator.Controller
) -> None:
    obj = site_object("store-7")
    obj["spec"]["files"]["pull-secret.json"]["secretKeyRef"]["name"] = "no-such-secret"
    admin.create(SITES, obj)
    status = wait_phase(admin, "store-7", site.Phase.INVALID)["status"]
    assert status["reason"] == "MissingInput"
    first = status["validation"]["errors"][0]
    assert first["path"] == "spec.files.pull-secret.json"
    assert "Secret fleet/no-such-secret does not exist" in first["message"]


def test_the_hub_refuses_a_file_with_two_sources(hub: HubSimulator, admin: kube.Client) -> None:
    obj = site_object("store-6")
    obj["spec"]["files"]["pull-secret.json"]["configMapKeyRef"] = {"name": "x", "key": "y"}
    with pytest.raises(kube.Invalid, match="give exactly one of secretKeyRef and configMapKeyRef"):
        admin.create(SITES, obj)

"""`snoreloc fleet import-report` against the hub simulator, without a relocation: a signed report is applied with
`source: imported`; one older than the Site's is skipped; one for another site-config (digest), one without a hub
block, and one for a Site the hub does not know are refused with their exit codes, nothing written."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from snoreloc_fleet.controller import operator
from snoreloc_fleet.hub import credentials
from snoreloc_fleet.resource import site

from snoreloc.adapters import kube
from snoreloc.cli import main
from snoreloc.engine import hubreport
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import NS, get_site, stick_site, wait_phase


def _carried(admin: kube.Client, path: pathlib.Path, *, digest: str, when: str, name: str = "store-1") -> pathlib.Path:
    """What `snoreloc status --output json` of a finished run carries back, signed with the site's key."""
    key = credentials.report_key(admin.get(kube.Ref(kube.SECRETS, f"{name}-report", NS)))
    assert key is not None
    report: dict[str, Any] = {"reportedAt": when, "runState": "done", "siteConfigDigest": digest, "source": "node",
                              "step": "final-settle", "stepsDone": 3, "stepsTotal": 3}  # fmt: skip
    hub = {"namespace": NS, "name": name, "report": report, "signature": hubreport.sign(key, NS, name, report)}
    path.write_text(json.dumps({"state": "done", "hub": hub}))
    return path


def _import(hub: HubSimulator, path: pathlib.Path) -> int:
    return main.main(["fleet", "import-report", str(path), "--kubeconfig", str(hub.kubeconfig_path)])


def test_a_carried_report_is_applied_and_an_older_one_skipped(
    hub: HubSimulator,
    admin: kube.Client,
    controller: operator.Controller,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    digest = stick_site(admin, "store-1")["status"]["media"]["digest"]
    assert _import(hub, _carried(admin, tmp_path / "new.json", digest=digest, when="2026-11-24T10:00:00Z")) == 0
    assert "applied (done)" in capsys.readouterr().out
    agent = wait_phase(admin, "store-1", site.Phase.RELOCATED)["status"][site.STATUS_AGENT]
    assert (agent["source"], agent["reportedAt"]) == ("imported", "2026-11-24T10:00:00Z")
    assert _import(hub, _carried(admin, tmp_path / "old.json", digest=digest, when="2026-11-23T10:00:00Z")) == 0
    assert "holds a newer report" in capsys.readouterr().out
    assert get_site(admin, "store-1")["status"][site.STATUS_AGENT]["reportedAt"] == "2026-11-24T10:00:00Z"


def test_reports_that_cannot_be_proven_are_refused(
    hub: HubSimulator, admin: kube.Client, controller: operator.Controller, tmp_path: pathlib.Path
) -> None:
    stick_site(admin, "store-1")
    other = _carried(admin, tmp_path / "other.json", digest="sha256:" + "f" * 64, when="2026-11-24T10:00:00Z")
    assert _import(hub, other) == 77
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({"state": "done"}))
    assert _import(hub, bare) == 65
    document = json.loads(other.read_text())
    document["hub"]["name"] = "store-404"
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps(document))
    assert _import(hub, unknown) == 69
    assert get_site(admin, "store-1")["status"].get(site.STATUS_AGENT) is None

"""The secret scans of `tests/reliability/test_secret_hygiene.py` extended to the fleet hub: after a relocation
that reports to its Site, a Site with secret material inline, and another site's revoked credential, no secret
appears in any Site's status, any Event, the controller's log, or the node's reports (the Site's `status.agent`
and the signed report of `snoreloc status --output json`), nor in the node's `collect-logs` bundle (its stick copy
now holds the reporting kubeconfig). The secrets: the pull secret's auth (base64, decoded, the password), the proxy
password and inline auth a Site carried by mistake, every site's reporting token and report key, and the hub's
admin token."""

from __future__ import annotations

import base64
import json
import logging
import pathlib
from typing import Any

import pytest
import yaml
from snoreloc_fleet.controller import reconcile
from snoreloc_fleet.hub import credentials
from snoreloc_fleet.resource import site

from reliability.test_secret_hygiene import _auth_forms, _hits
from snoreloc.adapters import command, kube
from snoreloc.engine import bundle
from snoreloc.siteconfig import medium
from snoreloc_sim.hub.simulator import HubSimulator
from snoreloc_sim.openshift import simulator

from .conftest import (
    NS,
    PULL_SECRET,
    SITES,
    relocate_node,
    site_config,
    site_object,
    status_json,
    two_sites_and_a_stick,
    wait_phase,
)

pytestmark = pytest.mark.simonly
PROXY_PASSWORD = "pr0xy-Pa55word-9"
INLINE_AUTH = base64.b64encode(b"inline-user:inl1ne-pa55").decode()


def _tokens_and_keys(admin: kube.Client) -> list[str]:
    found = []
    for secret in admin.list(kube.SECRETS, NS):
        data = secret.get("data") or {}
        if credentials.KUBECONFIG_KEY in data:
            config = yaml.safe_load(base64.b64decode(data[credentials.KUBECONFIG_KEY]))
            found.append(config["users"][0]["user"]["token"])
            key = base64.b64decode(data[credentials.REPORT_KEY])
            found += [data[credentials.REPORT_KEY], key.hex()]
    return found


def test_no_secret_reaches_site_status_events_controller_log_or_node_reports(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Any,
    sim: simulator.Simulator,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    start_controller()
    leaky = site_config("store-8", pullSecret={"inline": {"auths": {"r:5000": {"auth": INLINE_AUTH}}}})
    leaky["proxy"] = {"httpsProxy": f"http://user:{PROXY_PASSWORD}@proxy.example:3128"}
    admin.create(SITES, site_object("store-8", leaky))
    root = two_sites_and_a_stick(hub, admin, tmp_path, capsys)
    wait_phase(admin, "store-8", site.Phase.INVALID)
    secrets = _tokens_and_keys(admin)  # before revocation: the first token is a secret too
    assert len(secrets) == 6, "two sites' tokens and keys (base64 and hex)"
    credentials.revoke(admin, NS, "store-043")
    relocate_node(root, sim)
    wait_phase(admin, "store-042", site.Phase.RELOCATED, timeout=60)
    report = status_json(root, capsys)
    assert report["hub"]["signature"].startswith("hmac-sha256:")

    stick_pull_secret = json.loads((root.path("/etc/snoreloc") / "pull-secret.json").read_text())
    pull_auths = [e["auth"] for e in stick_pull_secret["auths"].values()]
    pull_auths += [e["auth"] for e in PULL_SECRET["auths"].values()]
    values = [form for auth in [*pull_auths, INLINE_AUTH] for form in _auth_forms(auth)]
    values += [PROXY_PASSWORD, hub.token, *secrets, *_tokens_and_keys(admin)]
    outputs: dict[str, bytes] = {}
    for obj in admin.list(SITES, NS):
        outputs[f"site:{obj['metadata']['name']}:status"] = json.dumps(obj.get("status")).encode()
    for event in admin.list(reconcile.EVENTS, NS):
        outputs[f"event:{event['metadata']['name']}"] = json.dumps(event).encode()
    outputs["controller-log"] = caplog.text.encode()
    outputs["node-report"] = json.dumps(report["hub"]).encode()
    outputs["node-log"] = (root.path("/var/lib/snoreloc") / "snoreloc.log").read_bytes()
    journalctl = command.FakeRunner().on(["journalctl"], command.Result(0, "no entries\n"))
    bundle_members = bundle.collect(root.path("/var/lib/snoreloc"), journalctl, root=root.path("/"))
    outputs.update({f"collect-logs:{name}": data for name, data in bundle_members.items()})
    assert len([k for k in outputs if k.startswith("event:")]) >= 2, "store-8 Invalid, store-042 Relocated"
    assert "secret material is not accepted inline" in outputs["site:store-8:status"].decode()
    assert _hits(outputs, sorted(set(values))) == []
    assert (root.path("/etc/snoreloc") / medium.HUB_FILE).stat().st_mode & 0o077 == 0

"""Credentials in a Site field are never quoted (issue 30, "Security"): a pull-secret-like `user:password@host`
without a URL scheme and a JSON Web Token, written into fields the controller validates (and whose findings quote
the value), appear neither in the Site's status, nor in its Events, nor in `fleet why` (text and JSON), over HTTPS
against the hub simulator. The masking is `snoreloc.redact`'s (free text); every message the controller writes to
status or an Event goes through it (`controller.status.said`)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import pytest
from snoreloc_fleet.controller import reconcile
from snoreloc_fleet.resource import site

from snoreloc import redact
from snoreloc.adapters import kube
from snoreloc.cli import main
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import NS, SITES, Running, site_config, site_object, wait_phase

PASSWORD = "s3cr3t-Pw0rd"
USER_PASSWORD = f"fleet-user:{PASSWORD}"


def _jwt() -> str:
    def part(value: dict[str, str]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256', 'kid': 'k1'})}.{part({'sub': 'system:serviceaccount:x:y'})}.c2lnbmF0dXJlLWJ5dGVz"


JWT = _jwt()
# site name -> (site-config fields carrying a credential, the forms that must never be shown)
PROXY = "http://proxy.example:3128"
CASES = {
    "store-ntp": ({"ntp": {"servers": [f"{USER_PASSWORD}@ntp.example.com"]}}, (USER_PASSWORD, PASSWORD)),
    "store-noproxy": ({"proxy": {"httpsProxy": PROXY, "noProxy": [f"{USER_PASSWORD}@h"]}}, (USER_PASSWORD, PASSWORD)),
    "store-key": ({f"{USER_PASSWORD}@h.example.com": 1}, (USER_PASSWORD, PASSWORD)),
    "store-jwt-key": ({JWT: 1}, (JWT, JWT.split(".")[1])),
}


@pytest.mark.parametrize("text", [f"{USER_PASSWORD}@host.example", f"'{USER_PASSWORD}@h'", f"a={JWT}", f"({JWT})"])
def test_redact_masks_the_credential_forms(text: str) -> None:
    masked = redact.redact(text)
    assert PASSWORD not in masked and JWT not in masked and redact.MASK in masked


@pytest.mark.parametrize(
    "text",
    ["quay.io/org/img@sha256:0123abcd", "registry.example:5000/img@sha256:ab", "git@github.com:org/repo", "a.b.c"],
)
def test_redact_leaves_what_is_no_credential(text: str) -> None:
    assert redact.redact(text) == text


def test_a_credential_in_a_site_field_is_quoted_nowhere(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    capsys: pytest.CaptureFixture[str],
) -> None:
    redact.forget_secrets()  # only the patterns may mask here, not values some other test registered
    for name, (fields, _) in CASES.items():
        admin.create(SITES, site_object(name, site_config(name, **fields)))
    start_controller()
    shown: dict[str, str] = {}
    for name in CASES:
        status = wait_phase(admin, name, site.Phase.INVALID)["status"]
        assert status["reason"] == site.Reason.INVALID_SITE_CONFIG, (name, status["reason"])
        assert redact.MASK in json.dumps(status), f"{name}: the finding quotes the field, masked"
        shown[f"{name}:status"] = json.dumps(status)
        for output in ("text", "json"):
            capsys.readouterr()
            argv = ["fleet", "why", name, "-n", NS, "--kubeconfig", str(hub.kubeconfig_path), "-o", output]
            assert main.main(argv) == 0
            shown[f"{name}:why:{output}"] = capsys.readouterr().out
    events = admin.list(reconcile.EVENTS, NS)
    assert {e["involvedObject"]["name"] for e in events} == set(CASES), "an Event each: the phase became Invalid"
    shown.update({f"event:{e['metadata']['name']}": json.dumps(e) for e in events})
    leaks = [
        (where, form)
        for name, (_, forms) in CASES.items()
        for where, text in shown.items()
        for form in forms
        if form in text
    ]
    assert leaks == []

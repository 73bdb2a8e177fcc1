"""The controller against the hub simulator over HTTPS: a valid Site gets Ready, and once its stick is asked for
(`fleet make-media`'s annotation) a credential scoped to its own status; its token is refused elsewhere (403),
after revocation (401, and no new one until a stick is asked for again) and after deletion; status is written only
when it changes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from snoreloc_fleet.controller import operator
from snoreloc_fleet.hub import credentials
from snoreloc_fleet.resource import keyorder, site

from snoreloc.adapters import clock, kube
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import (
    NS,
    SITES,
    Running,
    get_site,
    ready_site,
    refused_after_revocation,
    report_kubeconfig,
    request_credential,
    site_client,
    site_object,
    stick_site,
    wait_for,
    wait_phase,
)


def _report(state: str = "running") -> dict[str, object]:
    return {"status": {site.STATUS_AGENT: {"runState": state, "step": "settle", "source": "node"}}}


def _conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in obj["status"]["conditions"]}


def _owned(name: str) -> list[kube.Ref]:
    return [
        kube.Ref(credentials.SERVICEACCOUNTS, f"site-{name}", NS), kube.Ref(credentials.ROLES, f"site-{name}", NS),
        kube.Ref(credentials.ROLEBINDINGS, f"site-{name}", NS), kube.Ref(kube.SECRETS, f"site-{name}-binding", NS),
        kube.Ref(kube.SECRETS, f"{name}-report", NS),
    ]  # fmt: skip


def test_a_valid_site_is_ready_with_no_credential_until_its_stick_is_asked_for(
    hub: HubSimulator, admin: kube.Client, controller: operator.Controller
) -> None:
    obj = ready_site(admin, "store-1")
    media = next(c for c in obj["status"]["conditions"] if c["type"] == "MediaReady")
    assert (media["status"], media["reason"]) == ("False", "NotRequested")
    assert "snoreloc fleet make-media SITE" in media["message"]
    assert "credential" not in obj["status"]
    assert all(admin.find(ref) is None for ref in _owned("store-1")), "no token lives for a stick not asked for"
    annotations = set(obj["metadata"].get("annotations") or {}) - {keyorder.ANNOTATION}  # the owner's, as rendered
    assert not annotations and not obj["metadata"].get("finalizers"), "kopf wrote nothing"
    obj = request_credential(admin, "store-1")
    status = obj["status"]
    conditions = _conditions(obj)
    assert conditions["Validated"] == ("True", "Valid")
    assert conditions["MediaReady"] == ("True", "CredentialIssued")
    assert conditions["Reporting"] == ("False", "NoReport")
    assert status["media"]["digest"].startswith("sha256:")
    assert status["media"]["files"] == ["site-config.yaml", "pull-secret.json"]
    assert status["credential"]["expiresAt"] > status["credential"]["issuedAt"]
    assert obj["metadata"]["labels"][site.PHASE_LABEL] == "Ready"
    assert set(obj["metadata"]["annotations"]) == {keyorder.ANNOTATION, site.MEDIA_REQUESTED}
    role = admin.get(kube.Ref(credentials.ROLES, "site-store-1", NS))
    assert role["rules"] == credentials.role_rules("store-1")
    for resource, name in ((credentials.SERVICEACCOUNTS, "site-store-1"), (kube.SECRETS, "store-1-report")):
        owners = admin.get(kube.Ref(resource, name, NS))["metadata"]["ownerReferences"]
        assert owners == [credentials.owner_reference(obj)]


def test_a_sites_token_patches_its_own_status_only(
    hub: HubSimulator, admin: kube.Client, controller: operator.Controller
) -> None:
    for name in ("store-1", "store-2"):
        admin.create(SITES, site_object(name))
    for name in ("store-1", "store-2"):
        wait_phase(admin, name, site.Phase.READY)
        request_credential(admin, name)
    own = site_client(hub, report_kubeconfig(admin, "store-1"), "store-1.kubeconfig")
    try:
        own.request("PATCH", kube.Ref(SITES, "store-1", NS).path("status"), body=_report(),
                    content_type=kube.MERGE_PATCH, retry=False)  # fmt: skip
        with pytest.raises(kube.Forbidden, match="403"):
            own.request("PATCH", kube.Ref(SITES, "store-2", NS).path("status"), body=_report(),
                        content_type=kube.MERGE_PATCH, retry=False)  # fmt: skip
        with pytest.raises(kube.Forbidden, match="403"):
            own.patch(kube.Ref(SITES, "store-1", NS), {"spec": {"suspend": True}}, retry=False)
        with pytest.raises(kube.Forbidden, match="403"):
            own.request("GET", SITES.path(namespace=NS), retry=False)
        with pytest.raises(kube.Forbidden, match="403"):
            own.request("GET", kube.SECRETS.path(namespace=NS), retry=False)
    finally:
        own.close()
    wait_phase(admin, "store-1", site.Phase.IN_PROGRESS)
    assert get_site(admin, "store-2")["status"].get(site.STATUS_AGENT) is None


def test_a_revoked_token_is_refused_and_replaced_only_on_a_new_request(
    hub: HubSimulator, admin: kube.Client, controller: operator.Controller
) -> None:
    stick_site(admin, "store-1")
    old = report_kubeconfig(admin, "store-1")
    key = credentials.report_key(admin.get(kube.Ref(kube.SECRETS, "store-1-report", NS)))
    credentials.revoke(admin, NS, "store-1")
    revoked = site_client(hub, old, "old.kubeconfig")
    path = kube.Ref(SITES, "store-1", NS).path("status")
    try:
        refused_after_revocation(revoked, "PATCH", path, body=_report(), content_type=kube.MERGE_PATCH)
    finally:
        revoked.close()
    # the sweep (every second here) sees the revocation and issues nothing by itself
    wait_for(
        "MediaReady Revoked", lambda: _conditions(get_site(admin, "store-1"))["MediaReady"] == ("False", "Revoked")
    )
    assert "credential" not in get_site(admin, "store-1")["status"]
    assert admin.find(kube.Ref(kube.SECRETS, "site-store-1-binding", NS)) is None
    assert report_kubeconfig(admin, "store-1") == old
    request_credential(admin, "store-1")  # make-media again: a new request, a new token
    new = report_kubeconfig(admin, "store-1")
    assert new != old
    assert credentials.report_key(admin.get(kube.Ref(kube.SECRETS, "store-1-report", NS))) == key, (
        "reports carried back from the old stick still prove with the site's key"
    )
    fresh = site_client(hub, new, "new.kubeconfig")
    try:
        fresh.request("PATCH", path, body=_report(), content_type=kube.MERGE_PATCH, retry=False)
    finally:
        fresh.close()


def test_a_binding_secret_deleted_by_hand_takes_the_sites_grant_with_it_at_the_next_pass(
    hub: HubSimulator, admin: kube.Client, controller: operator.Controller
) -> None:
    """`kubectl delete secret site-NAME-binding`: the controller, at its next pass over the Site (the sweep, every
    second here), deletes the RoleBinding too, so the token is granted nothing while the API server's token cache
    still authenticates it (docs/fleet.md, "How soon a revoked token stops working")."""
    stick_site(admin, "store-1")
    binding = kube.Ref(credentials.ROLEBINDINGS, "site-store-1", NS)
    assert admin.find(binding) is not None
    admin.delete(kube.Ref(kube.SECRETS, "site-store-1-binding", NS))
    wait_for("the RoleBinding withdrawn", lambda: admin.find(binding) is None)
    revoked = ("False", "Revoked")
    wait_for("MediaReady Revoked", lambda: _conditions(get_site(admin, "store-1"))["MediaReady"] == revoked)
    request_credential(admin, "store-1")  # make-media again: bound again
    assert admin.find(binding) is not None


@pytest.mark.hubsimonly  # the simulator's token cache at 3 s; on a real hub the other tests meet its 10 s one
@pytest.mark.parametrize("hub_options", [{"token_cache_seconds": 3.0}])
def test_a_revoked_token_is_granted_nothing_at_once_and_refused_once_the_token_cache_lets_go(
    hub: HubSimulator, admin: kube.Client, controller: operator.Controller
) -> None:
    """As on a real kube-apiserver (its token cache, 10 s there, 3 s here): the revoked token still authenticates
    for a while, but `revoke` took its RoleBinding first, so it may do nothing (403) and then nothing at all (401)."""
    stick_site(admin, "store-1")
    token = site_client(hub, report_kubeconfig(admin, "store-1"), "token.kubeconfig")
    path = kube.Ref(SITES, "store-1", NS).path("status")
    try:
        token.request("GET", path, retry=False)  # authenticated: the success is cached now
        credentials.revoke(admin, NS, "store-1")
        with pytest.raises(kube.Forbidden, match=": 403 "):
            token.request("PATCH", path, body=_report(), content_type=kube.MERGE_PATCH, retry=False)
        seconds = refused_after_revocation(token, "GET", path)
    finally:
        token.close()
    assert 0.5 < seconds <= 3.0 + 1.0, seconds
    assert get_site(admin, "store-1")["status"].get(site.STATUS_AGENT) is None, "nothing got through meanwhile"


def test_status_is_written_only_when_it_changes(
    hub: HubSimulator, admin: kube.Client, start_controller: object
) -> None:
    running = start_controller(sweep=0.2)  # type: ignore[operator]
    ready_site(admin, "store-1")
    counters = running.controller.counters
    wait_for("three sweeps", lambda: counters.reconciles >= 5)
    writes = (counters.status_writes, counters.label_writes, counters.events)
    before = counters.reconciles
    wait_for("five more reconciles", lambda: counters.reconciles >= before + 5)
    assert (counters.status_writes, counters.label_writes, counters.events) == writes
    assert writes == (1, 1, 0), "status and label; no Event for Ready"


def test_deleting_a_site_removes_its_credential(
    hub: HubSimulator, admin: kube.Client, controller: operator.Controller
) -> None:
    stick_site(admin, "store-1")
    token_config = report_kubeconfig(admin, "store-1")
    admin.delete(kube.Ref(SITES, "store-1", NS))
    owned = _owned("store-1")
    wait_for("the Site's objects gone", lambda: all(admin.find(ref) is None for ref in owned))
    stale = site_client(hub, token_config, "deleted.kubeconfig")
    try:
        with pytest.raises(kube.Forbidden, match="401"):
            stale.request("GET", kube.Ref(SITES, "store-1", NS).path("status"), retry=False)
    finally:
        stale.close()


def _credential(admin: kube.Client) -> dict[str, str]:
    return dict(get_site(admin, "store-1")["status"]["credential"])


class _Later(clock.SystemClock):
    """The controller's clock, `offset` seconds ahead (as the hub's token clock is, after `advance_clock`)."""

    def __init__(self, offset: float) -> None:
        self.offset = offset

    def now(self) -> dt.datetime:
        return super().now() + dt.timedelta(seconds=self.offset)


@pytest.mark.hubsimonly  # moves the hub's token clock (advance_clock)
def test_a_token_near_its_expiry_is_renewed_and_an_expired_one_refused(
    hub: HubSimulator, admin: kube.Client, start_controller: Callable[..., Running]
) -> None:
    first = start_controller()
    admin.create(SITES, site_object("store-1", report={"expirationSeconds": 3600}))
    wait_phase(admin, "store-1", site.Phase.READY)
    credential = request_credential(admin, "store-1")["status"]["credential"]
    old = report_kubeconfig(admin, "store-1")
    first.stop()
    hub.advance_clock(3000)  # 10 minutes of the hour left: less than a fifth
    start_controller(clock=_Later(3000))
    renewed = wait_for("a renewed token", lambda: (k := report_kubeconfig(admin, "store-1")) != old and k)
    later = wait_for(
        "the new expiry", lambda: (c := get_site(admin, "store-1")["status"]["credential"]) != credential and c
    )
    assert later["expiresAt"] > credential["expiresAt"]
    hub.advance_clock(700)  # past the first token's hour
    path = kube.Ref(SITES, "store-1", NS).path("status")
    expired, fresh = site_client(hub, old, "old.kubeconfig"), site_client(hub, renewed, "new.kubeconfig")
    try:
        with pytest.raises(kube.Forbidden, match="401"):
            expired.request("GET", path, retry=False)
        fresh.request("GET", path, retry=False)
    finally:
        expired.close()
        fresh.close()

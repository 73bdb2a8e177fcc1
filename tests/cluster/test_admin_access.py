"""The owner's admin access over HTTPS: what the cluster holds after `spec.adminAccess`, read back from the API.

`openshift-config/admin-kubeconfig-client-ca` ends holding the owner's CA and no longer the factory's (a user's CA
added since is kept and reported), the kubeadmin Secret is removed or holds the new hash, the plan says what it
revokes without showing a hash, the report lists what was revoked, a re-run writes nothing, and `rollback` puts the
factory's access back and says so. The factory's objects are made here when the cluster lacks them (today's
simulator seeds neither; a real cluster has both), and removed afterwards.

On the simulator, which verifies client certificates against this bundle as kube-apiserver does (live), the
factory's admin kubeconfig gets 401 after the run and the owner's certificate is let in; after `rollback` the
factory's works again (`test_the_factorys_admin_kubeconfig_gets_401_and_the_owners_is_let_in`).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path

import pytest
import yaml

from hubsim.test_hub_kubectl import KUBECTL, run_kubectl
from sim.test_client_certs import status
from snoreloc.adapters import kube
from snoreloc.engine import pipeline
from snoreloc.engine import plan as plan_mod
from snoreloc.factory import seal
from snoreloc.pki import certs
from snoreloc.siteconfig import model
from snoreloc.siteconfig.settings import admin_access
from snoreloc.steps.cluster import admin_access as step

from .conftest import Relocation, site_config

# a well-formed bcrypt hash; the simulator does not log in with it, only stores it
NEW_HASH = "$2y$12$" + "N" * 22 + "s" * 31
FACTORY_HASH = "$2a$10$" + "F" * 22 + "h" * 31


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def bundle_of(r: Relocation) -> list[str]:
    """The fingerprints `admin-kubeconfig-client-ca` holds, in order."""
    text = (r.get(step.CLIENT_CA).get("data") or {}).get(step.CA_KEY, "")
    return [certs.fingerprint(cert) for cert in certs.load_all(text.encode())]


def fingerprint(pem: bytes) -> str:
    return certs.fingerprint(certs.parse_chain(pem)[0])


@pytest.fixture
def factory(relocation: Relocation) -> str:
    """The factory's admin client signer in the bundle and a kubeadmin Secret (made when the cluster has none);
    returns the fingerprints of the factory's signers."""
    if relocation.client.find(step.CLIENT_CA) is None:
        cert = certs.issue_ca("admin-kubeconfig-signer", now=_now())[0].decode()
        meta = {"name": step.CLIENT_CA.name, "namespace": step.CLIENT_CA.namespace}
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {step.CA_KEY: cert}}
        relocation.client.create(kube.CONFIGMAPS, cm)
        relocation.undo.append(lambda: relocation.client.delete(step.CLIENT_CA))
    if relocation.client.find(step.KUBEADMIN) is None:
        meta = {"name": step.KUBEADMIN.name, "namespace": step.KUBEADMIN.namespace}
        data = {admin_access.KUBEADMIN_KEY: base64.b64encode(FACTORY_HASH.encode()).decode()}
        relocation.client.create(kube.SECRETS, {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": data})
        relocation.undo.append(lambda: relocation.client.delete(step.KUBEADMIN))
    return ",".join(bundle_of(relocation))


def owner(**options: object) -> tuple[admin_access.AdminAccess, str]:
    cert = certs.issue_ca("owner admin CA", now=_now())[0].decode()
    values: dict[str, object] = {
        "client_ca": cert,
        "revoke_factory": True,
        "kubeadmin": admin_access.Kubeadmin.REMOVE,
        **options,
    }
    return admin_access.AdminAccess(**values), fingerprint(cert.encode())  # type: ignore[arg-type]


def with_access(access: admin_access.AdminAccess) -> model.SiteConfig:
    return site_config(settings={admin_access.KEY: access})


def test_the_owner_ca_replaces_the_factorys_and_kubeadmin_goes(relocation: Relocation, factory: str) -> None:
    access, ours = owner()
    site = with_access(access)
    (planned,) = [p for p in relocation.run(site, dry_run=True).plans if p.step == "admin-access"]
    assert [(c.action.value, str(c.ref)) for c in planned.changes] == [
        ("update", str(step.CLIENT_CA)),
        ("delete", str(step.KUBEADMIN)),
    ]
    assert any(note.startswith("revokes the factory's admin client signer") for note in planned.notes)
    assert "revokes the kubeadmin login (Secret kube-system/kubeadmin removed)" in planned.notes
    assert bundle_of(relocation) == factory.split(",")  # planning wrote nothing

    result = relocation.run(site)
    assert result.actions["admin-access"] == "ran"
    assert bundle_of(relocation) == [ours]
    assert relocation.client.find(step.KUBEADMIN) is None
    revoked = relocation.report()["revoked"]
    assert any(f"sha256 {fp[:16]}" in line for line in revoked for fp in factory.split(","))
    assert "the kubeadmin login (Secret kube-system/kubeadmin removed)" in revoked

    writes = relocation.client.writes
    assert set(relocation.run(site).actions.values()) == {"skipped"}
    assert relocation.client.writes == writes


def test_a_users_ca_added_later_is_kept_and_reported(relocation: Relocation, factory: str) -> None:
    access, ours = owner()
    relocation.run(with_access(access))
    users = certs.issue_ca("a user's admin CA (oc config new-admin-kubeconfig)", now=_now())[0].decode()

    def add(obj: kube.Obj) -> kube.Obj:
        obj["data"][step.CA_KEY] += users
        return obj

    relocation.client.modify(step.CLIENT_CA, add)
    second, ours_too = owner()  # a re-relocation with a new owner CA
    plans = relocation.run(with_access(second), dry_run=True).plans
    (planned,) = [p for p in plans if p.step == "admin-access"]
    assert any(note.startswith("keeps admin client CA CN a user's admin CA") for note in planned.notes)
    assert any(note.startswith("revokes an earlier owner's admin client CA") for note in planned.notes)
    relocation.run(with_access(second))
    assert bundle_of(relocation) == [fingerprint(users.encode()), ours_too]
    assert ours not in bundle_of(relocation) and not set(factory.split(",")) & set(bundle_of(relocation))
    assert any("a user's admin CA" in line for line in relocation.report()["kept"])


def test_kubeadmin_gets_the_new_hash_which_no_plan_or_report_shows(relocation: Relocation, factory: str) -> None:
    access, _ = owner(kubeadmin=admin_access.Kubeadmin.REPLACE, password_hash=NEW_HASH, revoke_factory=False)
    site = with_access(access)
    plans = relocation.run(site, dry_run=True).plans
    shown = plan_mod.render(plans) + json.dumps(plan_mod.as_json(plans))
    for secret in (NEW_HASH, FACTORY_HASH, base64.b64encode(NEW_HASH.encode()).decode()):
        assert secret not in shown
    assert "revokes the factory's kubeadmin password (replaced by the site-config's hash)" in shown
    relocation.run(site)
    data = relocation.get(step.KUBEADMIN)["data"][admin_access.KUBEADMIN_KEY]
    assert base64.b64decode(data).decode() == NEW_HASH
    assert set(factory.split(",")) <= set(bundle_of(relocation))  # revokeFactory: false keeps the factory's signer
    report = json.dumps(relocation.report())
    assert NEW_HASH not in report and FACTORY_HASH not in report
    assert NEW_HASH not in relocation.paths.status.read_text()


def test_rollback_gives_the_factory_its_access_back_and_says_so(relocation: Relocation, factory: str) -> None:
    before_cm = relocation.get(step.CLIENT_CA)["data"]
    before_secret = relocation.get(step.KUBEADMIN)["data"]
    access, _ = owner()
    relocation.run(with_access(access))
    outcome = pipeline.rollback(relocation.paths, relocation.client, relocation.clock)
    assert admin_access.SETTING.rollback.why in outcome.forecast.reasons
    # a recreated kubeadmin Secret is not honoured by the OAuth server (library-go): the rollback says so
    assert step.KUBEADMIN_GONE.why in outcome.forecast.reasons
    assert relocation.get(step.CLIENT_CA)["data"] == before_cm
    assert relocation.get(step.KUBEADMIN)["data"] == before_secret
    assert str(step.KUBEADMIN) in outcome.recreated + outcome.restored


def _ways(notes: tuple[str, ...]) -> dict[str, str]:
    """The plan's factory-way-in notes, by what each way is."""
    found = [note.removeprefix("factory way in: ") for note in notes if note.startswith("factory way in: ")]
    return {line.split(": ", 1)[0]: line.split(": ", 1)[1] for line in found}


def test_plan_lists_every_factory_way_in_and_what_the_site_config_does(relocation: Relocation, factory: str) -> None:
    (without,) = [p for p in relocation.run(site_config(), dry_run=True).plans if p.step == "admin-access"]
    assert without.changes == ()
    ways = _ways(without.notes)
    assert list(ways) == [
        "SSH keys of core",
        "the factory's admin client signer (its admin kubeconfig)",
        "the kubeadmin login",
        "the node-local kubeconfigs' signer",
        "the factory's pull-secret entries",
        "service-account tokens",
    ]
    assert ways["the factory's admin client signer (its admin kubeconfig)"].endswith(
        "KEPT: this site-config gives no spec.adminAccess.clientCA"
    )
    assert ways["the kubeadmin login"].endswith("KEPT: this site-config keeps kubeadmin")
    assert ways["SSH keys of core"].endswith("KEPT: this site-config has no spec.sshAuthorizedKeys")
    assert "revoked: spec.pullSecret replaces them" in ways["the factory's pull-secret entries"]

    access, _ = owner()
    (given,) = [p for p in relocation.run(with_access(access), dry_run=True).plans if p.step == "admin-access"]
    ways = _ways(given.notes)
    assert ways["the factory's admin client signer (its admin kubeconfig)"].endswith(
        "revoked: spec.adminAccess.clientCA replaces the factory's with the owner's"
    )
    assert ways["the kubeadmin login"].endswith("revoked: spec.adminAccess.kubeadmin removes the Secret")
    shown = plan_mod.render([without, given])
    pull = relocation.get(kube.Ref(kube.SECRETS, "pull-secret", "openshift-config"))["data"][".dockerconfigjson"]
    for auth in json.loads(base64.b64decode(pull))["auths"].values():
        assert auth.get("auth", "-") not in shown  # registry names only, never their credentials


def test_seal_lists_the_factory_ways_in_and_what_a_site_config_can_do(relocation: Relocation, factory: str) -> None:
    lines = seal.KubeClusterFacts(relocation.client).factory_ways_in()
    assert [line.split(": ", 1)[0] for line in lines] == [
        "SSH keys of core",
        "the factory's admin client signer (its admin kubeconfig)",
        "the kubeadmin login",
        "the node-local kubeconfigs' signer",
        "the factory's pull-secret entries",
        "service-account tokens",
    ]
    assert "a site-config's spec.adminAccess.clientCA revokes them" in lines[1]
    assert "Secret kube-system/kubeadmin present" in lines[2]


def test_a_hash_for_a_cluster_without_kubeadmin_is_not_written_and_the_run_says_why(
    relocation: Relocation, factory: str
) -> None:
    secret = relocation.get(step.KUBEADMIN)
    relocation.client.delete(step.KUBEADMIN)  # removed at the factory
    relocation.undo.append(lambda: relocation.client.create(kube.SECRETS, {**secret, "metadata": {
        "name": step.KUBEADMIN.name, "namespace": step.KUBEADMIN.namespace}}))  # fmt: skip
    access, _ = owner(kubeadmin=admin_access.Kubeadmin.REPLACE, password_hash=NEW_HASH)
    (planned,) = [p for p in relocation.run(with_access(access), dry_run=True).plans if p.step == "admin-access"]
    assert str(step.KUBEADMIN) not in [str(c.ref) for c in planned.changes]
    assert step.KUBEADMIN_ABSENT in planned.notes
    relocation.run(with_access(access))
    assert relocation.client.find(step.KUBEADMIN) is None  # a new Secret would not be honoured: none is made
    assert step.KUBEADMIN_ABSENT in relocation.report()["warnings"]
    assert not [line for line in relocation.report()["revoked"] if "kubeadmin" in line]


def _owners_kubeconfig(factory_kubeconfig: Path, ca: tuple[bytes, bytes], path: Path) -> Path:
    """The owner's admin kubeconfig: the factory's cluster entry (server, CA) with a client certificate the owner's
    CA signed, made here as `snoreloc admin-access init` makes it on the owner's machine."""
    cert, key = certs.issue_client(ca[0], ca[1], "system:admin", ("system:masters",), now=_now())
    config = yaml.safe_load(factory_kubeconfig.read_text())
    user = {
        "client-certificate-data": base64.b64encode(cert).decode(),
        "client-key-data": base64.b64encode(key).decode(),
    }
    config["users"] = [{"name": "owner", "user": user}]
    config["contexts"][0]["context"]["user"] = "owner"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


@pytest.mark.simonly  # the simulator's factory admin kubeconfig; on a real cluster use the factory's own
def test_the_factorys_admin_kubeconfig_gets_401_and_the_owners_is_let_in(
    relocation: Relocation, factory: str, tmp_path: Path
) -> None:
    factory_kubeconfig = Path(relocation.sim.factory_admin_kubeconfig)
    ca = certs.issue_ca("owner admin CA", now=_now())
    owners = _owners_kubeconfig(factory_kubeconfig, ca, tmp_path / "owner.kubeconfig")
    assert (status(factory_kubeconfig), status(owners)) == (200, 401)  # before: only the factory is let in
    access = admin_access.AdminAccess(
        client_ca=ca[0].decode(), revoke_factory=True, kubeadmin=admin_access.Kubeadmin.REMOVE
    )
    relocation.run(with_access(access))
    assert (status(factory_kubeconfig), status(owners)) == (401, 200)
    if KUBECTL is not None:  # and Debian's kubectl, as the owner and the factory would use it (CI unpacks it)
        assert run_kubectl(owners, tmp_path, "get", "ns", "-o", "name").code == 0
        refused = run_kubectl(factory_kubeconfig, tmp_path, "get", "ns", "-o", "name")
        assert refused.code == 1 and "Unauthorized" in refused.err
    assert not relocation.sim.kubeadmin_login(relocation.sim.kubeadmin_password)  # its Secret is gone
    pipeline.rollback(relocation.paths, relocation.client, relocation.clock)
    assert status(factory_kubeconfig) == 200  # the factory's admin signer is back in the bundle
    assert status(owners) == 401


def test_long_lived_tokens_outside_the_platform_are_listed_by_name_never_by_content(relocation: Relocation) -> None:
    token = base64.b64encode(b"factory-ci-token-value").decode()
    made = [
        {"metadata": {"name": "factory-ci-token", "namespace": "edge-app", "annotations": {
            "kubernetes.io/service-account.name": "default"}}, "type": "kubernetes.io/service-account-token",
         "data": {"token": token}},
        {"metadata": {"name": "operator-token", "namespace": "openshift-config", "annotations": {
            "kubernetes.io/service-account.name": "default"}}, "type": "kubernetes.io/service-account-token",
         "data": {"token": token}},
    ]  # fmt: skip
    for secret in made:
        relocation.client.create(kube.SECRETS, secret)
    try:
        (planned,) = [p for p in relocation.run(site_config(), dry_run=True).plans if p.step == "admin-access"]
        line = _ways(planned.notes)["service-account tokens"]
        assert "1 long-lived token Secret(s)" in line and "edge-app/factory-ci-token" in line
        assert "operator-token" not in line and "KEPT" in line
        assert token not in plan_mod.render([planned]) and "factory-ci-token-value" not in plan_mod.render([planned])
    finally:
        for secret in made:
            meta = secret["metadata"]
            relocation.client.delete(kube.Ref(kube.SECRETS, meta["name"], meta["namespace"]))

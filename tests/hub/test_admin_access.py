"""The hub's side of each site's admin keys (issue 32 item 3), over HTTPS against the hub simulator with the
controller running: a Site with `spec.adminAccess.generate` gets its admin CA and client certificate made once, in
a backup-labelled Secret it owns; its medium carries the CA's certificate and no key; `fleet admin-kubeconfig`
hands the kubeconfig over (0600) once the site has relocated, and no key reaches a status, an Event, a log line or
`fleet status`/`fleet why`."""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import pathlib
from collections.abc import Callable
from typing import Any

import bcrypt
import pytest
import yaml
from cryptography import x509
from snoreloc_fleet.controller import reconcile
from snoreloc_fleet.hub import adminaccess, sitemedium
from snoreloc_fleet.resource import site

from snoreloc import redact
from snoreloc.adapters import kube
from snoreloc.cli import main
from snoreloc.pki import certs
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import NS, SITES, Running, get_site, site_config, site_object, wait_for

pytestmark = pytest.mark.simonly
NOW = dt.datetime.now(dt.UTC)


def _generated(admin: kube.Client, name: str, rotation: int = 0) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        shown = (get_site(admin, name).get("status") or {}).get(site.STATUS_ADMIN_ACCESS) or {}
        return shown if shown.get("rotation") == rotation and shown.get("caFingerprint") else None

    result: dict[str, Any] = wait_for(f"site {name}'s admin access (rotation {rotation})", done)
    return result


def _secret(admin: kube.Client, name: str) -> dict[str, Any]:
    return admin.get(kube.Ref(kube.SECRETS, adminaccess.secret_name(name), NS))


def _key_forms(secret: dict[str, Any]) -> list[str]:
    """Every form a leaked key could take: the Secret's base64, the PEM, and each line of the PEM's body."""
    forms = []
    for key in (adminaccess.CA_KEY, adminaccess.CLIENT_KEY):
        encoded = secret["data"][key]
        pem = base64.b64decode(encoded).decode()
        forms += [encoded, pem]
        forms += [line for line in pem.splitlines() if line and not line.startswith("-----")]
    return forms


def _ask(**spec: Any) -> dict[str, Any]:
    return {"adminAccess": {"generate": True, **spec}}


def test_keys_made_once_backup_labelled_owned_and_rotated_only_when_asked(
    hub: HubSimulator, admin: kube.Client, start_controller: Callable[..., Running]
) -> None:
    admin.create(SITES, site_object("store-a", **_ask()))
    admin.create(SITES, site_object("store-plain"))
    start_controller()
    shown = _generated(admin, "store-a")
    secret = _secret(admin, "store-a")
    assert secret["metadata"]["labels"][adminaccess.BACKUP_LABEL] == "true"
    assert secret["metadata"]["labels"][site.SITE_LABEL] == "store-a"
    owner = secret["metadata"]["ownerReferences"][0]
    obj = get_site(admin, "store-a")
    assert (owner["kind"], owner["name"], owner["uid"]) == (site.KIND, "store-a", obj["metadata"]["uid"])
    ca = x509.load_pem_x509_certificate(base64.b64decode(secret["data"][adminaccess.CA_CERT]))
    assert shown == {"state": "generated", "secret": "store-a-admin", "caFingerprint": certs.fingerprint(ca),
                     "rotation": 0, "kubeadmin": "removed"}  # fmt: skip
    client = x509.load_pem_x509_certificate(base64.b64decode(secret["data"][adminaccess.CLIENT_CERT]))
    client.verify_directly_issued_by(ca)
    assert client.subject.rfc4514_string() == "CN=system:admin,O=system:masters"

    version = secret["metadata"]["resourceVersion"]
    for _ in range(3):  # reconciles beyond the controller's own sweeps: nothing is made again
        reconcile.reconcile(admin, reconcile.Config(hub_of(hub)), reconcile.site_ref(NS, "store-a"), NOW)
    assert _secret(admin, "store-a")["metadata"]["resourceVersion"] == version
    assert admin.find(kube.Ref(kube.SECRETS, adminaccess.secret_name("store-plain"), NS)) is None
    assert site.STATUS_ADMIN_ACCESS not in (get_site(admin, "store-plain").get("status") or {})

    admin.patch(reconcile.site_ref(NS, "store-a"), {"spec": {"adminAccess": {"rotation": 1}}})
    rotated = _generated(admin, "store-a", rotation=1)
    assert rotated["caFingerprint"] != shown["caFingerprint"]
    assert _secret(admin, "store-a")["metadata"]["annotations"][adminaccess.ROTATION] == "1"


def hub_of(hub: HubSimulator) -> Any:
    from snoreloc_fleet.hub import credentials  # noqa: PLC0415

    return credentials.Hub(hub.api_url, hub.ca_pem)


def test_the_medium_carries_the_ca_certificate_and_never_a_key(
    hub: HubSimulator, admin: kube.Client, start_controller: Callable[..., Running]
) -> None:
    admin.create(SITES, site_object("store-m", **_ask()))
    start_controller()
    _generated(admin, "store-m")
    secret = _secret(admin, "store-m")
    checked = sitemedium.examine(admin, get_site(admin, "store-m"))
    text = checked.tree["site-config.yaml"]
    document = yaml.safe_load(text)
    ca_pem = base64.b64decode(secret["data"][adminaccess.CA_CERT]).decode()
    assert document["spec"]["adminAccess"] == {"clientCA": {"pem": ca_pem}, "revokeFactory": True,
                                               "kubeadmin": "remove"}  # fmt: skip
    medium_bytes = b"".join(checked.tree.values())
    assert [form for form in _key_forms(secret) if form.encode() in medium_bytes] == []
    assert b"PRIVATE KEY" not in medium_bytes
    # the agent's own rules accept the medium's adminAccess: the Site is valid and its medium ready to be made
    assert not (checked.missing or checked.inline or checked.refused or checked.problems), checked.problems
    assert checked.valid


def test_a_site_giving_its_own_admin_access_and_asking_the_hub_is_refused(
    hub: HubSimulator, admin: kube.Client, start_controller: Callable[..., Running]
) -> None:
    config = site_config("store-both", adminAccess={"clientCA": {"pem": "x"}})
    admin.create(SITES, site_object("store-both", config, **_ask()))
    start_controller()
    _generated(admin, "store-both")
    status = wait_for("store-both Invalid", lambda: get_site(admin, "store-both")["status"].get("phase") == "Invalid")
    assert status
    findings = get_site(admin, "store-both")["status"]["validation"]["errors"]
    assert any(f["path"] == "spec.siteConfig.adminAccess" and "keep one" in f["message"] for f in findings)


def _api_files(admin: kube.Client, name: str, domain: str) -> tuple[bytes, dict[str, Any]]:
    """The site's API serving certificate (from its own CA) in a ConfigMap and its key in a Secret; (the API's CA,
    the Site's spec.files entries)."""
    ca, ca_key = certs.issue_ca("site-api-ca", now=NOW)
    chain, key = certs.issue_serving(ca, ca_key, [f"api.{domain}"], now=NOW)
    admin.create(
        kube.CONFIGMAPS, {"metadata": {"name": f"{name}-api", "namespace": NS}, "data": {"crt": chain.decode()}}
    )
    data = {"key": base64.b64encode(key).decode()}
    admin.create(kube.SECRETS, {"metadata": {"name": f"{name}-api-key", "namespace": NS}, "data": data})
    files = {
        "api.crt": {"configMapKeyRef": {"name": f"{name}-api", "key": "crt"}},
        "api.key": {"secretKeyRef": {"name": f"{name}-api-key", "key": "key"}},
    }
    return ca, files


def _verb(hub: HubSimulator, capsys: pytest.CaptureFixture[str], name: str, *where: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main.main(["fleet", "admin-kubeconfig", name, "-n", NS, "--kubeconfig", str(hub.kubeconfig_path), *where])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_admin_kubeconfig_handed_over_once_relocated_0600_signed_by_the_medium_ca_and_no_key_anywhere(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    redact.forget_secrets()  # a key must not appear at all, not merely be masked by a value registered earlier
    name, domain = "store-k", "sno.store-k.example.com"
    api_ca, files = _api_files(admin, name, domain)
    config = site_config(name, certificates={"api": {"certificate": {"file": "api.crt"}, "key": {"file": "api.key"}}})
    obj = site_object(name, config, **_ask())
    obj["spec"]["files"].update(files)
    admin.create(SITES, obj)
    admin.create(SITES, site_object("store-nocert", **_ask()))
    start_controller()
    _generated(admin, name)
    _generated(admin, "store-nocert")
    out = tmp_path / "owner" / "admin.kubeconfig"
    out.parent.mkdir(mode=0o700)

    code, _, err = _verb(hub, capsys, name, "--output", str(out))
    assert code == 75 and "has not finished its relocation" in err and not out.exists()
    relocated = {"status": {site.STATUS_AGENT: {"runState": "done", "step": "", "source": "node"}}}
    for who in (name, "store-nocert"):
        path = reconcile.site_ref(NS, who).path("status")
        admin.request("PATCH", path, body=relocated, content_type=kube.MERGE_PATCH)
    code, _, err = _verb(hub, capsys, "store-nocert", "--output", str(tmp_path / "owner" / "none"))
    assert code == 75 and "does not know the CA of api.<domain>" in err
    assert _verb(hub, capsys, "store-none", "--print")[0] == 69
    with pytest.raises(SystemExit) as usage:  # argparse's exit, with the agent's usage code
        _verb(hub, capsys, "store-nocert")
    assert usage.value.code == 64, "--output or --print is required"

    code, said, _ = _verb(hub, capsys, name, "--output", str(out))
    assert code == 0 and "0600" in said
    assert out.stat().st_mode & 0o777 == 0o600
    kubeconfig = yaml.safe_load(out.read_text())
    cluster = kubeconfig["clusters"][0]["cluster"]
    assert cluster["server"] == f"https://api.{domain}:6443"
    assert base64.b64decode(cluster["certificate-authority-data"]) == api_ca
    user = kubeconfig["users"][0]["user"]
    client_cert = x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"]))
    medium_ca = yaml.safe_load(sitemedium.examine(admin, get_site(admin, name)).tree["site-config.yaml"])
    client_cert.verify_directly_issued_by(x509.load_pem_x509_certificate(medium_ca["spec"]["adminAccess"]
                                                                         ["clientCA"]["pem"].encode()))  # fmt: skip
    secret = _secret(admin, name)
    assert base64.b64decode(user["client-key-data"]) == base64.b64decode(secret["data"][adminaccess.CLIENT_KEY])
    code, printed, _ = _verb(hub, capsys, name, "--print")
    assert code == 0 and yaml.safe_load(printed) == kubeconfig

    shown: dict[str, str] = {}
    for who in (name, "store-nocert"):
        shown[f"{who}:status"] = json.dumps(get_site(admin, who).get("status"))
        for argv in (["why", who], ["why", who, "-o", "json"]):
            capsys.readouterr()
            main.main(["fleet", *argv, "-n", NS, "--kubeconfig", str(hub.kubeconfig_path)])
            shown[f"{who}:{' '.join(argv)}"] = capsys.readouterr().out
    for output in ("table", "json"):
        main.main(["fleet", "status", "-n", NS, "--kubeconfig", str(hub.kubeconfig_path), "-o", output])
        shown[f"status:{output}"] = capsys.readouterr().out
    shown.update({f"event:{e['metadata']['name']}": json.dumps(e) for e in admin.list(reconcile.EVENTS, NS)})
    shown["log"] = caplog.text
    forms = _key_forms(secret) + _key_forms(_secret(admin, "store-nocert"))
    assert [(where, form[:8]) for where, text in shown.items() for form in forms if form in text] == []
    assert all("PRIVATE KEY" not in text for text in shown.values())
    assert name in shown[f"{name}:why {name}"] and "2 sites" in shown["status:table"] and shown["log"], "real output"


def test_a_kubeadmin_password_asked_for_travels_as_its_hash_and_reaches_only_the_owner(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    redact.forget_secrets()
    name, domain = "store-p", "sno.store-p.example.com"
    _api_ca, files = _api_files(admin, name, domain)
    config = site_config(name, certificates={"api": {"certificate": {"file": "api.crt"}, "key": {"file": "api.key"}}})
    obj = site_object(name, config, **_ask(kubeadmin=True))
    obj["spec"]["files"].update(files)
    admin.create(SITES, obj)
    admin.create(SITES, site_object("store-nopw", **_ask()))
    start_controller()
    assert _generated(admin, name)["kubeadmin"] == "generated"
    assert _generated(admin, "store-nopw")["kubeadmin"] == "removed"
    secret = _secret(admin, name)
    password = base64.b64decode(secret["data"][adminaccess.KUBEADMIN_PASSWORD])
    hashed = base64.b64decode(secret["data"][adminaccess.KUBEADMIN_HASH])
    assert bcrypt.checkpw(password, hashed) and hashed.startswith(b"$2b$10$")
    assert [len(group) for group in password.split(b"-")] == [5, 5, 5, 5], "the installer's form"

    tree = sitemedium.examine(admin, get_site(admin, name)).tree
    assert yaml.safe_load(tree["site-config.yaml"])["spec"]["adminAccess"]["kubeadmin"] == {
        "passwordHash": hashed.decode()
    }
    assert password not in b"".join(tree.values())
    plain = yaml.safe_load(sitemedium.examine(admin, get_site(admin, "store-nopw")).tree["site-config.yaml"])
    assert plain["spec"]["adminAccess"]["kubeadmin"] == "remove"

    relocated = {"status": {site.STATUS_AGENT: {"runState": "done", "step": "", "source": "node"}}}
    for who in (name, "store-nopw"):
        admin.request(
            "PATCH", reconcile.site_ref(NS, who).path("status"), body=relocated, content_type=kube.MERGE_PATCH
        )
    owner = tmp_path / "owner"
    owner.mkdir(mode=0o700)
    code, _, err = _verb(hub, capsys, "store-nopw", "--print", "--kubeadmin-password", str(owner / "nopw"))
    assert code == 65 and "made no kubeadmin password" in err and not (owner / "nopw").exists()
    code, _, err = _verb(hub, capsys, name, "-o", str(owner / "kc"), "--kubeadmin-password", str(owner / "pw"))
    assert code == 0 and (owner / "pw").read_bytes() == password
    assert (owner / "pw").stat().st_mode & 0o777 == 0o600 and (owner / "kc").stat().st_mode & 0o777 == 0o600
    assert password.decode() not in err

    shown = {"status": json.dumps(get_site(admin, name).get("status")), "log": caplog.text}
    shown.update({f"event:{e['metadata']['name']}": json.dumps(e) for e in admin.list(reconcile.EVENTS, NS)})
    capsys.readouterr()
    main.main(["fleet", "why", name, "-n", NS, "--kubeconfig", str(hub.kubeconfig_path), "-o", "json"])
    shown["why"] = capsys.readouterr().out
    forms = [password.decode(), secret["data"][adminaccess.KUBEADMIN_PASSWORD], hashed.decode()]
    assert [(where, form[:4]) for where, text in shown.items() for form in forms if form in text] == []

    admin.patch(reconcile.site_ref(NS, name), {"spec": {"adminAccess": {"rotation": 1, "kubeadmin": False}}})
    assert _generated(admin, name, rotation=1)["kubeadmin"] == "removed"
    assert adminaccess.KUBEADMIN_PASSWORD not in _secret(admin, name)["data"], "new keys drop the old password"

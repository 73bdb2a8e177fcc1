from __future__ import annotations

import base64
import json
import pathlib
import stat
import tarfile

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from snoreloc.adapters import command
from snoreloc.engine import bundle

PASSWORD = "s3cretPassw0rd-zebra"
AUTH = base64.b64encode(f"fake-user:{PASSWORD}".encode()).decode()
PSK = "wpa-psk-value-9f8e7d"
SECRET_DATA = "backup-only-secret-42"


def _key_pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


@pytest.fixture
def state(tmp_path: pathlib.Path) -> tuple[pathlib.Path, list[str]]:
    """A state dir seeded with secrets in every place they could leak from; returns it and the secret strings."""
    key_pem = _key_pem()
    key_body = key_pem.splitlines()[1]
    state = tmp_path / "var/lib/snoreloc"
    (state / "site-config").mkdir(parents=True)
    (state / "backups").mkdir()
    site = {
        "apiVersion": "snoreloc.io/v1alpha1",
        "kind": "SiteConfig",
        "metadata": {"name": "store-042"},
        "spec": {
            "domain": "store042.example.com",
            "pullSecret": {"inline": {"auths": {"mirror.example.com:5000": {"auth": AUTH}}}, "mode": "replace"},
            "certificates": {"api": {"certificate": {"file": "api.crt"}, "key": {"file": "api.key"}}},
            "network": {"interfaces": [{"name": "wlan0", "type": "ethernet", "802.1x": {"password": PSK}}]},
        },
    }
    (state / "site-config/site-config.yaml").write_text(yaml.safe_dump(site))
    (state / "site-config/api.key").write_text(key_pem)
    (state / "site-config/api.crt").write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "pull-secret", "namespace": "openshift-config"},
        "data": {".dockerconfigjson": base64.b64encode(SECRET_DATA.encode()).decode()},
    }
    (state / "backups/secrets.core.openshift-config.pull-secret.json").write_text(json.dumps({"object": secret}))
    (state / "status.json").write_text(json.dumps({"steps": {"network": {"state": "done"}}}))
    (state / "snoreloc.log").write_text(f"DEBUG leaked by a bug: {PASSWORD} and {SECRET_DATA}\n")
    return state, [PASSWORD, AUTH, PSK, SECRET_DATA, key_body]


def _node_dns(root: pathlib.Path, state: pathlib.Path) -> None:
    """The node's DNS files as a relocated SNO has them, one carrying a secret a careless hand left in a comment;
    resolv.conf a symlink (absolute, so inside the host's root), and the kept original of the overrides file."""
    (root / "etc/default").mkdir(parents=True)
    (root / "etc/default/sno_dnsmasq_configuration_overrides").write_text(
        "SNO_CLUSTER_NAME_OVERRIDE=store-042\nSNO_BASE_DOMAIN_OVERRIDE=example.com\n"
    )
    (root / "etc/dnsmasq.d").mkdir(parents=True)
    (root / "etc/dnsmasq.d/single-node.conf").write_text("address=/apps.store-042.example.com/10.0.0.5\n")
    (root / "etc/dnsmasq.d/upstream.conf").write_text(f"# upstream login {PASSWORD}\nserver=192.0.2.53\n")
    (root / "run/NetworkManager").mkdir(parents=True)
    (root / "run/NetworkManager/resolv.conf").write_text("search store-042.example.com\nnameserver 10.0.0.5\n")
    (root / "etc/resolv.conf").symlink_to("/run/NetworkManager/resolv.conf")
    (state / "host-backups").mkdir()
    original = base64.b64encode(b"SNO_DNSMASQ_IP_OVERRIDE=10.0.0.5\n").decode()
    backup = {"path": "/etc/default/sno_dnsmasq_configuration_overrides", "existed": True, "content": original}
    (state / "host-backups/sno_dnsmasq_configuration_overrides.json").write_text(json.dumps({**backup, "mode": 420}))


def _members(path: pathlib.Path) -> dict[str, str]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read().decode() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_tarball_holds_everything_useful_and_no_secret(
    tmp_path: pathlib.Path, state: tuple[pathlib.Path, list[str]]
) -> None:
    directory, secrets = state
    _node_dns(tmp_path, directory)
    journal = f"Jan 01 snoreloc[1]: pulling with {PASSWORD}\nJan 01 snoreloc[1]: Authorization: Bearer abc.def.ghi\n"
    runner = command.FakeRunner().on(["journalctl"], command.Result(0, journal))
    runner.on(["systemctl", "status"], command.Result(0, f"dnsmasq.service - DNS caching server.\n  {PASSWORD}\n"))
    runner.on(["getent", "hosts"], command.Result(2, "10.0.0.5  api.store042.example.com\n"))
    output = tmp_path / "logs.tar.gz"
    bundle.write_tarball(output, bundle.collect(directory, runner, root=tmp_path))

    assert stat.S_IMODE(output.stat().st_mode) == 0o600
    members = _members(output)
    assert sorted(members) == [
        "snoreloc-logs/MANIFEST.txt",
        "snoreloc-logs/backups.json",
        "snoreloc-logs/dns/dnsmasq-status.txt",
        "snoreloc-logs/dns/dnsmasq.d/single-node.conf",
        "snoreloc-logs/dns/dnsmasq.d/upstream.conf",
        "snoreloc-logs/dns/getent-hosts.txt",
        "snoreloc-logs/dns/host-backups/sno_dnsmasq_configuration_overrides.json",
        "snoreloc-logs/dns/resolv.conf",
        "snoreloc-logs/dns/sno_dnsmasq_configuration_overrides",
        "snoreloc-logs/journal-NetworkManager.txt",
        "snoreloc-logs/journal-crio.txt",
        "snoreloc-logs/journal-dnsmasq.txt",
        "snoreloc-logs/journal-kubelet.txt",
        "snoreloc-logs/journal-nmstate.txt",
        "snoreloc-logs/journal-snoreloc.txt",
        "snoreloc-logs/site-config/FILES.txt",
        "snoreloc-logs/site-config/site-config.yaml",
        "snoreloc-logs/snoreloc.log",
        "snoreloc-logs/status.json",
        "snoreloc-logs/timeline.svg",
    ]
    everything = "\n".join(members.values())
    for secret in secrets:
        assert secret not in everything
    assert "abc.def.ghi" not in everything

    site = yaml.safe_load(members["snoreloc-logs/site-config/site-config.yaml"])
    assert site["spec"]["domain"] == "store042.example.com"
    assert site["spec"]["pullSecret"] == "<redacted>"
    assert site["spec"]["certificates"]["api"]["certificate"] == {"file": "api.crt"}
    assert "api.key" in members["snoreloc-logs/site-config/FILES.txt"]
    [backup] = json.loads(members["snoreloc-logs/backups.json"])
    assert backup["objects"] == [
        {"apiVersion": "v1", "kind": "Secret", "name": "pull-secret", "namespace": "openshift-config"}
    ]
    assert "pulling with <redacted>" in members["snoreloc-logs/journal-snoreloc.txt"]
    units = [c[2] for c in runner.commands() if c[0] == "journalctl"]
    assert units == ["snoreloc", "kubelet", "NetworkManager", "nmstate", "crio", "dnsmasq"]
    # the node's DNS (issue 35): as it is, as it was, and what the site's names resolve to, secrets masked
    assert "SNO_CLUSTER_NAME_OVERRIDE=store-042" in members["snoreloc-logs/dns/sno_dnsmasq_configuration_overrides"]
    resolv = members["snoreloc-logs/dns/resolv.conf"]
    assert "is a symlink to /run/NetworkManager/resolv.conf" in resolv and "nameserver 10.0.0.5" in resolv
    assert "# upstream login <redacted>" in members["snoreloc-logs/dns/dnsmasq.d/upstream.conf"]
    kept = json.loads(members["snoreloc-logs/dns/host-backups/sno_dnsmasq_configuration_overrides.json"])
    assert kept["content"] == "SNO_DNSMASQ_IP_OVERRIDE=10.0.0.5\n" and kept["existed"] is True
    getent = next(c for c in runner.commands() if c[0] == "getent")
    assert getent[:4] == ("getent", "hosts", "api.store042.example.com", "api-int.store042.example.com")
    manifest = members["snoreloc-logs/MANIFEST.txt"]
    assert "dns/getent-hosts.txt: getent hosts api.store042.example.com" in manifest and "exited 2" in manifest


def test_missing_state_and_failing_journal_still_make_a_tarball(tmp_path: pathlib.Path) -> None:
    def broken(_argv: object, _input: object) -> command.Result:
        raise command.CommandNotFound("journalctl is not installed")

    members = bundle.collect(tmp_path / "absent", command.FakeRunner().on(["journalctl"], broken))
    assert members["journal-snoreloc.txt"].startswith(b"journalctl failed")
    assert json.loads(members["backups.json"]) == []


def test_unparsable_site_config_is_omitted(tmp_path: pathlib.Path) -> None:
    (tmp_path / "site-config.yaml").write_text(f"pullSecret: [{AUTH}\n  key: {{")
    members = bundle.site_config_members(tmp_path)
    assert AUTH.encode() not in members["site-config/site-config.yaml"]


def _site_file(path: pathlib.Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    site = {
        "apiVersion": "snoreloc.io/v1alpha1",
        "kind": "SiteConfig",
        "metadata": {"name": "store-043"},
        "spec": {"domain": "store043.example.com", "pullSecret": {"inline": {"auths": {"m.example": {"auth": AUTH}}}}},
    }
    path.write_text(yaml.safe_dump(site))


def _run_that_used_a_site_config(tmp_path: pathlib.Path, recorded: bool) -> tuple[pathlib.Path, pathlib.Path]:
    """A state directory whose run used a site-config outside it: named in status.json (`--site-config`), or the
    host's /etc/snoreloc/site-config.yaml (not named). Returns the state directory and that file."""
    state = tmp_path / "var/lib/snoreloc"
    state.mkdir(parents=True)
    used = tmp_path / ("work/edge.yaml" if recorded else "etc/snoreloc/site-config.yaml")
    _site_file(used)
    status = {"site_config": {"name": "store-043", "path": str(used) if recorded else None}}
    (state / "status.json").write_text(json.dumps(status))
    return state, used


@pytest.mark.parametrize("recorded", [True, False], ids=["path-in-status", "host-file"])
def test_the_site_config_the_run_used_is_included_wherever_it_was(tmp_path: pathlib.Path, recorded: bool) -> None:
    """`--site-config` (recorded in status.json) or /etc/snoreloc/site-config.yaml: included, scrubbed."""
    state, used = _run_that_used_a_site_config(tmp_path, recorded)
    runner = command.FakeRunner().on(["journalctl"], command.Result(0, ""))
    members = bundle.collect(state, runner, root=tmp_path)
    site = yaml.safe_load(members[f"site-config/used/{used.name}"])
    assert site["spec"]["domain"] == "store043.example.com"
    assert site["spec"]["pullSecret"] == "<redacted>"
    assert members["site-config/used/SOURCE.txt"].decode().strip() == str(used)
    assert not any(PASSWORD.encode() in data or AUTH.encode() in data for data in members.values())


def test_a_stick_copy_is_not_included_twice(state: tuple[pathlib.Path, list[str]]) -> None:
    directory, _secrets = state
    copy = directory / "site-config/site-config.yaml"
    (directory / "status.json").write_text(json.dumps({"site_config": {"path": str(copy)}}))
    members = bundle.collect(directory, command.FakeRunner().on(["journalctl"], command.Result(0, "")))
    assert not any(name.startswith("site-config/used/") for name in members)


@pytest.mark.parametrize("recorded", [True, False], ids=["path-in-status", "host-file"])
def test_the_journal_is_scrubbed_of_the_secrets_of_the_site_config_the_run_used(
    tmp_path: pathlib.Path, recorded: bool
) -> None:
    """Issue 17: with no stick copy in the state directory, collect-logs must still learn the site's secrets from the
    file the run used, and mask them in journal lines whatever form they take there."""
    state, _used = _run_that_used_a_site_config(tmp_path, recorded)
    journal = f"pull from m.example with {AUTH}\nlogin fake-user:{PASSWORD}\nbare {PASSWORD} in a message\n"
    runner = command.FakeRunner().on(["journalctl"], command.Result(0, journal))
    members = bundle.collect(state, runner, root=tmp_path)
    journal_members = [name for name in members if "journal" in name]
    assert journal_members, sorted(members)
    assert b"<redacted>" in b"".join(members[name] for name in journal_members)
    for form in (AUTH, f"fake-user:{PASSWORD}", PASSWORD):
        assert not any(form.encode() in data for data in members.values()), form

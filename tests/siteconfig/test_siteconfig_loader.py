"""Loading site-configs: positions, the model built from checked bytes, warnings, and secrets kept out of output."""

from __future__ import annotations

import base64
import pathlib
import textwrap

import pytest
from cryptography.hazmat.primitives import serialization

from snoreloc import errors
from snoreloc.cli import main as cli
from snoreloc.siteconfig import files, loader, model, nmstate_check, yamlpos

DOMAIN = "sno1.site.example.com"
APPS = f"*.apps.{DOMAIN}"
EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
HEAD = f"""\
apiVersion: snoreloc.io/v1alpha1
kind: SiteConfig
metadata:
  name: site-1
spec:
  domain: {DOMAIN}
"""


def _write(tmp_path: pathlib.Path, body: str, **extra: bytes | str) -> pathlib.Path:
    """A site-config whose spec holds `body` (written from column 0), plus files named a__crt -> a.crt."""
    for name, content in extra.items():
        target = tmp_path / name.replace("__", ".")
        target.write_bytes(content if isinstance(content, bytes) else content.encode())
        target.chmod(0o600)
    path = tmp_path / "site-config.yaml"
    path.write_text(HEAD + textwrap.indent(body, "  "))
    return path


def _key_body(key_pem: bytes) -> list[str]:
    return key_pem.decode().strip().splitlines()[1:-1]


class TestExamples:
    @pytest.mark.parametrize("name", ["site-config.yaml", "minimal.yaml"])
    def test_examples_validate(self, name: str, capsys: pytest.CaptureFixture[str]) -> None:
        assert cli.main(["validate", str(EXAMPLES / name)]) == 0
        assert capsys.readouterr().out.startswith(f"{EXAMPLES / name}: valid")

    def test_full_example_becomes_the_model(self) -> None:
        config = loader.load(str(EXAMPLES / "site-config.yaml"))
        assert (config.name, config.domain) == ("store-0412", "sno1.store-0412.example.com")
        assert config.network is not None and [i["name"] for i in config.network["interfaces"]] == ["eno1", "eno1.120"]
        assert config.pull_secret is not None and config.pull_secret.mode is model.PullSecretMode.REPLACE
        assert config.pull_secret.auths
        assert config.image_digest_mirrors[1].mirror_source_policy == "NeverContactSource"
        assert config.image_tag_mirrors[0].source == "registry.redhat.io/rhel9"
        assert config.remove_mirrors == ("factory-mirror",)
        assert config.registry_ca[0].registry == "registry.store-0412.example.com:8443"
        assert config.registry_ca[0].bundle_pem.startswith("-----BEGIN CERTIFICATE-----")  # comment stripped
        assert config.timeouts == model.Timeouts(total=5400, network_probe=180, api=1200, settle=2700)
        assert config.kubelet == model.Kubelet(node_name="sno1-node", approve_csrs=True)
        assert config.certificates == model.Certificates()

    def test_minimal_example_keeps_defaults(self) -> None:
        config = loader.load(str(EXAMPLES / "minimal.yaml"))
        assert config.pull_secret is None and config.network is None and config.timeouts == model.Timeouts()


class TestUserCertificates:
    def test_pairs_from_files_and_inline_load_with_their_bytes(
        self, tmp_path: pathlib.Path, api_pair: tuple[bytes, bytes], ingress_pair: tuple[bytes, bytes]
    ) -> None:
        key = serialization.load_pem_private_key(ingress_pair[1], password=None)
        pkcs1 = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        )
        body = (
            "certificates:\n  api:\n    certificate: {file: api.crt}\n    key: {file: api.key}\n"
            "  ingress:\n    certificate: {file: ingress.crt}\n    key:\n      pem: |\n"
            + textwrap.indent(pkcs1.decode(), " " * 8)
        )
        path = _write(tmp_path, body, api__crt=api_pair[0], api__key=api_pair[1], ingress__crt=ingress_pair[0])
        report = loader.validate(str(path))
        assert report.problems == ()
        assert [w.path for w in report.warnings] == ["spec"]  # only: the factory keeps admin access (no adminAccess)
        assert report.config is not None
        assert report.config.certificates.api == model.CertKeyPair(api_pair[0], api_pair[1])
        ingress = report.config.certificates.ingress
        assert ingress is not None and ingress.key_pem == pkcs1 and ingress.cert_pem == ingress_pair[0]
        assert "key_pem" not in repr(report.config)

    def test_a_readable_key_file_is_a_warning_not_an_error(
        self, tmp_path: pathlib.Path, api_pair: tuple[bytes, bytes], capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = _write(
            tmp_path,
            "certificates:\n  api:\n    certificate: {file: api.crt}\n    key: {file: api.key}\n",
            api__crt=api_pair[0],
            api__key=api_pair[1],
        )
        (tmp_path / "api.key").chmod(0o644)
        assert cli.main(["validate", str(path)]) == 0
        err = capsys.readouterr().err
        assert "warning: spec.certificates.api.key.file: holds a secret but has mode 0644" in err
        assert "(line 10, column 13)" in err

    def test_wildcard_is_required_for_ingress(self, tmp_path: pathlib.Path, api_pair: tuple[bytes, bytes]) -> None:
        path = _write(
            tmp_path,
            "certificates:\n  ingress:\n    certificate: {file: a.crt}\n    key: {file: a.key}\n",
            a__crt=api_pair[0],
            a__key=api_pair[1],
        )
        problems = loader.validate(str(path)).problems
        assert [(p.path, p.line) for p in problems] == [("spec.certificates.ingress.certificate.file", 9)]
        assert APPS in problems[0].message


class TestSecretsNeverEchoed:
    def test_no_output_form_shows_an_auth_or_a_key(
        self, tmp_path: pathlib.Path, api_pair: tuple[bytes, bytes], capsys: pytest.CaptureFixture[str]
    ) -> None:
        auth = base64.b64encode(b"fleet-robot:Tr0ub4dor-and-3").decode()
        other_key = api_pair[1]
        body = (
            f'pullSecret:\n  inline:\n    auths:\n      registry.example.com: {{auth: "{auth}"}}\n'
            f'      "bad registry/": {{auth: "{auth}"}}\n  mode: merge\n'
            'certificates:\n  api:\n    certificate: {pem: "not a cert"}\n    key:\n      pem: |\n'
            + textwrap.indent(other_key.decode(), " " * 8)
            + f'unknownField: {{auth: "{auth}"}}\n'
        )
        path = _write(tmp_path, body)
        outputs = []
        for extra in ([], ["--output", "json"], ["--annotate"]):
            assert cli.main(["validate", *extra, str(path)]) == 65
            captured = capsys.readouterr()
            outputs.append(captured.out + captured.err)
        with pytest.raises(errors.ConfigError) as caught:
            loader.load(str(path))
        outputs.append("\n".join(p.render() for p in caught.value.problems))
        for text in outputs:
            assert "spec.certificates.api.certificate.pem" in text or "spec.certificates.api.certificate" in text
            assert auth not in text and "Tr0ub4dor-and-3" not in text
            assert not any(line in text for line in _key_body(other_key))


class TestPositions:
    def test_paths_map_to_the_line_of_their_key_or_item(self) -> None:
        doc = yamlpos.load(b"a:\n  b:\n    - x\n    - {c: 1}\nd: 2021-01-01\n")
        assert doc.data == {"a": {"b": ["x", {"c": 1}]}, "d": "2021-01-01"}
        assert doc.marks[("a", "b")] == yamlpos.Mark(2, 3)
        assert doc.marks[("a", "b", 1)] == yamlpos.Mark(4, 7)
        assert doc.marks[("a", "b", 1, "c")] == yamlpos.Mark(4, 8)
        assert doc.locate(("a", "b", 1, "missing")) == yamlpos.Mark(4, 7)
        assert doc.locate(("a", "zzz")) == yamlpos.Mark(1, 1)

    def test_oversized_documents_are_refused_before_parsing(self) -> None:
        with pytest.raises(yamlpos.YamlError, match="larger than 1024 KiB"):
            yamlpos.load(b"#" * (yamlpos.MAX_BYTES + 1))

    def test_missing_site_config_is_a_config_error(self, tmp_path: pathlib.Path) -> None:
        with pytest.raises(errors.ConfigError) as caught:
            loader.load(str(tmp_path / "absent.yaml"))
        assert caught.value.exit_code == 65 and "No such file" in caught.value.problems[0].message


class TestNetwork:
    def test_network_file_is_loaded_into_the_model(self, tmp_path: pathlib.Path) -> None:
        state = (
            "interfaces:\n  - name: eno1\n    type: ethernet\n    state: up\n    ipv4: {enabled: true, dhcp: true}\n"
        )
        path = _write(tmp_path, "network:\n  file: net.yaml\n", net__yaml=state)
        config = loader.load(str(path))
        assert config.network == {
            "interfaces": [{"name": "eno1", "type": "ethernet", "state": "up", "ipv4": {"enabled": True, "dhcp": True}}]
        }

    def test_br_ex_addresses_are_fine_and_an_unreachable_gateway_warns(self) -> None:
        state = {
            "interfaces": [
                {
                    "name": "br-ex",
                    "type": "ovs-interface",
                    "ipv4": {"enabled": True, "address": [{"ip": "10.1.0.5", "prefix-length": 24}]},
                }
            ],
            "routes": {
                "config": [{"destination": "0.0.0.0/0", "next-hop-address": "10.2.0.1", "next-hop-interface": "br-ex"}]
            },
            "dns-resolver": {"config": {"server": ["10.1.0.53"]}},
        }
        found = nmstate_check.check(state)
        assert {f.severity.value for f in found} == {"warning"}
        assert [f.path for f in found] == [("routes", "config", 0, "next-hop-address")]

    def test_risky_removals_pass_when_the_site_config_accepts_them(self) -> None:
        state = {
            "interfaces": [{"name": "br-ex", "type": "ovs-interface", "state": "absent"}],
            "routes": {"config": [{"destination": "::/0", "state": "absent"}]},
            "dns-resolver": {"config": {"server": []}},
        }
        assert len(nmstate_check.check(state)) == 3
        assert nmstate_check.check(state, accept=frozenset(nmstate_check.ACCEPT_NAMES)) == []

    def test_nothing_to_probe_passes_with_probes_none_or_a_tcp_target(self, tmp_path: pathlib.Path) -> None:
        network = "network:\n  interfaces:\n    - {name: eno1, type: ethernet, state: up, mtu: 9000}\n"
        with pytest.raises(errors.ConfigError):
            loader.load(str(_write(tmp_path, network)))
        config = loader.load(str(_write(tmp_path, network + "networkProbes: none\n")))
        assert not config.network_probes.enabled
        tcp = network + "networkProbes:\n  gateway: false\n  tcp: ['[fd00::5]:8443', 'hub.example.com:6443']\n"
        probes = loader.load(str(_write(tmp_path, tcp))).network_probes
        assert probes.tcp == (("fd00::5", 8443), ("hub.example.com", 6443)) and not probes.gateway and probes.dns

    def test_bond_and_vlan_references(self) -> None:
        state = {
            "interfaces": [
                {
                    "name": "bond0",
                    "type": "bond",
                    "link-aggregation": {"mode": "active-backup", "port": ["eno1", "bond0"]},
                },
                {"name": "bond1", "type": "bond", "link-aggregation": {"mode": "active-backup", "port": ["eno1"]}},
                {"name": "bond0.7", "type": "vlan", "vlan": {"base-iface": "bond0.7", "id": 7}},
            ]
        }
        messages = {(f.path, f.message) for f in nmstate_check.check(state)}
        assert messages == {
            (("interfaces", 0, "link-aggregation", "port", 1), "a bond cannot contain itself"),
            (("interfaces", 1, "link-aggregation", "port", 0), "eno1 is already a port of bond0"),
            (("interfaces", 2, "vlan", "base-iface"), "a VLAN cannot be its own base interface"),
        }


class TestFileReferences:
    def test_symlink_inside_the_directory_is_fine(self, tmp_path: pathlib.Path) -> None:
        (tmp_path / "real.json").write_text("{}")
        (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
        assert files.read(str(tmp_path), "link.json").content == b"{}"

    def test_directory_is_not_a_regular_file(self, tmp_path: pathlib.Path) -> None:
        (tmp_path / "d").mkdir()
        with pytest.raises(files.RefError, match="not a regular file"):
            files.read(str(tmp_path), "d")


@pytest.mark.parametrize("field", ["hostname", "clusterName"])
def test_new_host_or_cluster_name_is_not_supported_online(tmp_path: pathlib.Path, field: str) -> None:
    report = loader.validate(str(_write(tmp_path, f"{field}: store2\n")))
    assert [(p.path, p.message.split(":")[0]) for p in report.problems] == [
        (f"spec.{field}", "is not supported by a running cluster")
    ]

"""Limits a schema cannot state: TCP ports of every host:port, and the node count of the YAML while it is composed.

A port is "digits" to the schema's patterns, so 99999 passed until the semantic checks looked at it; a YAML
document of a few hundred kilobytes can hold hundreds of thousands of nodes, which the loader must refuse as it
composes them rather than after building them all.
"""

from __future__ import annotations

import json
import pathlib
import textwrap

import pytest

from snoreloc import errors
from snoreloc.cli import main as cli
from snoreloc.siteconfig import checks, loader, yamlpos

HEAD = """\
apiVersion: snoreloc.io/v1alpha1
kind: SiteConfig
metadata:
  name: site-1
spec:
  domain: sno1.site.example.com
"""
HEAD_LINES = HEAD.count("\n")
AUTH = "dXNlcjpwYXNz"  # base64 of user:pass


def _site(tmp_path: pathlib.Path, body: str, ca_pem: bytes) -> pathlib.Path:
    (tmp_path / "ca.crt").write_bytes(ca_pem)
    path = tmp_path / "site-config.yaml"
    path.write_text(HEAD + textwrap.indent(textwrap.dedent(body), "  "))
    return path


def _reported(path: pathlib.Path) -> set[tuple[str, int | None, str]]:
    return {(p.path, p.line, p.message) for p in loader.validate(str(path)).problems}


def _out_of_range(port: int) -> str:
    return f"port {port} is out of range: ports are 1-65535"


class TestPorts:
    @pytest.mark.parametrize(
        ("body", "path", "line", "port"),
        [
            (
                "imageTagMirrors:\n  - source: registry.redhat.io/rhel9\n    mirrors:\n      - m.example.com:99999/r\n",
                "spec.imageTagMirrors[0].mirrors[0]",
                10,
                99999,
            ),
            (
                "imageDigestMirrors:\n  - source: quay.io:0/ocp\n    mirrors: [m.example.com:8443/ocp]\n",
                "spec.imageDigestMirrors[0].source",
                8,
                0,
            ),
            (
                "registryCA:\n  - registry: r.example.com:65536\n    certificate: {file: ca.crt}\n",
                "spec.registryCA[0].registry",
                8,
                65536,
            ),
            (
                f"pullSecret:\n  inline:\n    auths:\n      r.example.com:70000: {{auth: {AUTH}}}\n",
                "spec.pullSecret.inline.auths.r.example.com:70000",
                10,
                70000,
            ),
        ],
        ids=["mirror", "source", "registry-ca", "pull-secret-registry"],
    )
    def test_a_port_outside_1_to_65535_names_its_field_and_line(
        self, tmp_path: pathlib.Path, signer: tuple[bytes, bytes], body: str, path: str, line: int, port: int
    ) -> None:
        site = _site(tmp_path, body, signer[0])
        assert _reported(site) == {(path, line, _out_of_range(port))}
        with pytest.raises(errors.ConfigError) as caught:
            loader.load(str(site))
        assert caught.value.exit_code == 65
        assert [p.render() for p in caught.value.problems] == [
            f"{path}: {_out_of_range(port)} (line {line}, column {caught.value.problems[0].column})"
        ]

    def test_a_pull_secret_file_names_the_registry_in_the_message(
        self, tmp_path: pathlib.Path, signer: tuple[bytes, bytes]
    ) -> None:
        (tmp_path / "pull-secret.json").write_text(json.dumps({"auths": {"r.example.com:123456": {"auth": AUTH}}}))
        (tmp_path / "pull-secret.json").chmod(0o600)
        site = _site(tmp_path, "pullSecret:\n  file: pull-secret.json\n", signer[0])
        expected = ("spec.pullSecret.file", 8, "auths[r.example.com:123456]: " + _out_of_range(123456))
        assert _reported(site) == {expected}

    def test_every_port_problem_at_once_and_the_cli_exits_65(
        self, tmp_path: pathlib.Path, signer: tuple[bytes, bytes], capsys: pytest.CaptureFixture[str]
    ) -> None:
        body = """\
            imageTagMirrors:
              - source: registry.redhat.io:99999/rhel9
                mirrors: [a.example.com:0/rhel9, b.example.com:8443/rhel9, c.example.com:65536]
            registryCA:
              - registry: r.example.com:99999
                certificate: {file: ca.crt}
            """
        site = _site(tmp_path, body, signer[0])
        assert cli.main(["validate", "--output", "json", str(site)]) == 65
        reported = {(e["path"], e["line"], e["message"]) for e in json.loads(capsys.readouterr().out)["errors"]}
        assert reported == {
            ("spec.imageTagMirrors[0].source", 8, _out_of_range(99999)),
            ("spec.imageTagMirrors[0].mirrors[0]", 9, _out_of_range(0)),
            ("spec.imageTagMirrors[0].mirrors[2]", 9, _out_of_range(65536)),
            ("spec.registryCA[0].registry", 11, _out_of_range(99999)),
        }

    def test_ports_1_and_65535_and_no_port_are_accepted(
        self, tmp_path: pathlib.Path, signer: tuple[bytes, bytes]
    ) -> None:
        body = f"""\
            imageTagMirrors:
              - source: registry.redhat.io:1/rhel9
                mirrors: [a.example.com:65535/rhel9, b.example.com/rhel9, c.example.com:00443]
            registryCA:
              - registry: r.example.com:65535
                certificate: {{file: ca.crt}}
            pullSecret:
              inline: {{auths: {{"r.example.com:1/path": {{auth: {AUTH}}}}}}}
            """
        config = loader.load(str(_site(tmp_path, body, signer[0])))
        assert config.image_tag_mirrors[0].mirrors == (
            "a.example.com:65535/rhel9",
            "b.example.com/rhel9",
            "c.example.com:00443",
        )
        assert config.registry_ca[0].registry == "r.example.com:65535"

    def test_a_reference_the_schema_rejects_gets_one_message_not_two(
        self, tmp_path: pathlib.Path, signer: tuple[bytes, bytes]
    ) -> None:
        site = _site(
            tmp_path, "registryCA:\n  - registry: r.example.com:999999\n    certificate: {file: ca.crt}\n", signer[0]
        )
        reported = _reported(site)
        assert [(path, line) for path, line, _ in reported] == [("spec.registryCA[0].registry", 8)]
        assert "out of range" not in next(iter(reported))[2]

    @pytest.mark.parametrize(
        ("reference", "problem"),
        [
            ("quay.io", None),
            ("quay.io/ocp/release", None),
            ("*.example.com", None),
            ("quay.io:443/a:b", None),  # only the host part carries the port
            ("quay.io:65535", None),
            ("quay.io:65536/x", _out_of_range(65536)),
            ("quay.io:0", _out_of_range(0)),
        ],
    )
    def test_port_problem_reads_the_port_of_the_host_part(self, reference: str, problem: str | None) -> None:
        assert checks.port_problem(reference) == problem


def _flow(items: int, *, closed: bool = True) -> bytes:
    return (HEAD + "  removeMirrors: [" + ",".join(["x"] * items) + ("]\n" if closed else "\n")).encode()


class TestNodeCount:
    def test_a_wide_flow_sequence_is_refused_with_its_line(self, tmp_path: pathlib.Path) -> None:
        site = tmp_path / "site-config.yaml"
        site.write_bytes(_flow(200_000))
        with pytest.raises(errors.ConfigError) as caught:
            loader.load(str(site))
        assert caught.value.exit_code == 65
        (problem,) = caught.value.problems
        message = f"the document has more than {yamlpos.MAX_DOCUMENT_NODES} keys and values"
        assert (problem.path, problem.message, problem.line) == ("", message, HEAD_LINES + 1)
        assert problem.render().startswith(f"<document>: {message} (line {HEAD_LINES + 1}, column ")

    def test_the_count_stops_composing_before_the_rest_is_read(self) -> None:
        """An unclosed sequence fails at the end of the text; refusing at the bound proves the rest was never read."""
        with pytest.raises(yamlpos.YamlError, match="invalid YAML"):
            yamlpos.load(_flow(10, closed=False))
        with pytest.raises(yamlpos.YamlError, match="keys and values") as caught:
            yamlpos.load(_flow(yamlpos.MAX_DOCUMENT_NODES + 1000, closed=False))
        assert caught.value.column is not None
        assert caught.value.column < len(_flow(yamlpos.MAX_DOCUMENT_NODES, closed=False).splitlines()[-1])

    def test_keys_count_and_the_line_is_the_first_node_over_the_bound(self) -> None:
        # root mapping, key `a`, the sequence: item i is node 4 + i, its scalar at line i + 2, column 3
        items = "".join(f"- {i}\n" for i in range(yamlpos.MAX_DOCUMENT_NODES))
        with pytest.raises(yamlpos.YamlError) as caught:
            yamlpos.load(("a:\n" + items).encode())
        assert (caught.value.line, caught.value.column) == (yamlpos.MAX_DOCUMENT_NODES - 1, 3)
        within = "".join(f"- {i}\n" for i in range(yamlpos.MAX_DOCUMENT_NODES - 3))
        assert len(yamlpos.load(("a:\n" + within).encode()).data["a"]) == yamlpos.MAX_DOCUMENT_NODES - 3

    def test_a_big_but_realistic_site_config_still_loads(self, tmp_path: pathlib.Path) -> None:
        """Both mirror lists at their schema maximum (256 sets, 4 mirrors each), 64 VLANs and 256 removals."""
        site = tmp_path / "site-config.yaml"
        site.write_text(HEAD + _mirror_sets("imageDigestMirrors") + _mirror_sets("imageTagMirrors") + _vlans())
        config = loader.load(str(site))
        assert len(config.image_digest_mirrors) == len(config.image_tag_mirrors) == 256
        assert config.network is not None and len(config.network["interfaces"]) == 65
        assert len(config.remove_mirrors) == 256


def _mirror_sets(key: str) -> str:
    sets = "".join(
        f"    - source: quay.io/{key.lower()}/repo{n}\n      mirrors:\n"
        + "".join(f"        - mirror{m}.site.example.com:8443/{key.lower()}/repo{n}\n" for m in range(4))
        for n in range(256)
    )
    return f"  {key}:\n{sets}"


def _vlans() -> str:
    vlans = "".join(
        f"      - name: eno1.{100 + n}\n        type: vlan\n        state: up\n"
        f"        vlan: {{base-iface: eno1, id: {100 + n}}}\n"
        f"        ipv4:\n          enabled: true\n          address:\n"
        f"            - {{ip: 10.{n}.0.10, prefix-length: 24}}\n"
        for n in range(64)
    )
    removals = "".join(f"    - factory-mirrors-{n}\n" for n in range(256))
    eno1 = "      - {name: eno1, type: ethernet, state: up}\n"
    dns = "    dns-resolver: {config: {server: [10.0.0.53]}}\n"
    return f"  network:\n    interfaces:\n{eno1}{vlans}{dns}  removeMirrors:\n{removals}"

"""Hostile site-configs: every one exits 65 naming the field and line, quickly, in bounded memory, touching nothing.

The cases are the whole bad-input corpus (`tests/data/bad`, with its run-time key material made by the corpus
module's own set-ups) plus shapes that cannot be committed or that find defects (generated here). Each runs as
`snoreloc run --cluster-only` in its own process against a simulator: the exit code, the rendered problem, wall
time and peak RSS (`os.wait4`) are checked, and the simulator must have seen no request at all. The same case is
then put where a technician would copy it on the node (`/etc/snoreloc/site-config.yaml` under a temporary root)
and taken through discovery and validation: the root's tree must be byte-for-byte what it was.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import pathlib
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

from snoreloc import errors
from snoreloc.adapters import blockdev, clock, command, fs
from snoreloc.siteconfig import discovery, loader
from snoreloc_sim.openshift import simulator

from . import figures, harness

MAX_SECONDS = 30.0  # bounded, not a speed test: a hang or a quadratic blow-up takes far longer; CI shares two cores
MAX_RSS_MB = 200.0
TESTS = pathlib.Path(__file__).resolve().parents[1]
CORPUS = TESTS / "data" / "bad"
HEAD = "apiVersion: snoreloc.io/v1alpha1\nkind: SiteConfig\nmetadata:\n  name: site-1\nspec:\n"
DOMAIN_LINE = "  domain: sno1.site.example.com\n"


def _corpus_module() -> ModuleType:
    """The corpus test module, for its set-ups (keys, expired certificates, FIFOs, symlinks made at run time)."""
    path = TESTS / "siteconfig" / "test_siteconfig_corpus.py"
    spec = importlib.util.spec_from_file_location("snoreloc_reliability_corpus", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CORPUS_MODULE = _corpus_module()


@dataclasses.dataclass(frozen=True)
class Generated:
    """A case made at run time: `build` writes it into an empty directory; `xfail` names a known defect (in the
    measured run only when `only_measured`: a case rejected correctly but too slowly)."""

    build: Callable[[pathlib.Path], None]
    path: str
    line: int | None
    xfail: str = ""
    only_measured: bool = False


def _write(case: pathlib.Path, body: str) -> None:
    (case / "site-config.yaml").write_text(HEAD + DOMAIN_LINE + body)


def _oversized(case: pathlib.Path) -> None:
    _write(case, "# padding\n" * 110_000)


def _wide_flow(case: pathlib.Path) -> None:
    _write(case, "  removeMirrors: [" + ",".join(["x"] * 200_000) + "]\n")


def _control_character(case: pathlib.Path) -> None:
    (case / "site-config.yaml").write_text(HEAD + '  domain: "sno1.site\x07.example.com"\n')


def _nul_byte(case: pathlib.Path) -> None:
    (case / "site-config.yaml").write_bytes((HEAD + DOMAIN_LINE).encode().replace(b"site-1", b"site\x00-1"))


def _port_out_of_range(case: pathlib.Path) -> None:
    mirrors = "      mirrors:\n        - mirror.example.com:99999/rhel9\n"
    _write(case, "  imageTagMirrors:\n    - source: registry.redhat.io/rhel9\n" + mirrors)


def _ca_symlink_outside(case: pathlib.Path) -> None:
    outside = case.parent / "outside-ca.crt"
    outside.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    (case / "ca.crt").symlink_to(outside)
    _write(case, "  registryCA:\n    - registry: r.example.com\n      certificate:\n        file: ca.crt\n")


def _key_symlink_absolute(case: pathlib.Path) -> None:
    (case / "api.key").symlink_to("/etc/hostname")
    _write(case, "  certificates:\n    api:\n      certificate: {file: api.crt}\n      key: {file: api.key}\n")


def _dangling_symlink(case: pathlib.Path) -> None:
    (case / "pull-secret.json").symlink_to(case / "gone.json")
    _write(case, "  pullSecret:\n    file: pull-secret.json\n")


def _unreadable(case: pathlib.Path) -> None:
    secret = case / "pull-secret.json"
    secret.write_text('{"auths": {"r.example.com": {"auth": "dTpwYXNz"}}}')
    secret.chmod(0)
    _write(case, "  pullSecret:\n    file: pull-secret.json\n")


def _deep_flow_10000(case: pathlib.Path) -> None:
    """Deep enough to crash a plain `yaml.safe_load` (RecursionError), which discovery used to call first."""
    _write(case, "  removeMirrors: " + "[" * 10_000 + "]" * 10_000 + "\n")


def _long_integer(case: pathlib.Path) -> None:
    _write(case, "  timeouts:\n    apiWaitSeconds: " + "9" * 5_000 + "\n")


def _pull_secret_json(case: pathlib.Path, text: str) -> None:
    secret = case / "pull-secret.json"
    secret.write_text(text)
    secret.chmod(0o600)
    _write(case, "  pullSecret:\n    file: pull-secret.json\n")


def _pull_secret_nested_arrays(case: pathlib.Path) -> None:
    _pull_secret_json(case, '{"auths": ' + "[" * 100_000 + "]" * 100_000 + "}")


def _pull_secret_huge_integer(case: pathlib.Path) -> None:
    _pull_secret_json(case, '{"auths": {"r.example.com": {"auth": ' + "7" * 10_000 + "}}}")


def _manifest(case: pathlib.Path, text: str) -> None:
    (case / "manifests").mkdir()
    (case / "manifests" / "10-site.yaml").write_text(text)
    _write(case, "  extraManifests:\n    directory: manifests\n")


def _manifest_unparseable(case: pathlib.Path) -> None:
    _manifest(case, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default\n")


def _manifest_alias_bomb(case: pathlib.Path) -> None:
    levels = "".join(f"l{i + 1}: &l{i + 1} [" + ", ".join([f"*l{i}"] * 10) + "]\n" for i in range(9))
    _manifest(case, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\nl0: &l0 [x]\n" + levels)


def _manifest_huge(case: pathlib.Path) -> None:
    _manifest(
        case, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\ndata:\n" + "  k: v\n" * 200_000
    )


def _manifest_many_documents(case: pathlib.Path) -> None:
    doc = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\n"
    _manifest(case, doc * 30_000)


GENERATED: dict[str, Generated] = {
    "gen-yaml-deep-flow-10000": Generated(_deep_flow_10000, "", 7),
    "gen-yaml-long-integer": Generated(_long_integer, "spec.timeouts.apiWaitSeconds", 8),
    "gen-pull-secret-nested-arrays": Generated(_pull_secret_nested_arrays, "spec.pullSecret.file", 8),
    "gen-pull-secret-huge-integer": Generated(_pull_secret_huge_integer, "spec.pullSecret.file", 8),
    "gen-yaml-oversized": Generated(_oversized, "", None),
    "gen-yaml-wide-flow": Generated(_wide_flow, "", 7),
    "gen-yaml-control-character": Generated(_control_character, "", 6),
    "gen-yaml-nul-byte": Generated(_nul_byte, "", 4),
    "gen-mirror-port-out-of-range": Generated(_port_out_of_range, "spec.imageTagMirrors[0].mirrors[0]", 10),
    "gen-registry-ca-symlink-outside": Generated(_ca_symlink_outside, "spec.registryCA[0].certificate.file", 10),
    "gen-key-symlink-absolute": Generated(_key_symlink_absolute, "spec.certificates.api.key.file", 10),
    "gen-file-dangling-symlink": Generated(_dangling_symlink, "spec.pullSecret.file", 8),
    "gen-file-unreadable": Generated(_unreadable, "spec.pullSecret.file", 8),
    "gen-manifest-unparseable": Generated(_manifest_unparseable, "spec.extraManifests.directory", 8),
    "gen-manifest-alias-bomb": Generated(_manifest_alias_bomb, "spec.extraManifests.directory", 8),
    "gen-manifest-huge": Generated(_manifest_huge, "spec.extraManifests.directory", 8),
    "gen-manifest-many-documents": Generated(_manifest_many_documents, "spec.extraManifests.directory", 8),
}
CORPUS_CASES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


def _param(name: str, *, measured: bool) -> Any:
    generated = GENERATED.get(name)
    if generated is not None and generated.xfail and (measured or not generated.only_measured):
        return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=generated.xfail))
    return name


MEASURED_CASES = [_param(n, measured=True) for n in CORPUS_CASES + sorted(GENERATED)]
HOST_CASES = [_param(n, measured=False) for n in CORPUS_CASES + sorted(GENERATED)]


def _expected(name: str) -> list[tuple[str, int | None]]:
    if name in GENERATED:
        return [(GENERATED[name].path, GENERATED[name].line)]
    expect = json.loads((CORPUS / name / "expect.json").read_text())
    return [(e["path"], e["line"]) for e in expect["errors"]]


def prepare(name: str, parent: pathlib.Path, signer: tuple[bytes, bytes]) -> pathlib.Path:
    """The case's site-config under `parent/<name>/`, with its run-time material; returns the YAML's path."""
    if name not in GENERATED:
        path: pathlib.Path = CORPUS_MODULE._prepare(name, parent, signer)
        return path
    case = parent / name
    case.mkdir(parents=True)
    GENERATED[name].build(case)
    return case / "site-config.yaml"


def _names_the_problem(stderr: str, path: str, line: int | None) -> bool:
    where = f"{path or '<document>'}: "
    return any(where in row and (line is None or f"(line {line}" in row) for row in stderr.splitlines())


@pytest.fixture(scope="module")
def quiet_sim() -> Iterator[simulator.Simulator]:
    """One simulator for the module: a bad config must not make it see a single request."""
    with simulator.Simulator(seed="4.16", speed=600.0) as running:
        yield running


def _skip_unreadable_as_root(name: str) -> None:
    if name == "gen-file-unreadable" and os.geteuid() == 0:
        pytest.skip("running as root: a mode-0 file is still readable, so it cannot be made unreadable here")


@pytest.mark.parametrize("name", MEASURED_CASES)
def test_rejected_in_bounds_without_api_calls(
    name: str, tmp_path: pathlib.Path, signer: tuple[bytes, bytes], quiet_sim: simulator.Simulator
) -> None:
    _skip_unreadable_as_root(name)
    site = prepare(name, tmp_path / "cases", signer)
    root = tmp_path / "root"
    root.mkdir()
    requests = quiet_sim.cluster.recorder.requests
    result = harness.measure(harness.run_args(site, root, quiet_sim), timeout=30.0)
    named = all(_names_the_problem(result.stderr, path, line) for path, line in _expected(name))
    untouched = quiet_sim.cluster.recorder.requests == requests and harness.snapshot(root) == {}
    within = result.seconds < MAX_SECONDS and result.peak_rss_mb < MAX_RSS_MB
    passed = result.code == 65 and named and untouched and within
    figures.record("hostile-input", name, passed, seconds=result.seconds, peak_rss_mb=result.peak_rss_mb)
    assert result.code == 65, result.stderr
    assert named, (_expected(name), result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert quiet_sim.cluster.recorder.requests == requests, "a bad site-config reached the API"
    assert harness.snapshot(root) == {}, "a bad site-config created state on the host"
    assert result.seconds < MAX_SECONDS, f"{result.seconds:.1f} s"
    assert result.peak_rss_mb < MAX_RSS_MB, f"{result.peak_rss_mb:.0f} MiB"


def _host_file_case(name: str, root: pathlib.Path, signer: tuple[bytes, bytes]) -> None:
    """The case copied where the technician puts it: /etc/snoreloc/site-config.yaml (files beside it)."""
    site = prepare(name, root / "etc", signer)
    site.parent.rename(root / "etc" / "snoreloc")


@pytest.mark.parametrize("name", HOST_CASES)
def test_discovery_and_validation_leave_the_host_untouched(
    name: str, root: pathlib.Path, signer: tuple[bytes, bytes]
) -> None:
    _skip_unreadable_as_root(name)
    _host_file_case(name, root, signer)
    before = harness.snapshot(root)
    host = fs.HostFS(root)
    devices = blockdev.BlockDevices(command.FakeRunner(), host)  # any device probe would raise UnexpectedCommand
    found = discovery.discover(host, devices, clock.FakeClock())
    assert found.source is discovery.Source.HOST_FILE
    with pytest.raises(errors.ConfigError) as caught:
        loader.load(str(found.path))
    assert caught.value.exit_code == 65
    reported = {(p.path, p.line) for p in caught.value.problems}
    assert set(_expected(name)) <= reported, (set(_expected(name)), reported)
    assert harness.snapshot(root) == before


def test_the_corpus_covers_every_kind_the_issue_names() -> None:
    """Issue 7 lists kinds of hostile input; each has at least one case here (by name prefix)."""
    kinds = {
        "malformed YAML": ("yaml-unclosed-quote", "yaml-tab-indent", "yaml-two-documents"),
        "wrong types": ("type-domain-number", "type-interfaces-string", "type-timeout-string"),
        "unknown fields": ("unknown-field-typo", "nmstate-unknown-key"),
        "certificate not matching its key": ("key-mismatch",),
        "expired or wrong-name certificates": ("cert-expired", "cert-wrong-names"),
        "unreadable or oversized files": ("file-not-regular", "file-too-large", "file-is-directory"),
        "invalid pull secret JSON and base64": ("pull-secret-invalid-json", "pull-secret-bad-base64"),
        "invalid image references": ("mirror-reference-spaces", "mirror-with-digest"),
        "bad nmstate documents": ("network-file-invalid", "nmstate-state-invalid"),
        "files escaping the directory": ("file-dotdot", "file-absolute", "file-symlink-outside"),
        "alias bombs and deep nesting": ("yaml-alias-bomb", "yaml-deep-nesting", "yaml-deep-flow"),
    }
    present = set(CORPUS_CASES) | set(GENERATED)
    missing = {kind: [n for n in names if n not in present] for kind, names in kinds.items()}
    assert all(not names for names in missing.values()), missing
    assert len(CORPUS_CASES) >= 60

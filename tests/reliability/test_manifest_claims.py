"""Extra manifests, judged by class: every object snoreloc writes is refused as a manifest, broad RBAC is warned.

The variants come from the code's own list (`registry.claimed` of the complete example, which sets every setting): for
each claimed object a manifest naming it (with the claimed field, when the claim is on fields) must be refused by
`snoreloc validate` with exit 65 at the site-config line of `extraManifests`, naming the file and the setting; the
same object in another namespace or under another name, or setting only fields snoreloc leaves alone, must pass.
Every broad subject with cluster-admin, and with a role of the same manifests that allows every verb, must warn.
"""

from __future__ import annotations

import pathlib
import shutil
from typing import Any

import pytest
import yaml

from snoreloc.cli import main
from snoreloc.siteconfig import claims, loader, registry
from snoreloc.siteconfig.settings import ntp as ntp_setting

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _example_spec() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((EXAMPLES / "site-config.yaml").read_text())
    return dict(document["spec"])


CLAIMS = registry.claimed(_example_spec())


@pytest.fixture
def site(tmp_path: pathlib.Path) -> pathlib.Path:
    """The complete example (every setting given), its extra manifests replaced by one file, `extra.yaml`."""
    for item in EXAMPLES.iterdir():
        if item.is_file():
            shutil.copy(item, tmp_path / item.name)
    text = (tmp_path / "site-config.yaml").read_text()
    text = text.replace("    directory: manifests\n", "    files: [extra.yaml]\n")
    (tmp_path / "site-config.yaml").write_text(text)
    (tmp_path / "pull-secret.json").chmod(0o600)
    return tmp_path


def _manifest(claim: claims.Claim, *, namespace: str | None = None, name: str | None = None) -> dict[str, Any]:
    api = f"{claim.group}/v1" if claim.group else "v1"
    meta: dict[str, Any] = {"name": name or claim.name}
    if namespace or claim.namespace:
        meta["namespace"] = namespace or claim.namespace
    obj: dict[str, Any] = {"apiVersion": api, "kind": claim.kind, "metadata": meta}
    for field in claim.fields[:1]:
        node = obj
        for part in field[:-1]:
            node = node.setdefault(part, {})
        node[field[-1]] = {"x": "y"}
    if claim.kind in ("Secret", "ConfigMap"):
        obj["data" if claim.kind == "ConfigMap" else "stringData"] = {"k": "v"}
    return obj


def _validate(site: pathlib.Path, *documents: dict[str, Any]) -> loader.Report:
    (site / "extra.yaml").write_text(yaml.safe_dump_all(documents))
    return loader.validate(str(site / "site-config.yaml"))


def _line_of_extra_manifests(site: pathlib.Path) -> int:
    lines = (site / "site-config.yaml").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if "files: [extra.yaml]" in line)


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: f"{c.kind}-{c.namespace}-{c.name}-{len(c.fields)}")
def test_a_manifest_naming_what_snoreloc_writes_is_refused(
    claim: claims.Claim, site: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (site / "extra.yaml").write_text(yaml.safe_dump(_manifest(claim)))
    code = main.main(["validate", str(site / "site-config.yaml")])
    err = capsys.readouterr().err
    assert code == 65, err
    line = _line_of_extra_manifests(site)
    assert f"spec.extraManifests.files[0]: extra.yaml document 1 (line 1): {claim.kind}" in err, err
    assert f"(line {line}" in err and "is written by snoreloc" in err
    assert claims.findings.render_path(claim.setting) in err


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: f"{c.kind}-{c.namespace}-{c.name}-{len(c.fields)}")
def test_the_same_kind_under_another_name_or_fields_passes(claim: claims.Claim, site: pathlib.Path) -> None:
    other = _manifest(claim, name="site-own-object")
    report = _validate(site, other)
    assert report.valid, [p.render() for p in report.problems]
    if claim.fields:  # the claimed object, setting only a field snoreloc leaves alone
        obj = _manifest(claim)
        obj["spec"] = {"someOtherField": True}
        report = _validate(site, obj)
        assert report.valid, [p.render() for p in report.problems]


def _chrony(name: str, role: str = "master") -> dict[str, Any]:
    files = [{"path": ntp_setting.CHRONY_FILE, "mode": 420, "contents": {"source": "data:,server%20x"}}]
    meta = {"name": name, "labels": {"machineconfiguration.openshift.io/role": role}}
    spec = {"config": {"ignition": {"version": "3.2.0"}, "storage": {"files": files}}}
    return {"apiVersion": f"{claims.MCO}/v1", "kind": "MachineConfig", "metadata": meta, "spec": spec}


@pytest.mark.parametrize(
    ("name", "role", "refused"),
    [
        ("99-master-zz-chrony", "master", True),  # merged after ours: it would win over spec.ntp
        ("99-master-snoreloc-chrony-2", "master", True),
        ("50-masters-chrony-configuration", "master", False),  # merged before ours: ours wins (the docs' example)
        ("99-worker-zz-chrony", "worker", False),  # another pool
    ],
)
def test_a_chrony_machineconfig_that_would_beat_spec_ntp_is_refused(
    name: str, role: str, refused: bool, site: pathlib.Path
) -> None:
    report = _validate(site, _chrony(name, role))
    messages = "\n".join(p.render() for p in report.problems)
    assert (not report.valid) == refused, messages
    if refused:
        assert "would win over spec.ntp" in messages and "spec.extraManifests.files[0]" in messages


def _binding(kind: str, role_kind: str, role: str, group: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "grant"}
    if kind == "RoleBinding":
        meta["namespace"] = "site-apps"
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
    }


EVERY_VERB = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRole",
    "metadata": {"name": "site-everything"},
    "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
}
BROAD = [*claims.BROAD_GROUPS, "system:serviceaccounts:site-apps"]


@pytest.mark.parametrize("group", BROAD)
@pytest.mark.parametrize("role", ["cluster-admin", "site-everything"])
@pytest.mark.parametrize("kind", ["ClusterRoleBinding", "RoleBinding"])
def test_broad_rbac_is_warned_in_validate_and_plan(
    kind: str, role: str, group: str, site: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    documents = [EVERY_VERB, _binding(kind, "ClusterRole", role, group)]
    report = _validate(site, *documents)
    assert report.valid, [p.render() for p in report.problems]
    warned = [w.render() for w in report.warnings if "grants" in w.message]
    assert len(warned) == 1 and group in warned[0] and "spec.extraManifests.files[0]" in warned[0], warned
    assert main.main(["validate", str(site / "site-config.yaml")]) == 0
    shown = capsys.readouterr()
    assert "grants" in shown.out + shown.err
    loader.load(str(site / "site-config.yaml"))  # what `plan` and `run` call: it logs each warning (stderr)
    assert f"grants {'cluster-admin' if role == 'cluster-admin' else 'ClusterRole'}" in capsys.readouterr().err


def test_narrow_rbac_is_not_warned(site: pathlib.Path) -> None:
    binding = _binding("RoleBinding", "ClusterRole", "view", "system:authenticated")
    admin_to_one = _binding("ClusterRoleBinding", "ClusterRole", "cluster-admin", "site-admins")
    report = _validate(site, binding, admin_to_one)
    assert report.valid and not [w for w in report.warnings if "grants" in w.message]


def test_the_claimed_names_are_the_ones_the_steps_write() -> None:
    """The steps sit above the site-config layer, so `claims` spells their names; this keeps the two the same."""
    from snoreloc.steps.cluster import catalogs, cluster_config, ntp, proxy, ssh_keys  # noqa: PLC0415
    from snoreloc.steps.openshift import serving  # noqa: PLC0415

    names = {(c.kind, c.namespace, c.name) for c in CLAIMS}
    assert ("MachineConfig", "", ntp.CHRONY_CONFIG.name) in names
    assert ("MachineConfig", "", ssh_keys.SSH_CONFIG.name) in names
    for namespace, name in (
        ("openshift-config", serving.API_SECRET),
        ("openshift-config", serving.INGRESS_SECRET),
        ("openshift-ingress", serving.INGRESS_SECRET),
        (cluster_config.PULL_SECRET.namespace, cluster_config.PULL_SECRET.name),
    ):
        assert ("Secret", namespace, name) in names
    assert ("ConfigMap", "openshift-config", cluster_config.REGISTRY_CA) in names
    assert ("ConfigMap", "openshift-config", proxy.TRUSTED_CA) in names
    assert ("ImageDigestMirrorSet", "", cluster_config.DIGEST_MIRRORS) in names
    assert ("ImageTagMirrorSet", "", cluster_config.TAG_MIRRORS) in names
    assert ("Proxy", "", proxy.PROXY_CLUSTER.name) in names and ("OperatorHub", "", catalogs.OPERATORHUB.name) in names
    assert all(c.namespace == catalogs.NAMESPACE for c in CLAIMS if c.kind == "CatalogSource")

"""The fleet in Git (issue 33 item 3): `fleet render --git` writes a tree to commit with no plain-text secret, the
hub's Argo CD plugin opens it with Debian's `age` and `kubectl kustomize` into exactly the objects `render --sites`
makes, and `fleet diff` names the sites a change adds, removes or gives a new medium, on a two-commit Git repository
the test makes with Debian's `git`."""

from __future__ import annotations

import base64
import os
import pathlib
import shutil
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import yaml
from fleetinputs import CERTIFICATES_BLOCK, HEADER, serving_pair, site_row, write_site_files, write_template
from snoreloc_fleet.controller import reconcile
from snoreloc_fleet.hub import sitemedium
from snoreloc_fleet.render import gitops
from snoreloc_fleet.resource import site

from snoreloc.cli import main as cli

DEPLOY = pathlib.Path(site.__file__).resolve().parents[1] / "deploy" / "argocd"
NEEDS_AGE = pytest.mark.skipif(shutil.which("age") is None, reason="needs Debian's age (apt-get install age)")
NEEDS_GIT = pytest.mark.skipif(shutil.which("git") is None, reason="needs Debian's git (apt-get install git)")
KUBECTL = os.environ.get("SNORELOC_KUBECTL") or shutil.which("kubectl")


def _keygen(directory: pathlib.Path) -> tuple[pathlib.Path, str]:
    """A hub key made by Debian's age-keygen: (identity file, recipient)."""
    identity = directory / "hub.key"
    subprocess.run(["age-keygen", "-o", str(identity)], check=True, capture_output=True)
    recipient = subprocess.run(["age-keygen", "-y", str(identity)], check=True, capture_output=True, text=True)
    return identity, recipient.stdout.strip()


@pytest.fixture
def fleet_inputs(tmp_path: pathlib.Path, signer: tuple[bytes, bytes]) -> Callable[[Sequence[str]], list[str]]:
    """Writes the template (with per-site certificates and keys) and an inventory of the given rows; the argv of
    `fleet render` for them."""
    template = write_template(tmp_path / "template", CERTIFICATES_BLOCK)

    def write(rows: Sequence[str]) -> list[str]:
        for row in rows:
            name = row.split(",", 1)[0]
            if not (tmp_path / "files" / name).exists():
                write_site_files(tmp_path / "files" / name, serving_pair(signer, f"sno.{name}.example.com"))
        inventory = tmp_path / "sites.csv"
        inventory.write_text("\n".join([HEADER, *rows]) + "\n")
        return ["fleet", "render", "--template", str(template), "--inventory", str(inventory), "-n", "fleet-emea"]

    return write


def _rows(*numbers: int, **overrides: dict[str, str]) -> list[str]:
    return [site_row(n, files=f"files/store-{n:04d}", **overrides.get(f"s{n}", {})) for n in numbers]


def _secret_texts(tmp_path: pathlib.Path) -> list[bytes]:
    """Every secret the inputs hold (keys, the pull secret), raw and as base64: none may be in the tree."""
    found = [p.read_bytes() for p in (tmp_path / "files").rglob("*.key")]
    found.append((tmp_path / "template" / "pull-secret.json").read_bytes())
    return found + [base64.b64encode(s) for s in found]


def _scan(tree: pathlib.Path, secrets: list[bytes]) -> list[str]:
    """Files of the tree holding a secret in plain text, or anything shaped like a private key."""
    leaks = []
    for path in sorted(p for p in tree.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if b"PRIVATE KEY" in data or b'"auths"' in data or any(s.strip() in data for s in secrets):
            leaks.append(str(path.relative_to(tree)))
    return leaks


@NEEDS_AGE
@pytest.mark.allow_subprocess
def test_the_tree_has_a_kustomization_per_site_and_no_plain_text_secret(
    tmp_path: pathlib.Path, fleet_inputs: Callable[[Sequence[str]], list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    _, recipient = _keygen(tmp_path)
    argv = fleet_inputs(_rows(1, 2))
    tree = tmp_path / "tree"

    assert cli.main([*argv, "--git", str(tree), "--age-recipient", recipient]) == 0, capsys.readouterr().err

    root = yaml.safe_load((tree / "kustomization.yaml").read_text())
    assert root["resources"] == ["_shared", "store-0001", "store-0002"]
    for name in ("store-0001", "store-0002"):
        assert yaml.safe_load((tree / name / "kustomization.yaml").read_text())["resources"] == ["site.yaml"]
        assert (tree / name / "secrets.yaml.age").read_text().startswith("-----BEGIN AGE ENCRYPTED FILE-----")
    assert sorted(p.name for p in (tree / "_shared").iterdir()) == ["kustomization.yaml", "secrets.yaml.age"]
    secrets = _secret_texts(tmp_path)
    assert len(secrets) == 10  # two sites' api and ingress keys and the pull secret, raw and in base64
    assert _scan(tree, secrets) == []
    assert _scan(tmp_path / "files", secrets) != []  # the scan finds them where they are


@NEEDS_AGE
@pytest.mark.allow_subprocess
def test_each_site_records_the_digest_the_controller_computes(
    tmp_path: pathlib.Path, fleet_inputs: Callable[[Sequence[str]], list[str]]
) -> None:
    """The recorded digest is `sitemedium.check`'s (what the controller writes to status.media.digest) for the Site
    and its files as `render --sites` makes them."""
    _, recipient = _keygen(tmp_path)
    argv = fleet_inputs(_rows(1))
    assert cli.main([*argv, "--git", str(tmp_path / "tree"), "--age-recipient", recipient]) == 0
    assert cli.main([*argv, "--sites", str(tmp_path / "hub")]) == 0
    obj = yaml.safe_load((tmp_path / "tree/store-0001/site.yaml").read_text())
    held = {
        s["metadata"]["name"]: {k: base64.b64decode(v) for k, v in s["data"].items()}
        for s in yaml.safe_load_all((tmp_path / "hub/secrets.yaml").read_text())
    }
    refs = {name: ref["secretKeyRef"] for name, ref in obj["spec"]["files"].items()}
    files = {name: held[ref["name"]][ref["key"]] for name, ref in refs.items()}
    checked = sitemedium.check(obj, files)
    assert checked.valid, checked.problems
    assert obj["metadata"]["annotations"][gitops.DIGEST_ANNOTATION] == checked.digest


@NEEDS_AGE
@pytest.mark.skipif(KUBECTL is None, reason="needs kubectl with kustomize (SNORELOC_KUBECTL or kubectl on PATH)")
@pytest.mark.allow_subprocess
def test_the_argocd_plugin_builds_exactly_what_render_sites_makes(
    tmp_path: pathlib.Path, fleet_inputs: Callable[[Sequence[str]], list[str]]
) -> None:
    """The plugin's own generate command (deploy/argocd/cmp-plugin.yaml), run with Debian's age and kubectl's
    kustomize in the tree: the Sites and the unsealed Secrets are `render --sites`'s objects."""
    identity, recipient = _keygen(tmp_path)
    argv = fleet_inputs(_rows(1, 2))
    assert cli.main([*argv, "--git", str(tmp_path / "tree"), "--age-recipient", recipient]) == 0
    assert cli.main([*argv, "--sites", str(tmp_path / "hub")]) == 0
    plugin = yaml.safe_load(yaml.safe_load((DEPLOY / "cmp-plugin.yaml").read_text())["data"]["plugin.yaml"])
    assert plugin["kind"] == "ConfigManagementPlugin"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "kubectl").symlink_to(str(KUBECTL))
    env = {"PATH": f"{bindir}:{os.environ['PATH']}", "SNORELOC_AGE_IDENTITY": str(identity), "HOME": str(tmp_path)}
    discover = subprocess.run(
        plugin["spec"]["discover"]["find"]["command"], check=False, cwd=tmp_path / "tree", env=env
    )
    assert discover.returncode == 0
    generate = plugin["spec"]["generate"]
    built = subprocess.run(
        [*generate["command"], *generate["args"]],
        check=False,
        cwd=tmp_path / "tree",
        env=env,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    objects = [o for o in yaml.safe_load_all(built.stdout) if o]
    by_kind: dict[str, dict[str, Any]] = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], {})[obj["metadata"]["name"]] = obj
    rendered_sites = {s["metadata"]["name"]: s for s in yaml.safe_load_all((tmp_path / "hub/sites.yaml").read_bytes())}
    rendered_secrets = {
        s["metadata"]["name"]: s for s in yaml.safe_load_all((tmp_path / "hub/secrets.yaml").read_bytes())
    }
    assert by_kind["Secret"] == rendered_secrets
    for obj in by_kind["Site"].values():  # the tree's Sites also record their medium's digest, for `fleet diff`
        annotations = obj["metadata"]["annotations"]
        annotations.pop(gitops.DIGEST_ANNOTATION)
        if not annotations:
            obj["metadata"].pop("annotations")
    assert by_kind["Site"] == rendered_sites
    assert set(by_kind) == {"Site", "Secret"}


@NEEDS_AGE
@pytest.mark.allow_subprocess
def test_render_git_removes_a_gone_site_and_refuses_a_directory_it_did_not_write(
    tmp_path: pathlib.Path, fleet_inputs: Callable[[Sequence[str]], list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    _, recipient = _keygen(tmp_path)
    tree = tmp_path / "tree"
    assert cli.main([*fleet_inputs(_rows(1, 2)), "--git", str(tree), "--age-recipient", recipient]) == 0
    assert cli.main([*fleet_inputs(_rows(1)), "--git", str(tree), "--age-recipient", recipient]) == 0
    assert "removed 1 gone: store-0002" in capsys.readouterr().out
    assert sorted(p.name for p in tree.iterdir()) == ["_shared", "kustomization.yaml", "store-0001"]

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine\n")
    assert cli.main([*fleet_inputs(_rows(1)), "--git", str(foreign), "--age-recipient", recipient]) == 64
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]


@NEEDS_AGE
@pytest.mark.allow_subprocess
def test_a_new_recipient_seals_every_secret_again_for_both_keys(
    tmp_path: pathlib.Path, fleet_inputs: Callable[[Sequence[str]], list[str]]
) -> None:
    first_key, first = _keygen(tmp_path)
    second_dir = tmp_path / "second"
    second_dir.mkdir()
    second_key, second = _keygen(second_dir)
    tree, argv = tmp_path / "tree", fleet_inputs(_rows(1))
    assert cli.main([*argv, "--git", str(tree), "--age-recipient", first]) == 0
    before = (tree / "store-0001/secrets.yaml.age").read_text()
    assert cli.main([*argv, "--git", str(tree), "--age-recipient", first]) == 0
    assert (tree / "store-0001/secrets.yaml.age").read_text() == before  # nothing changed: kept as it was
    assert cli.main([*argv, "--git", str(tree), "--age-recipient", first, "--age-recipient", second]) == 0
    after = (tree / "store-0001/secrets.yaml.age").read_text()
    assert after != before
    for key in (first_key, second_key):
        opened = subprocess.run(["age", "-d", "-i", str(key)], input=after, capture_output=True, text=True, check=True)
        assert yaml.safe_load(opened.stdout)["metadata"]["name"] == "store-0001-files"


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ("AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ", "not a recipient"),
        ("age1notbech32", "58 characters"),
    ],
)
def test_a_wrong_recipient_is_refused_before_anything_is_written(
    tmp_path: pathlib.Path,
    fleet_inputs: Callable[[Sequence[str]], list[str]],
    capsys: pytest.CaptureFixture[str],
    given: str,
    problem: str,
) -> None:
    code = cli.main([*fleet_inputs(_rows(1)), "--git", str(tmp_path / "tree"), "--age-recipient", given])
    err = capsys.readouterr().err
    assert code == 65 and problem in err and "--age-recipient #1" in err, err
    assert given not in err
    assert not (tmp_path / "tree").exists()


def test_with_a_secret_store_the_tree_holds_external_secrets_and_no_secret(
    tmp_path: pathlib.Path, fleet_inputs: Callable[[Sequence[str]], list[str]]
) -> None:
    tree = tmp_path / "tree"
    assert cli.main([*fleet_inputs(_rows(1)), "--git", str(tree), "--secret-store", "vault"]) == 0
    external = yaml.safe_load((tree / "store-0001/externalsecret.yaml").read_text())
    assert external["kind"] == "ExternalSecret"
    assert external["spec"]["secretStoreRef"] == {"kind": "ClusterSecretStore", "name": "vault"}
    assert {"secretKey": "api.key", "remoteRef": {"key": "fleet-emea/store-0001-files", "property": "api.key"}} in (
        external["spec"]["data"]
    )
    assert yaml.safe_load((tree / "store-0001/kustomization.yaml").read_text())["resources"] == [
        "site.yaml",
        "externalsecret.yaml",
    ]
    assert not list(tree.rglob("*.age"))
    assert _scan(tree, _secret_texts(tmp_path)) == []


# --- fleet diff on a two-commit repository ---------------------------------------------------------------------------


def _git(repo: pathlib.Path, *argv: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", "-C", str(repo), *argv], check=True, capture_output=True, text=True, env=env)
    return done.stdout


def _commit(repo: pathlib.Path, message: str) -> None:
    _git(repo, "add", "-A", ".")
    _git(repo, "-c", "user.name=Fleet Owner", "-c", "user.email=owner@example.com", "commit", "-q", "-m", message)


@pytest.fixture
def two_commits(
    tmp_path: pathlib.Path, fleet_inputs: Callable[[Sequence[str]], list[str]]
) -> tuple[pathlib.Path, pathlib.Path]:
    """A repository whose tree `sites/emea` holds stores 1, 2, 3 at HEAD~1, and at HEAD: store 2's gateway changed,
    store 3 removed, store 4 added, store 1 untouched (but rendered again)."""
    identity, recipient = _keygen(tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    tree = repo / "sites" / "emea"
    tree.parent.mkdir()
    assert cli.main([*fleet_inputs(_rows(1, 2, 3)), "--git", str(tree), "--age-recipient", recipient]) == 0
    _commit(repo, "three stores")
    rows = _rows(1, 2, 4, s2={"gateway": "10.0.2.254"})
    assert cli.main([*fleet_inputs(rows), "--git", str(tree), "--age-recipient", recipient]) == 0
    _commit(repo, "store 2 moves its gateway, store 3 closes, store 4 opens")
    return repo, identity


def _diff(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main(["fleet", "diff", *argv])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@NEEDS_AGE
@NEEDS_GIT
@pytest.mark.allow_subprocess
def test_fleet_diff_names_the_sticks_to_remake_and_the_sites_added_and_removed(
    two_commits: tuple[pathlib.Path, pathlib.Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, identity = two_commits
    monkeypatch.chdir(repo)
    code, out = _diff(capsys, "HEAD~1", "HEAD", "--tree", "sites/emea")
    assert code == 0, out
    assert "1 added, 1 removed, 1 with a new medium, 0 changed with the same medium, 1 unchanged" in out
    assert "added    fleet-emea/store-0004" in out and "removed  fleet-emea/store-0003" in out
    assert "medium   fleet-emea/store-0002" in out and "remake its stick" in out
    assert "store-0001" not in out.split("not checked against the hub")[0]
    assert "not checked against the hub (no --kubeconfig)" in out
    # Rendering again kept the sealed files whose Secret did not change: the commit shows only what changed.
    committed = _git(repo, "diff", "--no-renames", "--name-only", "HEAD~1", "HEAD").split()
    gone_and_new = [f"sites/emea/{s}/{f}" for s in ("store-0003", "store-0004") for f in ("kustomization.yaml",
                    "secrets.yaml.age", "site.yaml")]  # fmt: skip
    assert sorted(committed) == ["sites/emea/kustomization.yaml", "sites/emea/store-0002/site.yaml", *gone_and_new]

    # With the hub's key, each medium is computed from the sealed files: the same verdict, and the digests agree.
    monkeypatch.chdir(repo / "sites" / "emea")
    code, with_key = _diff(capsys, "HEAD~1", "HEAD", "--identity", str(identity), "-o", "json")
    doc = yaml.safe_load(with_key)
    assert code == 0
    assert [e["site"] for e in doc["newMedium"]] == ["fleet-emea/store-0002"]
    assert doc["unchanged"] == 1 and doc["staleDigest"] == [] and doc["unknownMedium"] == []


@NEEDS_AGE
@NEEDS_GIT
@pytest.mark.allow_subprocess
def test_fleet_diff_of_two_directories_and_of_a_hand_edit(
    tmp_path: pathlib.Path, two_commits: tuple[pathlib.Path, pathlib.Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Two directories compare as two revisions do; a Site edited by hand after rendering (its recorded digest no
    longer its files') still shows a new medium, and with the key the stale record is named."""
    repo, identity = two_commits
    base, head = tmp_path / "base", tmp_path / "head"
    shutil.copytree(repo / "sites/emea", base)
    shutil.copytree(repo / "sites/emea", head)
    edited = head / "store-0001/site.yaml"
    edited.write_text(edited.read_text().replace("sno.store-0001.example.com", "sno.store-0001.example.net"))

    code, out = _diff(capsys, str(base), str(head))
    assert code == 0 and "0 added, 0 removed, 1 with a new medium" in out and "medium   fleet-emea/store-0001" in out
    code, out = _diff(capsys, str(base), str(head), "--identity", str(identity))
    assert code == 0 and "store-0001: its recorded medium digest is not its files': render it again" in out


@NEEDS_GIT
@pytest.mark.allow_subprocess
def test_fleet_diff_of_a_revision_that_does_not_exist_is_a_usage_error(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "README").write_text("x\n")
    _commit(tmp_path, "one")
    monkeypatch.chdir(tmp_path)
    code, out = _diff(capsys, "no-such-branch", "HEAD")
    assert code == 64 and "neither a directory nor a revision" in out and "Traceback" not in out


# --- the controller's part: a Relocated Site is kept from Argo CD's prune --------------------------------------------


def test_a_relocated_site_gets_argocds_keep_options_with_its_phase_label_and_keeps_its_own() -> None:
    relocating = site.view({"metadata": {"labels": {site.PHASE_LABEL: "InProgress"}}})
    assert reconcile.metadata_patch(relocating, "Relocated") == {
        "labels": {site.PHASE_LABEL: "Relocated"},
        "annotations": {site.ARGOCD_SYNC_OPTIONS: "Prune=false,Delete=false"},
    }
    assert reconcile.metadata_patch(relocating, "Failed") == {"labels": {site.PHASE_LABEL: "Failed"}}
    own = site.view(
        {
            "metadata": {
                "labels": {site.PHASE_LABEL: "Relocated"},
                "annotations": {site.ARGOCD_SYNC_OPTIONS: "ServerSideApply=true, Prune=true"},
            }
        }
    )
    assert reconcile.metadata_patch(own, "Relocated") == {
        "annotations": {site.ARGOCD_SYNC_OPTIONS: "ServerSideApply=true,Prune=false,Delete=false"}
    }
    kept = site.view(
        {
            "metadata": {
                "labels": {site.PHASE_LABEL: "Relocated"},
                "annotations": {site.ARGOCD_SYNC_OPTIONS: "Prune=false,Delete=false"},
            }
        }
    )
    assert reconcile.metadata_patch(kept, "Relocated") == {}

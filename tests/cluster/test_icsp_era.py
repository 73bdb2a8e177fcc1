"""A relocation of a 4.12 (ICSP-only) cluster: mirrors become an ImageContentSourcePolicy, tag mirrors are refused.

A 4.12 API server does not serve ImageDigestMirrorSet or ImageTagMirrorSet, so this seed is the only place the
agent's ImageContentSourcePolicy write path runs. A real cluster has one version, hence `simonly`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from snoreloc import errors
from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.cli import main
from snoreloc.engine import pipeline
from snoreloc.siteconfig import model
from snoreloc_sim.openshift import simulator

from .conftest import Relocation, site_config

pytestmark = pytest.mark.simonly  # a 4.12 seed (see the docstring) and the simulator's write counter
ICSP_ERA = pytest.mark.parametrize("sim", [{"seed": "4.12"}], indirect=True)

SITE = "mirror.edge7.example.net:5000"
SPARE = "mirror2.edge7.example.net:5000"
RELEASE = "quay.io/openshift-release-dev/ocp-release"
ART_DEV = "quay.io/openshift-release-dev/ocp-v4.0-art-dev"
DIGEST_MIRRORS = (
    model.Mirror(RELEASE, (f"{SITE}/ocp/release", f"{SPARE}/ocp/release")),
    model.Mirror(ART_DEV, (f"{SITE}/ocp/art-dev",), "NeverContactSource"),
)
OURS = kube.Ref(kube.ICSP, "snoreloc-digest-mirrors")
FACTORY = kube.Ref(kube.ICSP, "factory-mirror")
MASTER_POOL = kube.Ref(kube.MCPS, "master")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "site-config.yaml"


def icsp_site(**overrides: Any) -> model.SiteConfig:
    """The test site-config with digest mirrors only (one with a source policy an ICSP cannot carry)."""
    return site_config(**{"image_digest_mirrors": DIGEST_MIRRORS, "image_tag_mirrors": (), **overrides})


def icsp_names(r: Relocation) -> list[str]:
    return sorted(item["metadata"]["name"] for item in r.client.list(kube.ICSP))


def writes(r: Relocation, sim: simulator.Simulator) -> tuple[int, int]:
    """Writes the client sent and writes the API server received."""
    return r.client.writes, sim.cluster.recorder.writes


def rendered(r: Relocation) -> str:
    return str(r.get(MASTER_POOL)["status"]["configuration"]["name"])


@ICSP_ERA
def test_relocation_writes_the_digest_mirrors_as_one_icsp(relocation: Relocation) -> None:
    factory_render = rendered(relocation)
    result = relocation.run(icsp_site())
    assert set(result.actions.values()) == {"ran"}
    icsp = relocation.get(OURS)
    assert (icsp["apiVersion"], icsp["kind"]) == ("operator.openshift.io/v1alpha1", "ImageContentSourcePolicy")
    assert icsp["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "snoreloc"}
    assert "namespace" not in icsp["metadata"]
    assert icsp["spec"] == {
        "repositoryDigestMirrors": [
            {"source": RELEASE, "mirrors": [f"{SITE}/ocp/release", f"{SPARE}/ocp/release"]},
            {"source": ART_DEV, "mirrors": [f"{SITE}/ocp/art-dev"]},  # no mirrorSourcePolicy: ICSP has none
        ]
    }
    assert icsp_names(relocation) == ["snoreloc-digest-mirrors"]  # removeMirrors took the factory ICSP
    changed = relocation.status()["steps"]["cluster-config"]["changed"]
    assert "create ImageContentSourcePolicy snoreloc-digest-mirrors" in changed
    assert "delete ImageContentSourcePolicy factory-mirror" in changed
    assert not [line for line in changed if "MirrorSet" in line]
    assert rendered(relocation) != factory_render  # the machine-config operator rolled the mirrors out


@ICSP_ERA
def test_a_dropped_mirror_source_policy_is_a_warning_not_silence(relocation: Relocation) -> None:
    relocation.run(icsp_site())
    [warning] = relocation.status()["steps"]["cluster-config"]["warnings"]
    assert warning.startswith("spec.imageDigestMirrors[1].mirrorSourcePolicy (NeverContactSource) is not applied")
    assert ART_DEV in warning and "before 4.13" in warning
    report = relocation.report()
    assert report["state"] == "done-with-warnings"
    assert warning in report["warnings"]


@ICSP_ERA
def test_rerun_makes_no_writes_and_a_forced_replan_finds_nothing(
    relocation: Relocation, sim: simulator.Simulator
) -> None:
    relocation.run(icsp_site())
    before = writes(relocation, sim)
    result = relocation.run(icsp_site())
    assert set(result.actions.values()) == {"skipped"}
    assert writes(relocation, sim) == before
    forced = relocation.run(icsp_site(), step="cluster-config", force=True)
    assert forced.actions == {"cluster-config": "ran"}
    assert writes(relocation, sim) == before


@ICSP_ERA
def test_changed_mirrors_update_the_same_icsp_and_none_deletes_it(relocation: Relocation) -> None:
    relocation.run(icsp_site())
    uid = relocation.get(OURS)["metadata"]["uid"]
    moved = (model.Mirror(RELEASE, (f"{SPARE}/ocp/release",)),)
    relocation.run(icsp_site(image_digest_mirrors=moved))
    icsp = relocation.get(OURS)
    assert icsp["metadata"]["uid"] == uid
    assert icsp["spec"] == {"repositoryDigestMirrors": [{"source": RELEASE, "mirrors": [f"{SPARE}/ocp/release"]}]}
    relocation.run(icsp_site(image_digest_mirrors=()))
    assert icsp_names(relocation) == []


@ICSP_ERA
def test_rollback_restores_the_factory_icsp(relocation: Relocation, sim: simulator.Simulator) -> None:
    factory = relocation.get(FACTORY)
    relocation.run(icsp_site())
    assert relocation.client.find(FACTORY) is None
    result = pipeline.rollback(relocation.paths, relocation.client, clock_mod.ScaledClock(sim.speed))
    assert "ImageContentSourcePolicy factory-mirror" in result.recreated
    assert "ImageContentSourcePolicy snoreloc-digest-mirrors" in result.deleted
    restored = relocation.get(FACTORY)
    assert restored["spec"] == factory["spec"]
    kept = ("name", "labels", "annotations")
    assert {k: restored["metadata"].get(k) for k in kept} == {k: factory["metadata"].get(k) for k in kept}
    assert icsp_names(relocation) == ["factory-mirror"]
    assert relocation.status()["state"] == "rolled-back"


def check_refusal(error: errors.ConfigError) -> None:
    assert error.exit_code == errors.ExitCode.BAD_CONFIG == 65
    assert error.message.startswith("spec.imageTagMirrors cannot be applied")
    assert "OpenShift 4.12" in error.message and "4.13 or later" in error.message
    assert [problem.path for problem in error.problems] == ["spec.imageTagMirrors"]
    assert "Remove spec.imageTagMirrors" in error.hint and "spec.imageDigestMirrors" in error.hint


@ICSP_ERA
@pytest.mark.parametrize(
    ("options", "journaled"),
    [({}, True), ({"step": "cluster-config"}, True), ({"dry_run": True}, False)],
    ids=["run", "step-cluster-config", "dry-run"],
)
def test_tag_mirrors_are_refused_before_any_change(
    relocation: Relocation,
    sim: simulator.Simulator,
    options: dict[str, Any],
    journaled: bool,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Refused before any step: the run's error, and no step is blamed (issue 35: "csr: failed" was shown)."""
    before = writes(relocation, sim)
    with pytest.raises(errors.ConfigError) as caught:
        relocation.run(site_config(), **options)  # the default test site has image tag mirrors
    check_refusal(caught.value)
    assert writes(relocation, sim) == before == (0, 0)
    assert icsp_names(relocation) == ["factory-mirror"]
    if not journaled:
        return
    status = relocation.status()
    assert status["state"] == "failed" and status["error"]["exit_code"] == 65
    assert {step["state"] for step in status["steps"].values()} <= {"pending"}
    capsys.readouterr()
    assert main.main(["status", "--root", str(relocation.root)]) == 1
    shown = capsys.readouterr().out
    assert "error: spec.imageTagMirrors cannot be applied" in shown and "hint: Remove spec.imageTagMirrors" in shown
    assert [line for line in shown.splitlines()[1:] if line.endswith(": failed")] == [], shown  # no step blamed


@ICSP_ERA
def test_the_cli_exits_65_naming_the_field(
    sim: simulator.Simulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`snoreloc run` with the shipped example (which has tag mirrors) against a 4.12 cluster."""
    argv = ["run", "--cluster-only", "--site-config", str(EXAMPLE), "--kubeconfig", str(sim.kubeconfig_path)]
    code = main.main([*argv, "--state-dir", str(tmp_path / "state")])
    err = capsys.readouterr().err
    assert code == 65
    assert "error: spec.imageTagMirrors cannot be applied: this cluster runs OpenShift 4.12" in err
    assert "hint: Remove spec.imageTagMirrors" in err
    assert sim.cluster.recorder.writes == 0

"""Debian's kubectl (1.20, `make kubectl-debian`) as a fleet owner uses it on the hub: `kubectl apply -k deploy/`
(created, then unchanged), Sites applied (client-side and `--server-side`), `kubectl get sites` with the printer
columns once the controller has reconciled them, an invalid Site read back with its Validated=False findings, and
`kubectl kustomize deploy/` rendering what `snoreloc fleet install` applies."""

from __future__ import annotations

import argparse
import json
import pathlib
import re
from typing import Any

import pytest
import yaml
from snoreloc_fleet.controller import operator
from snoreloc_fleet.resource import site
from snoreloc_fleet.verbs import controller as controller_verb
from snoreloc_fleet.verbs import install

from hubsim.test_hub_kubectl import KUBECTL
from snoreloc.adapters import kube
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import NS, site_config, site_object, wait_phase

pytestmark = pytest.mark.skipif(
    KUBECTL is None, reason="Debian's kubectl is not unpacked: run `make kubectl-debian` (or set SNORELOC_KUBECTL)"
)
DEPLOY = install.DEPLOY


def _yaml(obj: dict[str, Any]) -> str:
    return yaml.safe_dump(obj, sort_keys=False)


def test_kubectl_applies_sites_and_prints_their_columns(
    hub: HubSimulator, admin: kube.Client, controller: operator.Controller, kubectl: Any
) -> None:
    applied = kubectl("apply", "-f", str(DEPLOY / "crd.yaml"))  # over the CRD the fixture created: configured
    assert applied.code == 0 and "sites.fleet.snoreloc.io" in applied.out, applied.err
    created = kubectl("apply", "-f", "-", stdin=_yaml(site_object("store-1")))
    assert created.out.strip() == "site.fleet.snoreloc.io/store-1 created", created.err
    shelf = {"mustBootBy": "2027-03-01T09:00:00Z"}  # the depot's seal record (issue 37)
    ssa = kubectl("apply", "--server-side", "-f", "-", stdin=_yaml(site_object("store-2", shelf=shelf)))
    assert ssa.out.strip() == "site.fleet.snoreloc.io/store-2 serverside-applied", ssa.err
    for name in ("store-1", "store-2"):
        wait_phase(admin, name, site.Phase.READY)
    again = kubectl("apply", "-f", "-", stdin=_yaml(site_object("store-1")))
    assert again.out.strip() == "site.fleet.snoreloc.io/store-1 unchanged", again.err

    lines = kubectl("get", "sites", "-n", NS).out.splitlines()
    assert lines[0].split() == [
        "NAME",
        "PHASE",
        "STEP",
        "REPORTED",
        "REASON",
        "MEDIUM",
        "DOWNLOADS",
        "MUST-BOOT-BY",
        "AGE",
    ]
    rows = [line.split() for line in lines[1:]]
    assert [row[:3] for row in rows] == [["store-1", "Ready", "NoReport"], ["store-2", "Ready", "NoReport"]]
    assert rows[1][3] == shelf["mustBootBy"] and len(rows[0]) == 4  # store-1's date unknown: an empty cell
    assert all(re.fullmatch(r"\d+s", row[-1]) for row in rows)  # no step nor report yet: empty cells, then the age
    selected = kubectl("get", "sites", "-n", NS, "-l", f"{site.PHASE_LABEL}=Ready", "-o", "name").out.split()
    assert selected == ["site.fleet.snoreloc.io/store-1", "site.fleet.snoreloc.io/store-2"]


def test_kubectl_shows_an_invalid_sites_findings(
    hub: HubSimulator, admin: kube.Client, controller: operator.Controller, kubectl: Any
) -> None:
    broken = site_object("store-9", site_config("store-9", domain="not a domain"))
    assert kubectl("apply", "-f", "-", stdin=_yaml(broken)).code == 0
    wait_phase(admin, "store-9", site.Phase.INVALID)
    shown = kubectl("get", "site", "store-9", "-n", NS, "-o", "json")
    status = json.loads(shown.out)["status"]
    validated = next(c for c in status["conditions"] if c["type"] == "Validated")
    assert (validated["status"], validated["reason"]) == ("False", "InvalidSiteConfig")
    assert status["validation"]["errors"][0]["path"] == "spec.siteConfig.domain"
    columns = kubectl("get", "sites", "-n", NS).out.splitlines()[1].split()
    assert columns[:3] == ["store-9", "Invalid", "InvalidSiteConfig"]


def test_kubectl_kustomize_renders_what_install_applies(kubectl: Any, tmp_path: pathlib.Path) -> None:
    rendered = kubectl("kustomize", str(DEPLOY))
    assert rendered.code == 0, rendered.err
    by_kind = {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(rendered.out)}
    shipped = {(o["kind"], o["metadata"]["name"]): o for o in install.manifests()}
    assert by_kind == shipped


def test_kubectl_kustomize_of_deploy_bmc_adds_the_image_server_to_what_install_applies(kubectl: Any) -> None:
    """`deploy_bmc/` (issue 36): the hub of `deploy/` plus the controller's image server, its Service and its TLS
    Secret, with flags the controller itself accepts."""
    rendered = kubectl("kustomize", str(DEPLOY.parent / "deploy_bmc"))
    assert rendered.code == 0, rendered.err
    by_kind = {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(rendered.out)}
    shipped = {(o["kind"], o["metadata"]["name"]) for o in install.manifests()}
    assert set(by_kind) == shipped | {("Service", "snoreloc-fleet-images")}
    deployment = by_kind["Deployment", "snoreloc-fleet-controller"]
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert set(ports) == {"metrics", "images"}, "the base's metrics port kept"
    service = by_kind["Service", "snoreloc-fleet-images"]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"] == {
        k: pod["metadata"]["labels"][k] for k in service["spec"]["selector"]}  # fmt: skip
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["images"]

    parser = argparse.ArgumentParser()
    controller_verb.add_arguments(parser)
    assert container["command"][:3] == ["snoreloc", "fleet", "controller"]
    served = controller_verb.image_server(parser.parse_args(container["command"][3:]))
    assert served is not None and served.port == ports["images"] and served.base.startswith("https://")
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    (tls_volume,) = [name for name, path in mounts.items() if served.cert.parent == pathlib.Path(path)]
    assert served.key.parent == served.cert.parent
    assert volumes[tls_volume]["secret"]["secretName"] == "snoreloc-fleet-image-tls"
    assert volumes[tls_volume]["secret"]["defaultMode"] == 0o400, "the image server's key: readable by it alone"


def test_kubectl_apply_k_sets_up_the_hub(kubectl: Any) -> None:
    # from a hub without them (a real hub keeps what earlier tests installed), and left so
    assert kubectl("delete", "-k", str(DEPLOY), "--ignore-not-found").code == 0
    try:
        _apply_twice(kubectl)
    finally:
        kubectl("delete", "-k", str(DEPLOY), "--ignore-not-found")


def _apply_twice(kubectl: Any) -> None:
    first = kubectl("apply", "-k", str(DEPLOY))
    assert first.code == 0, first.err
    assert len(first.out.splitlines()) == len(list(install.manifests()))
    assert "deployment.apps/snoreloc-fleet-controller created" in first.out
    again = kubectl("apply", "-k", str(DEPLOY))
    assert again.code == 0, again.err
    assert all(line.endswith("unchanged") for line in again.out.splitlines()), again.out

"""The Site CRD: the shipped file is what `snoreloc_fleet.resource.site` builds, its bounds are the agent's, and
`kubectl kustomize` of deploy/ renders it."""

from __future__ import annotations

import pathlib

import yaml
from snoreloc_fleet.resource import site, wave
from snoreloc_fleet.verbs import install

from snoreloc.engine import hubreport

DEPLOY = pathlib.Path(site.__file__).resolve().parents[1] / "deploy"


def test_the_shipped_crd_is_the_generated_one() -> None:
    assert (DEPLOY / "crd.yaml").read_text(encoding="utf-8") == site.crd_yaml(), (
        "regenerate: python -m snoreloc_fleet.resource.site > fleet/src/snoreloc_fleet/deploy/crd.yaml"
    )


def test_the_crd_has_the_status_subresource_and_the_printer_columns() -> None:
    version = site.crd()["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns == ["Phase", "Step", "Reported", "Reason", "Medium", "Downloads", "Must-Boot-By", "Age"]
    assert {c["jsonPath"] for c in version["additionalPrinterColumns"]} >= {".status.phase", ".status.agent.step"}


def test_the_report_is_bounded_with_the_agents_limits() -> None:
    agent = site.crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    report = agent[site.STATUS_AGENT]["properties"]
    assert report["steps"]["maxItems"] == hubreport.MAX_STEPS
    assert report["warnings"]["maxItems"] == hubreport.MAX_WARNINGS
    assert report["todo"]["maxLength"] == hubreport.MAX_TEXT
    assert report["failure"]["properties"]["message"]["maxLength"] == hubreport.MAX_TEXT


def test_every_status_string_and_list_is_bounded() -> None:
    def walk(node: object, path: str) -> list[str]:
        unbounded = []
        if isinstance(node, dict):
            free = "maxLength" not in node and "enum" not in node and node.get("format") != "date-time"
            if node.get("type") == "string" and free:
                unbounded.append(path)
            if node.get("type") == "array" and "maxItems" not in node:
                unbounded.append(path)
            for key, value in node.items():
                unbounded += walk(value, f"{path}.{key}")
        return unbounded

    status = site.crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert walk(status, "status") == []


def test_every_status_number_is_bounded_and_every_free_string_refuses_controls() -> None:
    """Issue 30: no negative or 1e300 number, no control character (what `kubectl get sites` would print raw)."""

    def walk(node: object, path: str) -> list[str]:
        loose = []
        if isinstance(node, dict):
            generation = path.endswith(site.STATUS_OBSERVED)  # int64 of the API server's generation, minimum 0
            number = node.get("type") in ("integer", "number") and not generation
            if number and ("minimum" not in node or "maximum" not in node):
                loose.append(path)
            free = "enum" not in node and node.get("format") != "date-time"
            if node.get("type") == "string" and free and node.get("pattern") not in (site.NO_CONTROLS, *_NAMED):
                loose.append(path)
            for key, value in node.items():
                loose += walk(value, f"{path}.{key}")
        return loose

    status = site.crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert walk(status, "status") == []


_NAMED = (
    "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",  # a condition's reason: no control character either
    hubreport.PEM_TEXT,  # the node's reported API CA: PEM's own characters and newlines, nothing else
)


def test_install_applies_what_the_kustomization_lists() -> None:
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text(encoding="utf-8"))
    kinds = [obj["kind"] for obj in install.manifests()]
    assert kinds[:2] == ["CustomResourceDefinition", "CustomResourceDefinition"]  # Site, then Wave
    assert len(kustomization["resources"]) == 6
    assert {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment"} <= set(kinds)
    assert all((obj["apiVersion"], obj["kind"]) in install.KINDS for obj in install.manifests())


def test_install_sets_the_hub_address_and_image() -> None:
    objects = [install.customised(o, "https://hub.example:6443", "PEM", "registry/x:1") for o in install.manifests()]
    config = next(o for o in objects if o["kind"] == "ConfigMap")
    assert config["data"] == {"url": "https://hub.example:6443", "ca.crt": "PEM"}
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "registry/x:1"


def test_the_shipped_wave_crd_is_the_generated_one() -> None:
    assert (DEPLOY / "wave-crd.yaml").read_text(encoding="utf-8") == wave.crd_yaml(), (
        "regenerate: python -m snoreloc_fleet.resource.wave > fleet/src/snoreloc_fleet/deploy/wave-crd.yaml"
    )


def test_the_gate_is_exactly_the_wave_contract() -> None:
    status = site.crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    gate = status["properties"][site.STATUS_GATE]
    assert gate["required"] == ["state", "wave", "batch", "cause", "since"] == list(gate["properties"])
    assert gate["properties"]["state"]["enum"] == ["Open", "Held"]
    assert gate["properties"]["cause"]["maxLength"] == 512
    assert gate["properties"]["batch"]["minimum"] == 0
    assert gate["properties"]["since"]["format"] == "date-time"

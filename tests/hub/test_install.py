"""`snoreloc fleet install` on the hub simulator: every object of deploy/ server-side applied, a second run changes
nothing, the hub's address in its ConfigMap, and the controller's RBAC (rbac.yaml) is enough: a controller running
with its own ServiceAccount's token (not the admin's) validates a Site and issues its credential."""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

import yaml
from snoreloc_fleet.verbs import install

from snoreloc.adapters import kube
from snoreloc.cli import main
from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import NS, Running, stick_site


def _install(hub: HubSimulator, *extra: str) -> int:
    argv = ["fleet", "install", "--kubeconfig", str(hub.kubeconfig_path), "--hub-url", "https://hub.example:6443"]
    return main.main([*argv, *extra])


def _controller_kubeconfig(hub: HubSimulator, admin: kube.Client, path: pathlib.Path) -> str:
    account = kube.Ref(install.KINDS[("v1", "ServiceAccount")], install.CONTROLLER, "snoreloc-fleet")
    answer = admin.request("POST", account.path("token"), body={"spec": {"expirationSeconds": 3600}})
    config = yaml.safe_load(hub.kubeconfig_path.read_text())
    config["users"][0]["user"] = {"token": answer["status"]["token"]}
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return str(path)


def test_install_sets_up_the_hub_once_and_its_rbac_suffices(
    hub: HubSimulator,
    admin: kube.Client,
    start_controller: Callable[..., Running],
    tmp_path: pathlib.Path,
    capsys: Any,
) -> None:
    assert _install(hub, "--dry-run") == 0
    assert admin.find(kube.Ref(install.KINDS[("v1", "Namespace")], "snoreloc-fleet")) is None, "a dry run stores none"
    checked = capsys.readouterr().out.splitlines()
    assert checked[:3] == [
        "checked: CustomResourceDefinition sites.fleet.snoreloc.io",
        "checked: CustomResourceDefinition waves.fleet.snoreloc.io",
        "checked: Namespace snoreloc-fleet",
    ]
    waiting = [line for line in checked if line.startswith("not checked (namespace snoreloc-fleet is new): ")]
    assert len(waiting) == 3 and len(checked) == len(list(install.manifests()))  # ServiceAccount, ConfigMap, Deployment
    assert _install(hub, "--image", "registry.example/snoreloc-fleet:1") == 0
    applied = capsys.readouterr().out.splitlines()
    assert len(applied) == len(list(install.manifests())) and all(line.startswith("applied:") for line in applied)
    objects = [(install.KINDS[(o["apiVersion"], o["kind"])], o["metadata"]) for o in install.manifests()]
    refs = [kube.Ref(res, meta["name"], meta.get("namespace", "")) for res, meta in objects]
    versions = [admin.get(ref)["metadata"]["resourceVersion"] for ref in refs]
    assert _install(hub, "--image", "registry.example/snoreloc-fleet:1") == 0
    assert [admin.get(ref)["metadata"]["resourceVersion"] for ref in refs] == versions, "a re-run changes nothing"
    config = admin.get(kube.Ref(kube.CONFIGMAPS, install.HUB_CONFIGMAP, "snoreloc-fleet"))
    assert config["data"] == {"url": "https://hub.example:6443"}

    kubeconfig = _controller_kubeconfig(hub, admin, tmp_path / "controller.kubeconfig")
    start_controller(kubeconfig=kubeconfig)
    status = stick_site(admin, "store-1")["status"]
    assert status["credential"]["secret"] == "store-1-report"
    assert admin.find(kube.Ref(kube.SECRETS, "store-1-report", NS)) is not None

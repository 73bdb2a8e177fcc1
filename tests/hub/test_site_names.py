"""Names are names (issue 30): a Site cannot make the controller read anything of another namespace, watched at the
hub over HTTPS.

The hub refuses a Site whose `secretKeyRef`/`configMapKeyRef` name or key is not a Kubernetes name at admission
(the CRD's pattern). On a hub still serving the CRD as it was before (no pattern: `older_crd`), the controller checks
every name itself before any call: such a Site turns Invalid naming the field, and the hub saw no request outside
the Site's namespace, while a good Site created with them is served. (With the new CRD in place over such a Site,
a status write would be refused as a whole: kube-apiserver >= 1.30 ratchets an unchanged invalid field, the
simulator does not model ratcheting; see its `validation` module.)
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable
from typing import Any

import pytest
from snoreloc_fleet.resource import site, siteinput

from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc.cli import main
from snoreloc_sim.hub.simulator import HubSimulator

from . import test_site_input_rules as rules
from .conftest import NS, SITES, Running, site_object, wait_for, wait_phase

CRDS = kube.Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)
VICTIM = "victim"
# What a Site might name to climb out of its namespace, or that is simply not a name.
HOSTILE = {
    "climb": f"../../kube-system/secrets/{VICTIM}",
    "encoded": f"..%2f..%2fkube-system%2fsecrets%2f{VICTIM}",
    "inside": f"pull-secret/../../../kube-system/secrets/{VICTIM}",
    "upper": "Pull-Secret",
    "long": "a" * 254,
}
FIELD = "spec.files.pull-secret.json.secretKeyRef.name"


def _hostile(name: str, secret_name: str) -> dict[str, Any]:
    obj = site_object(name)
    obj["spec"]["files"]["pull-secret.json"]["secretKeyRef"]["name"] = secret_name
    return obj


def _lax(crd: dict[str, Any]) -> dict[str, Any]:
    """The Site CRD as it was before issue 30: names and keys of file sources unchecked."""
    lax = copy.deepcopy(crd)
    spec = lax["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    for kind in ("secretKeyRef", "configMapKeyRef"):
        for part in spec["properties"]["files"]["additionalProperties"]["properties"][kind]["properties"].values():
            part.pop("pattern", None)
            part["maxLength"] = 1024
    return lax


@pytest.fixture
def older_crd(admin: kube.Client) -> dict[str, Any]:
    """The hub serving the pre-issue-30 CRD (names and keys of file sources unchecked); the CRD as replaced."""
    ref = kube.Ref(CRDS, site.CRD_NAME)
    shipped = admin.get(ref)
    return admin.replace(ref, {**_lax(shipped), "metadata": shipped["metadata"]})


def test_the_hub_refuses_a_name_that_is_not_a_name_at_admission(hub: HubSimulator, admin: kube.Client) -> None:
    for index, secret_name in enumerate(HOSTILE.values()):
        with pytest.raises(kube.Invalid) as refused:
            admin.create(SITES, _hostile(f"store-{index}", secret_name))
        assert "secretKeyRef.name" in str(refused.value)
    bad_key = site_object("store-k")
    bad_key["spec"]["files"]["pull-secret.json"]["secretKeyRef"]["key"] = "../x"
    with pytest.raises(kube.Invalid, match=r"secretKeyRef\.key"):
        admin.create(SITES, bad_key)
    with pytest.raises(kube.Invalid, match=r"metadata\.name"):
        admin.create(SITES, site_object("s" * 64))
    assert admin.list(SITES, NS) == []


@pytest.mark.hubsimonly  # replaces the hub's Site CRD with an older one and reads the requests the hub received
def test_a_site_admitted_before_cannot_make_the_controller_read_another_namespace(
    hub: HubSimulator,
    admin: kube.Client,
    older_crd: dict[str, Any],
    start_controller: Callable[..., Running],
    capsys: pytest.CaptureFixture[str],
) -> None:
    victim = {"metadata": {"name": VICTIM, "namespace": "kube-system"}, "data": {"x": base64.b64encode(b"v").decode()}}
    admin.create(kube.SECRETS, victim)
    names = {f"store-{kind}": secret_name for kind, secret_name in HOSTILE.items()}
    for name, secret_name in names.items():
        admin.create(SITES, _hostile(name, secret_name))
    admin.create(SITES, site_object("store-good"))
    seen_before = len(hub.requests)
    start_controller()
    wait_phase(admin, "store-good", site.Phase.READY)
    statuses = {name: wait_phase(admin, name, site.Phase.INVALID)["status"] for name in names}
    seen = [r.target for r in hub.requests[seen_before:]]
    secrets_read = [t for t in seen if "/secrets" in t or "/configmaps" in t]
    assert secrets_read, "the good Site's pull secret was read"
    assert all(t.startswith(f"/api/v1/namespaces/{NS}/") for t in secrets_read), secrets_read
    assert not [t for t in seen if "kube-system" in t or "%2f" in t.lower() or ".." in t]
    for status in statuses.values():
        assert status["reason"] == site.Reason.INVALID_SPEC
        assert [e["path"] for e in status["validation"]["errors"]] == [FIELD]
        validated = {c["type"]: c for c in status["conditions"]}["Validated"]
        assert validated["message"].startswith(FIELD)
        assert "not a Kubernetes name" in validated["message"] or "at most 253" in validated["message"]
    capsys.readouterr()
    assert main.main(["fleet", "why", "store-climb", "-n", NS, "--kubeconfig", str(hub.kubeconfig_path)]) == 0
    assert FIELD in capsys.readouterr().out


@pytest.mark.hubsimonly  # replaces the hub's Site CRD with an older one
def test_a_reporting_sites_name_is_a_label_value(
    hub: HubSimulator, admin: kube.Client, older_crd: dict[str, Any], start_controller: Callable[..., Running]
) -> None:
    current = older_crd
    current["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"] = {"type": "object"}
    admin.replace(kube.Ref(CRDS, site.CRD_NAME), current)
    long_name = "s" * 64
    admin.create(SITES, site_object(long_name))
    start_controller()
    status = wait_phase(admin, long_name, site.Phase.INVALID)["status"]
    assert [e["path"] for e in status["validation"]["errors"]] == ["metadata.name"]
    wait_for("no credential objects", lambda: admin.find(kube.Ref(kube.SECRETS, f"{long_name}-report", NS)) is None)


@pytest.mark.hubsimonly  # reads the requests the hub received
def test_the_controllers_client_sends_no_path_that_is_not_normal(
    hub: HubSimulator, admin: kube.Client, controller: Any
) -> None:
    """The last line behind `siteinput`: should a name reach the controller's client unchecked, nothing is sent."""
    before = len(hub.requests)
    for name in (HOSTILE["climb"], HOSTILE["inside"], "a/./b", "a//b"):
        with pytest.raises(errors.InternalError, match="not normal"):
            controller.client.find(kube.Ref(kube.SECRETS, name, NS))
    assert [r.target for r in hub.requests[before:] if "/secrets" in r.target] == []
    assert controller.client.find(kube.Ref(kube.SECRETS, "pull-secret", NS)) is not None


@pytest.mark.hubsimonly  # replaces the hub's Site CRD with an older one
def test_generated_hostile_names_make_the_controller_read_nothing_outside_the_namespace(
    hub: HubSimulator, admin: kube.Client, older_crd: dict[str, Any], start_controller: Callable[..., Running]
) -> None:
    """By class: 24 names the rule refuses (seed 30, from the generator of `test_site_input_rules`), as Secret and
    ConfigMap names, on a hub that admits them; each Site Invalid naming its field, no request outside `fleet`."""
    refused = [n for n in rules.NAMES if siteinput.object_name_problem(n) is not None and n][:24]
    for index, secret_name in enumerate(refused):
        obj = site_object(f"gen-{index}")
        if index % 2:
            obj["spec"]["files"]["pull-secret.json"] = {"configMapKeyRef": {"name": secret_name, "key": "k"}}
            field = "spec.files.pull-secret.json.configMapKeyRef.name"
        else:
            obj["spec"]["files"]["pull-secret.json"]["secretKeyRef"]["name"] = secret_name
            field = FIELD
        obj["metadata"]["annotations"] = {"test/field": field}
        admin.create(SITES, obj)
    seen_before = len(hub.requests)
    start_controller()
    for index in range(len(refused)):
        obj = wait_phase(admin, f"gen-{index}", site.Phase.INVALID)
        paths = [e["path"] for e in obj["status"]["validation"]["errors"]]
        assert paths == [obj["metadata"]["annotations"]["test/field"]], (refused[index], paths)
    seen = [r.target for r in hub.requests[seen_before:]]
    assert [
        t for t in seen if ("/secrets" in t or "/configmaps" in t) and not t.startswith(f"/api/v1/namespaces/{NS}/")
    ] == []
    assert [t for t in seen if "/secrets" in t or "/configmaps" in t] == [], "nothing read for a refused Site"

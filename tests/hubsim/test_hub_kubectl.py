"""Debian's kubectl (package kubernetes-client, 1.20) against the hub: apply, get with printer columns,
server-side apply, a refused write, and what that old client actually sends.

kubectl is looked for in `SNORELOC_KUBECTL`, then in `.cache/kubectl-debian/` (`make kubectl-debian` unpacks the
Debian package there without installing it; `.ci/run` does that before `make test`). The machine's own
`/usr/bin/kubectl` is not used: it is another build, and these tests are about the Debian one.
"""

from __future__ import annotations

import os
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from snoreloc_sim.hub.simulator import HubSimulator

from .conftest import GROUP, PLURAL, Call, widget, widget_crd

ROOT = Path(__file__).resolve().parents[2]
UNPACKED = ROOT / ".cache" / "kubectl-debian" / "usr" / "bin" / "kubectl"
KUBECTL = os.environ.get("SNORELOC_KUBECTL") or (str(UNPACKED) if UNPACKED.is_file() else None)
pytestmark = pytest.mark.skipif(
    KUBECTL is None, reason="Debian's kubectl is not unpacked: run `make kubectl-debian` (or set SNORELOC_KUBECTL)"
)


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def run_kubectl(kubeconfig: Path, home: Path, *args: str, stdin: str | None = None) -> Run:
    """Debian's kubectl with `kubeconfig`, a private HOME and discovery cache under `home`."""
    assert KUBECTL is not None
    argv = [KUBECTL, "--kubeconfig", str(kubeconfig), "--cache-dir", str(home / "cache"), *args]
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, timeout=60, check=False)
    return Run(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def kubectl(hub_sim: HubSimulator, tmp_path: Path) -> Any:
    """`kubectl(*args, stdin=None, kubeconfig=None)` with a private HOME and discovery cache."""

    def run(*args: str, stdin: str | None = None, kubeconfig: Path | None = None) -> Run:
        return run_kubectl(kubeconfig or hub_sim.kubeconfig_path, tmp_path, *args, stdin=stdin)

    return run


def _doc(obj: dict[str, Any]) -> str:
    return yaml.safe_dump(obj)


def _widget(name: str, size: int) -> str:
    body = widget(name, size=size)
    body["metadata"]["namespace"] = "default"
    return _doc(body)


def test_kubectl_is_debians_1_20(kubectl: Any) -> None:
    version = kubectl("version", "--client", "--short")
    assert version.code == 0 and "v1.20." in version.out


def test_apply_get_and_server_side_apply(hub_sim: HubSimulator, kubectl: Any) -> None:
    assert kubectl("apply", "-f", "-", stdin=_doc(widget_crd())).out.strip().endswith("created")
    assert kubectl("apply", "-f", "-", stdin=_widget("w1", 3)).out.strip() == f"widget.{GROUP}/w1 created"
    assert kubectl("apply", "-f", "-", stdin=_widget("w1", 3)).out.strip() == f"widget.{GROUP}/w1 unchanged"
    assert kubectl("apply", "-f", "-", stdin=_widget("w1", 4)).out.strip() == f"widget.{GROUP}/w1 configured"
    applied = kubectl("apply", "--server-side", "-f", "-", stdin=_widget("w2", 5))
    assert applied.out.strip() == f"widget.{GROUP}/w2 serverside-applied", applied.err

    table = kubectl("get", PLURAL)
    lines = table.out.splitlines()
    assert lines[0].split() == ["NAME", "PHASE", "SIZE", "AGE"]
    assert [line.split()[:2] for line in lines[1:]] == [["w1", "4"], ["w2", "5"]]  # no phase yet: the cell is empty
    assert kubectl("get", "wg", "-A").out.splitlines()[0].split() == ["NAMESPACE", "NAME", "PHASE", "SIZE", "AGE"]
    assert "w2" in kubectl("get", "gadgets").out  # the CRD's category

    sent = {(s.method, s.content_type) for s in hub_sim.requests if "/widgets/w1" in s.target}
    assert ("PATCH", "application/merge-patch+json") in sent  # client-side apply of a custom resource
    ssa = [s for s in hub_sim.requests if s.content_type == "application/apply-patch+yaml"]
    assert ssa and "fieldManager=kubectl" in ssa[0].target
    gets = [s for s in hub_sim.requests if s.method == "GET" and s.target.startswith(f"/apis/{GROUP}/v1/namespaces")]
    assert any(s.accept.startswith("application/json;as=Table;v=v1;g=meta.k8s.io") for s in gets)


def test_a_refused_write_shows_the_hubs_message(kubectl: Any) -> None:
    kubectl("apply", "-f", "-", stdin=_doc(widget_crd()))
    refused = kubectl("apply", "-f", "-", stdin=_widget("w0", 0))
    assert refused.code == 1
    assert 'The Widget "w0" is invalid: spec.size: Invalid value: 0' in refused.err


def test_a_service_account_token_is_refused_with_kubes_message(
    hub_sim: HubSimulator, kubectl: Any, raw: Call, tmp_path: Path
) -> None:
    raw("POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "viewer"}})
    token = raw("POST", "/api/v1/namespaces/default/serviceaccounts/viewer/token", {"spec": {}}).body["status"]["token"]
    config = yaml.safe_load(hub_sim.kubeconfig_path.read_text())
    config["users"][0]["user"]["token"] = token
    path = tmp_path / "viewer.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    refused = kubectl("get", "secrets", kubeconfig=path)
    assert refused.code == 1
    expected = (
        'Error from server (Forbidden): secrets is forbidden: User "system:serviceaccount:default:viewer" '
        'cannot list resource "secrets" in API group "" in the namespace "default"'
    )
    assert expected in refused.err
    assert kubectl("auth", "can-i", "list", "secrets", kubeconfig=path).out.strip() == "no"
    posing = kubectl("get", "secrets", "--as=kubernetes-admin", kubeconfig=path)
    assert (
        'users "kubernetes-admin" is forbidden: User "system:serviceaccount:default:viewer" cannot impersonate'
        in posing.err
    )


def test_apply_k_of_a_controllers_manifests_and_a_reapply(hub_sim: HubSimulator, kubectl: Any, tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    documents = {
        "crd.yaml": widget_crd(),
        "namespace.yaml": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "widgets-system"}},
        "account.yaml": {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "controller"}},
        "role.yaml": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "widget-controller"},
            "rules": [{"apiGroups": [GROUP], "resources": [PLURAL, f"{PLURAL}/status"], "verbs": ["*"]}],
        },
        "binding.yaml": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "widget-controller"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "widget-controller"},
            "subjects": [{"kind": "ServiceAccount", "name": "controller", "namespace": "widgets-system"}],
        },
        "deployment.yaml": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "controller", "labels": {"app": "widgets"}},
            "spec": {
                "selector": {"matchLabels": {"app": "widgets"}},
                "template": {
                    "metadata": {"labels": {"app": "widgets"}},
                    "spec": {"serviceAccountName": "controller", "containers": [{"name": "c", "image": "x:1"}]},
                },
            },
        },
    }
    for name, document in documents.items():
        (base / name).write_text(yaml.safe_dump(document))
    kustomization = {"namespace": "widgets-system", "resources": sorted(documents)}
    (base / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    first = kubectl("apply", "-k", str(base))
    assert first.code == 0, first.err
    assert first.out.count(" created") == len(documents)
    documents["deployment.yaml"]["metadata"]["labels"]["tier"] = "hub"
    (base / "deployment.yaml").write_text(yaml.safe_dump(documents["deployment.yaml"]))
    again = kubectl("apply", "-k", str(base))
    assert "deployment.apps/controller configured" in again.out, again.err
    assert again.out.count(" unchanged") == len(documents) - 1
    patches = [s for s in hub_sim.requests if s.method == "PATCH" and "/deployments/controller" in s.target]
    assert patches[-1].content_type == "application/strategic-merge-patch+json"  # a built-in kind


def test_get_watch_prints_later_objects_under_the_same_columns(hub_sim: HubSimulator, kubectl: Any, raw: Call) -> None:
    kubectl("apply", "-f", "-", stdin=_doc(widget_crd()))
    kubectl("apply", "-f", "-", stdin=_widget("w1", 1))
    path = f"/apis/{GROUP}/v1/namespaces/default/{PLURAL}"
    threading.Timer(1.0, lambda: raw("POST", path, widget("w2", size=2))).start()
    watched = kubectl("get", PLURAL, "-w", "--request-timeout=3s")
    lines = watched.out.splitlines()
    assert lines[0].split() == ["NAME", "PHASE", "SIZE", "AGE"]
    assert [line.split()[:2] for line in lines[1:]] == [["w1", "1"], ["w2", "2"]]  # one header, the same columns


def test_describe_shows_the_objects_events_and_get_events_prints_them(kubectl: Any, raw: Call) -> None:
    kubectl("apply", "-f", "-", stdin=_doc(widget_crd()))
    kubectl("apply", "-f", "-", stdin=_widget("w1", 1))
    uid = raw("GET", f"/apis/{GROUP}/v1/namespaces/default/{PLURAL}/w1").body["metadata"]["uid"]
    involved = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "name": "w1", "namespace": "default", "uid": uid}
    event = {"metadata": {"generateName": "w1-"}, "involvedObject": involved, "reason": "Reconciled",
             "message": "size 1", "type": "Normal", "source": {"component": "widget-controller"}}  # fmt: skip
    assert raw("POST", "/api/v1/namespaces/default/events", event).code == 201
    described = kubectl("describe", PLURAL, "w1").out
    assert "Reconciled" in described and "widget-controller" in described and "size 1" in described
    lines = kubectl("get", "events").out.splitlines()
    assert lines[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert lines[1].split()[1:] == ["Normal", "Reconciled", "widget/w1", "size", "1"]


def test_kubectl_as_a_service_account_shows_its_scope(kubectl: Any, raw: Call) -> None:
    kubectl("apply", "-f", "-", stdin=_doc(widget_crd()))
    raw("POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "site-w1"}})
    rule = {"apiGroups": [GROUP], "resources": [f"{PLURAL}/status"], "resourceNames": ["w1"], "verbs": ["get", "patch"]}
    raw(
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
        {"metadata": {"name": "site-w1"}, "rules": [rule]},
    )
    binding = {
        "metadata": {"name": "site-w1"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "site-w1"},
        "subjects": [{"kind": "ServiceAccount", "name": "site-w1", "namespace": "default"}],
    }
    raw("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", binding)
    who = "--as=system:serviceaccount:default:site-w1"
    assert kubectl("auth", "can-i", "patch", f"{PLURAL}/w1", "--subresource=status", who).out.strip() == "yes"
    assert kubectl("auth", "can-i", "patch", f"{PLURAL}/w2", "--subresource=status", who).out.strip() == "no"
    assert kubectl("auth", "can-i", "patch", f"{PLURAL}/w1", who).out.strip() == "no"
    refused = kubectl("get", PLURAL, who)
    assert 'User "system:serviceaccount:default:site-w1" cannot list resource' in refused.err

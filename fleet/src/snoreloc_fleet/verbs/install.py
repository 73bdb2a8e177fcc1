"""`snoreloc fleet install`: set up a hub, exactly as `kubectl apply -k` of the shipped `deploy/` directory does.

It reads the same files (the kustomization's resources, in its order), sets the address sites reach the hub at (and
its CA) in the `snoreloc-fleet-hub` ConfigMap and the controller's image when asked, and server-side applies each
object: re-running it changes nothing, and fields other managers set on these objects are kept. `--dry-run` has the
server check every object without storing any.
"""

from __future__ import annotations

import argparse
import copy
import pathlib
import sys
from collections.abc import Iterator
from typing import Any

import yaml

from snoreloc.siblings import errors, kube, safefile

HELP = "set up a hub: the Site CRD, the controller's RBAC and Deployment (what `kubectl apply -k deploy/` does)"
DEPLOY = pathlib.Path(__file__).resolve().parents[1] / "deploy"  # the package data beside `verbs/`
HUB_CONFIGMAP = "snoreloc-fleet-hub"
CONTROLLER = "snoreloc-fleet-controller"

KINDS: dict[tuple[str, str], kube.Resource] = {
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): kube.Resource(
        "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
    ),
    ("v1", "Namespace"): kube.Resource("", "v1", "namespaces", "Namespace", False),
    ("v1", "ServiceAccount"): kube.Resource("", "v1", "serviceaccounts", "ServiceAccount", True),
    ("v1", "ConfigMap"): kube.CONFIGMAPS,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): kube.Resource(
        "rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False
    ),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): kube.Resource(
        "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False
    ),
    ("apps/v1", "Deployment"): kube.Resource("apps", "v1", "deployments", "Deployment", True),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from snoreloc_fleet.hub import hubaccess  # noqa: PLC0415 (lazy: `snoreloc --help` builds this parser)

    hubaccess.add_arguments(parser, namespace=False)
    parser.add_argument("--hub-url", required=True, help="the address the sites' nodes reach this hub's API at")
    parser.add_argument("--hub-ca", metavar="FILE", help="the CA (PEM) that verifies --hub-url, if not the cluster's")
    parser.add_argument("--image", help="the controller's image (default: the one in deploy/deployment.yaml)")
    parser.add_argument("--dry-run", action="store_true", help="have the server check every object; store none")


def manifests() -> Iterator[dict[str, Any]]:
    """The objects of `deploy/`, in the kustomization's order."""
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text(encoding="utf-8"))
    for name in kustomization["resources"]:
        for document in yaml.safe_load_all((DEPLOY / name).read_text(encoding="utf-8")):
            if document:
                yield document


def customised(obj: dict[str, Any], hub_url: str, hub_ca: str | None, image: str | None) -> dict[str, Any]:
    """`obj` with the hub's address, CA and the controller's image set where they belong."""
    obj = copy.deepcopy(obj)
    name = obj["metadata"]["name"]
    if obj["kind"] == "ConfigMap" and name == HUB_CONFIGMAP:
        obj["data"] = {"url": hub_url, **({"ca.crt": hub_ca} if hub_ca else {})}
    if obj["kind"] == "Deployment" and name == CONTROLLER and image:
        obj["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return obj


def install(client: kube.Client, hub_url: str, hub_ca: str | None, image: str | None, *, dry_run: bool) -> list[str]:
    """Apply every object (server-side); one line per object. A dry run cannot check an object in a namespace the
    install itself would create (the server refuses it, as `kubectl apply --dry-run=server` does): it says so."""
    done, new_namespaces = [], set()
    for raw in manifests():
        obj = customised(raw, hub_url, hub_ca, image)
        resource = KINDS.get((obj["apiVersion"], obj["kind"]))
        if resource is None:
            raise errors.InternalError(f"deploy/ holds a kind install does not know: {obj['kind']}")
        meta = obj["metadata"]
        ref = kube.Ref(resource, meta["name"], meta.get("namespace", "") if resource.namespaced else "")
        if dry_run and obj["kind"] == "Namespace" and client.find(ref) is None:
            new_namespaces.add(ref.name)
        if ref.namespace in new_namespaces:
            done.append(f"{'not checked' if dry_run else 'applied'} (namespace {ref.namespace} is new): {ref}")
            continue
        client.apply(ref, obj, force=True, dry_run=dry_run)
        done.append(f"{'checked' if dry_run else 'applied'}: {ref}")
    return done


def read_ca(path: str) -> str:
    """The --hub-ca file by the bounded reader (a FIFO or a device refused at once, exit 65; a link judged by its
    target)."""
    try:
        return safefile.read(path, safefile.CA_BUNDLE, follow=True).decode("utf-8")
    except (safefile.Unfit, UnicodeDecodeError) as exc:
        raise errors.ConfigError(f"--hub-ca {path} cannot be used: {exc}", hint="Give a PEM file.") from None
    except OSError as exc:
        raise errors.UnavailableError(f"cannot read --hub-ca {path}: {exc.strerror}") from None


def run(args: argparse.Namespace) -> int:
    from snoreloc_fleet.hub import hubaccess  # noqa: PLC0415

    if not args.hub_url.startswith("https://"):
        raise errors.UsageError(f"--hub-url must be https://..., got {args.hub_url!r}")
    ca = read_ca(args.hub_ca) if args.hub_ca else None
    client = hubaccess.client(args)
    try:
        for line in install(client, args.hub_url, ca, args.image, dry_run=args.dry_run):
            sys.stdout.write(line + "\n")
    finally:
        client.close()
    return 0

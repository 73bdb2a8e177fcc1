"""The end state of every object a relocation manages, read from the simulator and normalised for comparison.

Two runs never produce identical bytes (fresh keys, serials, resourceVersions), so each object is reduced to what
the relocation promises: specs without server-managed metadata, the pull secret's decoded JSON, and for issued
certificates their names, issuer and whether the key matches. Counts of our secrets, mirror sets and routes are
kept too, so a duplicate (two API secrets, a second mirror set, a copied route) shows as a difference.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from cryptography.hazmat.primitives import serialization

from snoreloc.pki import certs
from snoreloc_sim.openshift import simulator

Obj = dict[str, Any]
CONFIG_NS = "openshift-config"
KEPT_META = ("name", "namespace", "labels", "annotations")
GENERATED = "openshift.io/host.generated"


def _list(sim: simulator.Simulator, key: str, namespace: str | None = None) -> list[Obj]:
    found: list[Obj] = sim.cluster.store.list(sim.cluster.types[key], namespace)
    return found


def _find(sim: simulator.Simulator, key: str, name: str, namespace: str = "") -> Obj | None:
    found: Obj | None = sim.cluster.store.find(sim.cluster.types[key], name, namespace)
    return found


def _without_pem(node: Any) -> Any:
    """PEM values (route certificates, minted per simulator) reduced to a marker: present, and which kind."""
    if isinstance(node, dict):
        return {key: _without_pem(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_without_pem(item) for item in node]
    if isinstance(node, str) and node.startswith("-----BEGIN "):
        return node.split("-----")[1]
    return node


def _spec(obj: Obj | None) -> Any:
    if obj is None:
        return None
    meta = obj.get("metadata", {})
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != GENERATED}
    kept = {k: meta[k] for k in KEPT_META if k in meta and k != "annotations"}
    return {"metadata": {**kept, "annotations": annotations}, "spec": _without_pem(obj.get("spec"))}


def _issuer(cert: Any) -> str:
    """The issuer's name without the epoch suffix OpenShift puts in signer names (`ingress-operator@<epoch>`)."""
    return re.sub(r"@\d+", "@<epoch>", cert.issuer.rfc4514_string())


def _tls(obj: Obj) -> Any:
    data = obj.get("data") or {}
    if "tls.crt" not in data:
        return {"type": obj.get("type"), "keys": sorted(data)}
    chain = base64.b64decode(data["tls.crt"])
    leaf = certs.parse_chain(chain)[0]
    key = serialization.load_pem_private_key(base64.b64decode(data["tls.key"]), password=None)
    matches = key.public_key().public_numbers() == leaf.public_key().public_numbers()  # type: ignore[union-attr]
    return {"sans": sorted(certs.sans(leaf)), "issuer": _issuer(leaf), "key_matches": matches}


def _ours(sim: simulator.Simulator) -> dict[str, Any]:
    secrets = [s for s in _list(sim, "secrets") if s["metadata"]["name"].startswith("snoreloc-")]
    return {f"{s['metadata']['namespace']}/{s['metadata']['name']}": _tls(s) for s in secrets}


def _pull_secret(sim: simulator.Simulator) -> Any:
    secret = _find(sim, "secrets", "pull-secret", CONFIG_NS) or {}
    return json.loads(base64.b64decode((secret.get("data") or {}).get(".dockerconfigjson", "e30=")))


def _trusted_ca(sim: simulator.Simulator) -> Any:
    image = _find(sim, "images.config.openshift.io", "cluster") or {}
    name = ((image.get("spec") or {}).get("additionalTrustedCA") or {}).get("name")
    found = _find(sim, "configmaps", name, CONFIG_NS) if name else None
    return found.get("data") if found else None


def _named(sim: simulator.Simulator, key: str) -> dict[str, Any]:
    if key not in sim.cluster.types:
        return {}
    return {o["metadata"]["name"]: o.get("spec") for o in _list(sim, key)}


def routes(sim: simulator.Simulator) -> dict[str, Any]:
    """Every route by namespace/name: its spec (host, TLS, backend)."""
    found = _list(sim, "routes.route.openshift.io")
    return {f"{r['metadata']['namespace']}/{r['metadata']['name']}": _spec(r) for r in found}


def managed(sim: simulator.Simulator) -> dict[str, Any]:
    """Everything the relocation manages, normalised; two correct relocations of one seed compare equal."""
    return {
        "apiserver": _spec(_find(sim, "apiservers.config.openshift.io", "cluster")),
        "ingress": _spec(_find(sim, "ingresses.config.openshift.io", "cluster")),
        "ingresscontroller": _spec(
            _find(sim, "ingresscontrollers.operator.openshift.io", "default", "openshift-ingress-operator")
        ),
        "image": _spec(_find(sim, "images.config.openshift.io", "cluster")),
        "pull_secret": _pull_secret(sim),
        "trusted_ca": _trusted_ca(sim),
        "idms": _named(sim, "imagedigestmirrorsets.config.openshift.io"),
        "itms": _named(sim, "imagetagmirrorsets.config.openshift.io"),
        "icsp": _named(sim, "imagecontentsourcepolicies.operator.openshift.io"),
        "our_secrets": _ours(sim),
        "routes": routes(sim),
    }


def differences(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """The top-level keys (and route names) that differ, for a readable assertion message."""
    found = [key for key in expected if key != "routes" and expected[key] != actual.get(key)]
    exp_routes, act_routes = expected.get("routes", {}), actual.get("routes", {})
    found += [
        f"route {name}"
        for name in sorted(set(exp_routes) | set(act_routes))
        if exp_routes.get(name) != act_routes.get(name)
    ]
    return found

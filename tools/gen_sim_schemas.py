#!/usr/bin/env python3
"""Turn the real OpenShift CRD manifests into the compact JSON schemas the simulator validates against.

The simulator must judge objects the way kube-apiserver would with the real CRDs installed, so it reads the
upstream manifests rather than hand-written schemas. The manifests are large YAML with prose descriptions; the
simulator needs only the served version's names, scope, subresources and the schema without the prose. Output is
deterministic (sorted keys, fixed indent) so re-running the generator over the same input changes nothing.

Usage: tools/gen_sim_schemas.py [SRC_DIR [OUT_DIR]]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SRC = REPO_ROOT.parent / "shared" / "openshift-crds"
DEFAULT_OUT = REPO_ROOT / "sim" / "src" / "snoreloc_sim" / "openshift" / "crds"


def strip_descriptions(node: Any) -> Any:
    """Drop every `description` key that documents a schema node (a property *named* description is kept)."""
    if isinstance(node, list):
        return [strip_descriptions(item) for item in node]
    if not isinstance(node, dict):
        return node
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key == "description" and isinstance(value, str):
            continue
        if key in ("properties", "patternProperties", "definitions"):
            result[key] = {name: strip_descriptions(sub) for name, sub in value.items()}
        elif key in ("default", "enum", "example"):
            result[key] = value  # data, not schema: a default object may well have a "description" key
        else:
            result[key] = strip_descriptions(value)
    return result


def served_version(crd: dict[str, Any]) -> dict[str, Any]:
    """The version that is both served and the storage version."""
    for version in crd["spec"]["versions"]:
        if version.get("served") and version.get("storage"):
            return dict(version)
    raise ValueError(f"{crd['metadata']['name']}: no served storage version")


def subresources(version: dict[str, Any]) -> list[str]:
    present = version.get("subresources") or {}
    return [name for name in ("status", "scale") if name in present]


def convert(crd: dict[str, Any]) -> dict[str, Any]:
    """One CRD manifest -> the simulator's summary of it."""
    spec = crd["spec"]
    names = spec["names"]
    version = served_version(crd)
    return {
        "group": spec["group"],
        "version": version["name"],
        "plural": names["plural"],
        "singular": names.get("singular", names["kind"].lower()),
        "kind": names["kind"],
        "listKind": names.get("listKind", names["kind"] + "List"),
        "namespaced": spec["scope"] == "Namespaced",
        "shortNames": list(names.get("shortNames") or []),
        "subresources": subresources(version),
        "schema": strip_descriptions(version["schema"]["openAPIV3Schema"]),
    }


def render(summary: dict[str, Any]) -> str:
    return json.dumps(summary, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def generate(src: Path, out: Path) -> list[Path]:
    """Write `<plural>.<group>.json` for every `*.yaml` CRD in `src`; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for manifest in sorted(src.glob("*.yaml")):
        crd = yaml.safe_load(manifest.read_text(encoding="utf-8"))
        if crd.get("kind") != "CustomResourceDefinition":
            continue
        summary = convert(crd)
        target = out / f"{summary['plural']}.{summary['group']}.json"
        target.write_text(render(summary), encoding="utf-8")
        written.append(target)
    return written


def main(argv: list[str]) -> int:
    src = Path(argv[0]) if argv else DEFAULT_SRC
    out = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    if not src.is_dir():
        print(f"gen_sim_schemas: source directory {src} not found", file=sys.stderr)
        return 66
    for path in generate(src, out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

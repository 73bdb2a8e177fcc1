"""Rendered sites as hub objects: one `Site` per inventory row, its files in Secrets it names, never inline.

`snoreloc fleet render --sites DIR` writes `DIR/sites.yaml` (the Sites: safe to review, diff and commit) and
`DIR/secrets.yaml` (mode 0600: the files, in Secrets), for `kubectl apply -f`. A Site's `spec.siteConfig` is the
rendered site-config's spec, its labels the template's; each `{file: NAME}` becomes a `spec.files` entry with a
`secretKeyRef`: the site's own files in the Secret `<site>-files`, the files shared by the whole fleet (next to
the template) once in the Secret `<shared>`. Every file goes in a Secret, certificates too: the hub decides
nothing from a file's name, and a key in a Secret is never shown by `kubectl get sites`.
"""

from __future__ import annotations

import base64
import pathlib
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from snoreloc_fleet import site
from snoreloc_fleet.ops import template

_KEY_UNSAFE = re.compile(r"[^-._a-zA-Z0-9]")


def secret_key(name: str) -> str:
    """A Secret data key for a file name (`manifests/00-ns.yaml` -> `manifests.00-ns.yaml`)."""
    return _KEY_UNSAFE.sub(".", name.replace("/", "."))


def _files(ref: template.FileRef) -> Iterator[tuple[str, pathlib.Path]]:
    """(name under the site-config's directory, source file) for a file, or every file of a directory."""
    if not ref.origin.is_dir():
        yield ref.ref, ref.origin
        return
    for path in sorted(p for p in ref.origin.rglob("*") if p.is_file()):
        yield f"{ref.ref.rstrip('/')}/{path.relative_to(ref.origin).as_posix()}", path


def _secret(name: str, namespace: str, files: Iterable[tuple[str, pathlib.Path]]) -> dict[str, Any]:
    data = {secret_key(n): base64.b64encode(p.read_bytes()).decode("ascii") for n, p in files}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": {f"{site.GROUP}/input": "true"}},
        "type": "Opaque",
        "data": dict(sorted(data.items())),
    }


def site_object(rendered: template.Rendered, namespace: str, shared: str) -> dict[str, Any]:
    data = rendered.data if isinstance(rendered.data, dict) else {}
    labels = dict((data.get("metadata") or {}).get("labels") or {})
    files: dict[str, Any] = {}
    for ref in rendered.files:
        holder = f"{rendered.row.name}-files" if ref.per_site else shared
        for name, _ in _files(ref):
            files[name] = {"secretKeyRef": {"name": holder, "key": secret_key(name)}}
    spec: dict[str, Any] = {"siteConfig": data.get("spec") or {}}
    if files:
        spec["files"] = dict(sorted(files.items()))
    return {
        "apiVersion": site.API_VERSION,
        "kind": site.KIND,
        "metadata": {"name": rendered.row.name, "namespace": namespace, "labels": labels},
        "spec": spec,
    }


def objects(
    sites: Sequence[template.Rendered], namespace: str, shared: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(Sites, Secrets) for rendered sites: one Secret per site with files of its own, one for the shared files."""
    site_objects = [site_object(s, namespace, shared) for s in sites]
    secrets = []
    common: dict[str, pathlib.Path] = {}
    for rendered in sites:
        own = [f for ref in rendered.files if ref.per_site for f in _files(ref)]
        if own:
            secrets.append(_secret(f"{rendered.row.name}-files", namespace, own))
        common.update({n: p for ref in rendered.files if not ref.per_site for n, p in _files(ref)})
    if common:
        secrets.insert(0, _secret(shared, namespace, sorted(common.items())))
    return site_objects, secrets

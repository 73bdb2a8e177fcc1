"""`spec.extraManifests`: the site's own Kubernetes manifests, read and checked offline.

What can be known without a cluster is checked here, once, so that `validate` refuses it: every file parses (with
the site-config's own YAML limits: size, depth, aliases, node budget, no custom tags), every document is an object
with apiVersion, kind and metadata.name, no object is given twice, a kind whose scope is known has a namespace
exactly when it is namespaced (snoreloc never defaults one: a ConfigMap without a namespace is refused rather than
put in `default`), and secret material sits only in Secret manifests. A Secret's values are registered for
redaction as soon as they are read, so its data never reaches a log, a plan or an error. What only the cluster can
say (a kind it does not serve, the scope of a custom kind, a schema error) is asked of it with a server-side dry
run in preflight (`steps.cluster.manifests`).

Files resolve relative to the site-config's directory through `files`, so the same site-config works from the
stick and from the saved copy that discovery makes of it (which carries these files too).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from snoreloc import redact
from snoreloc.siteconfig import files, findings, yamlpos

MAX_MANIFEST_FILES = 256
SUFFIXES = (".yaml", ".yml", ".json")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.:]*[a-z0-9])?$")  # object names (subdomains; RBAC names also allow ':')
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

# The scope of kinds whose scope is fixed and known, by (API group, kind). Other kinds are looked up in the
# cluster's discovery during preflight.
_CLUSTER_GROUPS = frozenset({"config.openshift.io", "machineconfiguration.openshift.io"})
CLUSTER_SCOPED = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("storage.k8s.io", "StorageClass"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("operator.openshift.io", "ImageContentSourcePolicy"),
        ("machineconfiguration.openshift.io", "MachineConfigPool"),
    }
)
NAMESPACED = frozenset(
    {
        ("", "ConfigMap"),
        ("", "Secret"),
        ("", "Service"),
        ("", "ServiceAccount"),
        ("", "PersistentVolumeClaim"),
        ("", "Pod"),
        ("apps", "Deployment"),
        ("apps", "DaemonSet"),
        ("apps", "StatefulSet"),
        ("batch", "Job"),
        ("batch", "CronJob"),
        ("rbac.authorization.k8s.io", "Role"),
        ("rbac.authorization.k8s.io", "RoleBinding"),
        ("networking.k8s.io", "NetworkPolicy"),
        ("operators.coreos.com", "Subscription"),
        ("operators.coreos.com", "OperatorGroup"),
        ("operators.coreos.com", "CatalogSource"),
        ("route.openshift.io", "Route"),
        ("operator.openshift.io", "IngressController"),
    }
)


@dataclass(frozen=True)
class Manifest:
    """One document of `spec.extraManifests`: where it came from and the object, checked offline. The object is
    kept out of `repr` (a Secret's data) and so hashed whole in fingerprints."""

    source: str  # the file, relative to the site-config's directory
    index: int  # the document's place in the file, from 0
    line: int  # where the document starts in the file
    obj: Mapping[str, Any] = field(repr=False)

    @property
    def where(self) -> str:
        return f"{self.source} document {self.index + 1} (line {self.line})"

    @property
    def api_version(self) -> str:
        return str(self.obj["apiVersion"])

    @property
    def kind(self) -> str:
        return str(self.obj["kind"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace") or "")

    @property
    def label(self) -> str:
        """`Kind namespace/name`, as the rest of snoreloc names objects."""
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def scope(api_version: str, kind: str) -> bool | None:
    """True: namespaced; False: cluster-scoped; None: not known offline (the cluster's discovery says)."""
    key = (group_of(api_version), kind)
    if key in NAMESPACED:
        return True
    if key in CLUSTER_SCOPED or key[0] in _CLUSTER_GROUPS:
        return False
    return None


def identity(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """What makes two documents the same object: API group, kind, namespace, name (not the version)."""
    meta = obj["metadata"]
    return group_of(obj["apiVersion"]), obj["kind"], meta.get("namespace") or "", meta["name"]


@dataclass(frozen=True)
class Problem:
    """A finding about one manifest file, reported on the site-config line `path` names."""

    path: findings.Path
    message: str


class _Reader:
    def __init__(self, base_dir: str, at: findings.Path) -> None:
        self.base_dir = base_dir
        self.at = at
        self.problems: list[Problem] = []
        self.manifests: list[Manifest] = []
        self.seen: dict[tuple[str, str, str, str], Manifest] = {}

    def problem(self, at: findings.Path, message: str) -> None:
        self.problems.append(Problem(at, message))


def directory_files(base_dir: str, ref: str) -> list[str]:
    """The manifest files of directory `ref` under `base_dir` (relative references, in name order); raises
    files.RefError when the directory cannot be used."""
    real = files.resolve(base_dir, ref)
    if not os.path.isdir(real):
        raise files.RefError(f"'{ref}' is not a directory")
    try:
        names = sorted(os.listdir(real))
    except OSError as exc:
        raise files.RefError(f"'{ref}' cannot be listed: {exc.strerror}") from None
    found = [name for name in names if name.endswith(SUFFIXES) and not name.startswith(".")]
    return [f"{ref.rstrip('/')}/{name}" for name in found]


def references(spec_value: Any, base_dir: str) -> list[str]:
    """The files `spec.extraManifests` names (listing its directory under `base_dir`); empty when unusable."""
    if not isinstance(spec_value, Mapping):
        return []
    if isinstance(spec_value.get("files"), list):
        return [ref for ref in spec_value["files"] if isinstance(ref, str)]
    if isinstance(spec_value.get("directory"), str):
        try:
            return directory_files(base_dir, spec_value["directory"])
        except files.RefError:
            return []
    return []


def check(spec_value: Mapping[str, Any], base_dir: str, at: findings.Path) -> tuple[list[Manifest], list[Problem]]:
    """Read and check every manifest `spec.extraManifests` names; the manifests, and the problems found."""
    reader = _Reader(base_dir, at)
    for where, ref in _files(reader, spec_value):
        _file(reader, where, ref)
    return reader.manifests, reader.problems


def _files(reader: _Reader, spec_value: Mapping[str, Any]) -> Iterator[tuple[findings.Path, str]]:
    if "files" in spec_value:
        for index, ref in enumerate(spec_value["files"]):
            yield (*reader.at, "files", index), ref
        return
    where = (*reader.at, "directory")
    try:
        found = directory_files(reader.base_dir, spec_value["directory"])
    except files.RefError as exc:
        reader.problem(where, str(exc))
        return
    if not found:
        reader.problem(where, f"holds no {', '.join(SUFFIXES)} file")
    if len(found) > MAX_MANIFEST_FILES:
        reader.problem(where, f"holds {len(found)} manifest files; the limit is {MAX_MANIFEST_FILES}")
        return
    yield from ((where, ref) for ref in found)


def _file(reader: _Reader, where: findings.Path, ref: str) -> None:
    try:
        raw = files.read(reader.base_dir, ref).content
    except files.RefError as exc:
        reader.problem(where, str(exc))
        return
    try:
        documents = yamlpos.load_all(raw)
    except yamlpos.YamlError as exc:
        at_line = f" line {exc.line}:" if exc.line else ""
        reader.problem(where, f"{ref}:{at_line} {exc.message}")
        return
    if not documents:
        reader.problem(where, f"{ref}: holds no document")
    for index, document in documents:
        line = document.marks[()].line
        found = [f"{problem.message}" for problem, _mark in document.issues]
        found += document_problems(document.data)
        if found:
            reader.problem(where, f"{ref} document {index + 1} (line {line}): {'; '.join(found)}")
            continue
        _accept(reader, where, Manifest(ref, index, line, document.data))


def _accept(reader: _Reader, where: findings.Path, manifest: Manifest) -> None:
    key = identity(manifest.obj)
    first = reader.seen.get(key)
    if first is not None:
        reader.problem(where, f"{manifest.where}: {manifest.label} is also given by {first.where}; give it once")
        return
    reader.seen[key] = manifest
    if manifest.kind == "Secret" and manifest.api_version == "v1":
        _register_secret(manifest.obj)
    elif _holds_secret(manifest.obj):
        reader.problem(
            where,
            f"{manifest.where}: {manifest.label} holds what looks like a secret (a private key, a password or token "
            "field, or a URL with a password); put it in a Secret manifest, whose data snoreloc never shows",
        )
        return
    reader.manifests.append(manifest)


def document_problems(doc: Any) -> list[str]:
    """Why a document cannot be applied as an object, checked offline (empty when it can)."""
    if not isinstance(doc, Mapping):
        return ["is not an object (a mapping with apiVersion, kind and metadata)"]
    problems = [f"{name} is missing or not a string" for name in ("apiVersion", "kind") if not _text(doc.get(name))]
    meta = doc.get("metadata")
    if not isinstance(meta, Mapping):
        return [*problems, "metadata is missing or not an object"]
    problems += _name_problems(meta)
    if not problems:
        problems += _scope_problems(str(doc["apiVersion"]), str(doc["kind"]), meta)
    return problems


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _name_problems(meta: Mapping[str, Any]) -> list[str]:
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not _text(name):
        return ["metadata.name is missing (generateName cannot be applied)"]
    problems = []
    if len(name) > 253 or not _NAME.match(name):
        problems.append("metadata.name must be lowercase letters, digits, '-' and '.' (at most 253)")
    if namespace is not None and (not isinstance(namespace, str) or len(namespace) > 63 or not _LABEL.match(namespace)):
        problems.append("metadata.namespace must be a DNS label (lowercase letters, digits and '-')")
    return problems


def _scope_problems(api_version: str, kind: str, meta: Mapping[str, Any]) -> list[str]:
    namespaced = scope(api_version, kind)
    if namespaced is True and not meta.get("namespace"):
        return [f"{kind} is namespaced: give metadata.namespace (snoreloc does not default it)"]
    if namespaced is False and meta.get("namespace"):
        return [f"{kind} is cluster-scoped: remove metadata.namespace"]
    return []


def _holds_secret(obj: Mapping[str, Any]) -> bool:
    """Whether `redact`'s patterns (the one definition of what a secret looks like) would mask part of it."""
    text = json.dumps(obj, indent=1)
    return redact.redact(text) != text


def _register_secret(obj: Mapping[str, Any]) -> None:
    for section in ("data", "stringData"):
        values = obj.get(section)
        if isinstance(values, Mapping):
            redact.register_fields(values, frozenset(str(key) for key in values))

"""The rendered fleet as a tree to commit to Git for Argo CD: `fleet render --git DIR`.

```
DIR/kustomization.yaml          resources: _shared/ and every site's directory
DIR/_shared/secrets.yaml.age    the files next to the template, in their Secret, sealed for the hub (age)
DIR/_shared/kustomization.yaml  resources: none (externalsecret.yaml with --secret-store)
DIR/<site>/kustomization.yaml   resources: site.yaml (and externalsecret.yaml with --secret-store)
DIR/<site>/site.yaml            the Site, as `render --sites` makes it, annotated with its medium's digest
DIR/<site>/secrets.yaml.age     the site's own files, in their Secret, sealed for the hub (age)
```

No secret is ever in the tree in plain text: each Secret `render --sites` would write to `secrets.yaml` (0600) is
sealed with `age` for the hub's recipients (`render.sealing`), or, with `--secret-store NAME`, replaced by an
`ExternalSecret` (External Secrets Operator) naming where the secret store keeps it. `kubectl kustomize DIR` builds
the Sites (and the ExternalSecrets); the hub's Argo CD plugin (`deploy/argocd/cmp-plugin.yaml`) adds the unsealed
Secrets. `_shared` can never be a site's name (a DNS label has no `_`).

Each Site carries `fleet.snoreloc.io/medium-digest`: the digest of the medium it and its files make, computed by the
controller's one definition (`hub.sitemedium.digest`) while render holds the files in plain text, so `fleet diff`
can say whose stick a change invalidates without the hub's key.

Writing is as safe as `--out`'s: a directory (or `kustomization.yaml`) that `render --git` did not write is never
replaced; each site's directory is written fresh beside its place and renamed over it; a site directory of an earlier
render whose row is gone is removed, so the commit shows the site removed.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from snoreloc.siblings import errors, safefile
from snoreloc_fleet.hub import sitemedium
from snoreloc_fleet.render import sites as hub_objects
from snoreloc_fleet.render import template, tree
from snoreloc_fleet.resource import site

HEADER = "# Rendered by `snoreloc fleet render --git`"
KUSTOMIZATION = "kustomization.yaml"
SITE_FILE = "site.yaml"
SEALED = "secrets.yaml.age"
EXTERNAL = "externalsecret.yaml"
SHARED_DIR = "_shared"
DIGEST_ANNOTATION = f"{site.GROUP}/medium-digest"
EXTERNAL_SECRETS_API = "external-secrets.io/v1beta1"
_NOTE = "# Render again rather than editing by hand; secrets are sealed for the hub (docs/fleet.md).\n"

SEALED_MARK = "# sealed: "
_EARLIER_KIND = safefile.Kind("sealed file of an earlier render", 64 * 1024 * 1024)


@dataclass(frozen=True)
class Sealing:
    """How the tree's Secrets are sealed: `seal` (plaintext YAML -> armored age text) for `recipients`, and what an
    earlier render left in the tree (directory -> (mark, sealed text)). age is randomised, so sealing the same
    Secret twice gives two different files; a Secret whose plaintext and recipients are those of the earlier render
    (its mark: sha256 over both, kept as a comment in the directory's kustomization, no more revealing than the
    medium digest, which also hashes the files) keeps its sealed file, and the commit shows only what changed."""

    seal: Callable[[str], str]
    recipients: tuple[str, ...]
    earlier: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    def mark(self, plaintext: str) -> str:
        hasher = hashlib.sha256()
        for recipient in sorted(self.recipients):
            hasher.update(f"{recipient}\0".encode())
        hasher.update(plaintext.encode())
        return "sha256:" + hasher.hexdigest()

    def sealed(self, directory: str, plaintext: str) -> tuple[str, str]:
        """(mark, sealed text) for a directory's Secret: the earlier sealed file when its mark is the same."""
        mark = self.mark(plaintext)
        before = self.earlier.get(directory)
        if before is not None and before[0] == mark:
            return mark, before[1]
        return mark, self.seal(plaintext)


@dataclass(frozen=True)
class Tree:
    """The files of the tree, by path relative to its root, and the directories holding them, in order."""

    files: Mapping[str, str]
    directories: Sequence[str] = field(default_factory=tuple)


def _yaml(document: Any) -> str:
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True)


def _kustomization(resources: Sequence[str], mark: str | None = None) -> str:
    body = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": list(resources)}
    sealed = f"{SEALED_MARK}{mark}\n" if mark else ""
    return f"{HEADER}.\n{_NOTE}{sealed}{_yaml(body)}"


def _external(secret: Mapping[str, Any], store: str) -> dict[str, Any]:
    """An ExternalSecret making `secret` from the store: each key at `<namespace>/<secret>`, property `<key>`."""
    meta = secret["metadata"]
    remote = f"{meta['namespace']}/{meta['name']}"
    return {
        "apiVersion": EXTERNAL_SECRETS_API,
        "kind": "ExternalSecret",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": dict(meta.get("labels") or {})},
        "spec": {
            "secretStoreRef": {"kind": "ClusterSecretStore", "name": store},
            "target": {"name": meta["name"], "creationPolicy": "Owner"},
            "data": [
                {"secretKey": key, "remoteRef": {"key": remote, "property": key}} for key in sorted(secret["data"])
            ],
        },
    }


def _secret_files(
    directory: str, secret: Mapping[str, Any] | None, sealing: Sealing | None, store: str | None
) -> tuple[dict[str, str], str | None]:
    """The files holding one directory's Secret (sealed, or an ExternalSecret; never the Secret itself), and the
    sealed file's mark."""
    if secret is None:
        return {}, None
    if store is not None:
        return {f"{directory}/{EXTERNAL}": _yaml(_external(secret, store))}, None
    assert sealing is not None  # build() requires one of the two
    mark, text = sealing.sealed(directory, _yaml(secret))
    return {f"{directory}/{SEALED}": text}, mark


def _medium_files(rendered: template.Rendered) -> dict[str, bytes]:
    return {name: data for ref in rendered.files for name, data in ref.contents}


def build(
    sites: Sequence[template.Rendered],
    namespace: str,
    shared: str,
    *,
    sealing: Sealing | None = None,
    store: str | None = None,
) -> Tree:
    """The tree for rendered sites, in memory; every secret sealed (`sealing`) or referenced in `store`."""
    if (sealing is None) == (store is None):
        raise errors.UsageError("the tree's secrets are either sealed (age) or referenced (--secret-store): one")
    site_objects, secrets = hub_objects.objects(sites, namespace, shared)
    by_name = {s["metadata"]["name"]: s for s in secrets}
    files: dict[str, str] = {}
    directories: list[str] = []
    root: list[str] = []
    shared_files, shared_mark = _secret_files(SHARED_DIR, by_name.get(shared), sealing, store)
    if shared_files:  # its kustomization marks it as ours (and lists the ExternalSecret, if any)
        files.update(shared_files)
        files[f"{SHARED_DIR}/{KUSTOMIZATION}"] = _kustomization([EXTERNAL] if store is not None else [], shared_mark)
        directories.append(SHARED_DIR)
        root.append(SHARED_DIR)
    for rendered, obj in zip(sites, site_objects, strict=True):
        name = rendered.row.name
        digest = sitemedium.digest(obj, _medium_files(rendered))
        obj["metadata"].setdefault("annotations", {})[DIGEST_ANNOTATION] = digest  # beside the inventory cells
        own, mark = _secret_files(name, by_name.get(f"{name}-files"), sealing, store)
        files.update(own)
        files[f"{name}/{SITE_FILE}"] = _yaml(obj)
        resources = [SITE_FILE, *(EXTERNAL for p in own if p.endswith(EXTERNAL))]
        files[f"{name}/{KUSTOMIZATION}"] = _kustomization(resources, mark)
        directories.append(name)
        root.append(name)
    files[KUSTOMIZATION] = _kustomization(root)
    return Tree(files, tuple(directories))


# --- on disk ---------------------------------------------------------------------------------------------------------


def ours(directory: pathlib.Path) -> bool:
    """Whether `directory` holds a `kustomization.yaml` that `render --git` wrote."""
    try:
        head = safefile.read_head(directory / KUSTOMIZATION, len(HEADER))
    except (OSError, safefile.Unfit):
        return False
    return head.decode("utf-8", "replace") == HEADER


def _check_targets(out_dir: pathlib.Path, names: Iterable[str]) -> None:
    """Refuse, before writing anything, a tree or a site directory that `render --git` did not write."""
    entries = [e for e in os.listdir(out_dir) if not e.startswith(".")]
    if entries and not ours(out_dir):
        raise errors.UsageError(
            f"{out_dir} holds files and no kustomization.yaml of `snoreloc fleet render --git`; nothing was written",
            hint="Give an empty or new directory, or the tree an earlier `render --git` wrote.",
        )
    for name in names:
        try:
            info = os.lstat(out_dir / name)
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(info.st_mode) or not ours(out_dir / name):
            raise errors.PermissionDenied(
                f"refusing to render {name} into {out_dir / name}: it was not written by `render --git`; "
                "nothing was written",
                hint="Remove what is at that path, or choose another directory.",
            )


def _write_directory(out_dir: pathlib.Path, name: str, files: Mapping[str, str]) -> None:
    staging = pathlib.Path(tempfile.mkdtemp(dir=out_dir, prefix=f".{name}.rendering."))
    try:
        for path, text in files.items():
            safefile.create(staging / path, text, mode=0o644)  # sealed or public: nothing here is a plain secret
        staging.chmod(0o755)  # a checkout's directory: Git keeps no mode but the executable bit
        tree.replace(staging, out_dir / name)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _remove_gone(out_dir: pathlib.Path, keep: set[str]) -> list[str]:
    """Site directories of an earlier render whose row is gone: removed (each proven ours first)."""
    gone = []
    for entry in sorted(os.listdir(out_dir)):
        path = out_dir / entry
        if entry.startswith(".") or entry in keep or path.is_symlink() or not path.is_dir() or not ours(path):
            continue
        aside = pathlib.Path(tempfile.mkdtemp(dir=out_dir, prefix=f".{entry}.gone."))
        os.rename(path, aside / "site")
        shutil.rmtree(aside)
        gone.append(entry)
    return gone


def earlier_sealed(out_dir: pathlib.Path, names: Iterable[str]) -> dict[str, tuple[str, str]]:
    """What an earlier render sealed in `out_dir`, by directory: (mark, sealed text); directories that are not ours,
    or carry no mark, are left out (their Secrets are sealed anew)."""
    found = {}
    for name in [SHARED_DIR, *names]:
        directory = out_dir / name
        if not ours(directory):
            continue
        try:
            text = safefile.read(directory / KUSTOMIZATION, _EARLIER_KIND).decode("utf-8", "replace")
            sealed = safefile.read(directory / SEALED, _EARLIER_KIND).decode("ascii")
        except (OSError, safefile.Unfit, UnicodeDecodeError):
            continue
        marks = [line[len(SEALED_MARK) :].strip() for line in text.splitlines() if line.startswith(SEALED_MARK)]
        if marks:
            found[name] = (marks[0], sealed)
    return found


def prepare(out_dir: pathlib.Path, names: Sequence[str], inputs: Sequence[pathlib.Path]) -> None:
    """Check `out_dir` as `--out` is checked, and every directory the tree will replace, before anything is sealed
    or written (refusals: 64, 77)."""
    tree.prepare_out(out_dir, inputs)
    safefile.check(out_dir / KUSTOMIZATION, inputs=tuple(inputs), shared_dir=safefile.NAMED_OUTPUT)
    _check_targets(out_dir, [SHARED_DIR, *names])


def write(out_dir: pathlib.Path, built: Tree, inputs: Sequence[pathlib.Path]) -> list[str]:
    """Write the tree into `out_dir` (checked again); the site directories removed as gone."""
    prepare(out_dir, built.directories, inputs)
    # The root first: it marks the directory as a tree of ours, should writing stop half way.
    safefile.write(out_dir / KUSTOMIZATION, built.files[KUSTOMIZATION], mode=0o644, shared_dir=safefile.NAMED_OUTPUT)
    for name in built.directories:
        prefix = f"{name}/"
        _write_directory(out_dir, name, {p[len(prefix) :]: t for p, t in built.files.items() if p.startswith(prefix)})
    return _remove_gone(out_dir, set(built.directories))

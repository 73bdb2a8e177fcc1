"""The medium a Site describes: its site-config file and referenced files, checked with the agent's own rules.

The controller and `fleet make-media` build the same tree from a Site: `site-config.yaml` is the Site's
`spec.siteConfig` under the site-config's apiVersion and kind, named after the Site, and each `spec.files` entry is
read from its Secret or ConfigMap. The tree is laid out in a private directory and checked by
`snoreloc.siteconfig.loader.validate`, exactly what `snoreloc validate` runs on that file (lines are the rendered
file's); its digest is `snoreloc.siteconfig.medium.digest_of`, exactly what the node computes from its copy.

The hub adds one rule of its own, because a Site lives in etcd and is read by anyone who may read Sites: secret
material (a pull secret or private key given inline, a proxy URL carrying credentials) is refused; it belongs in a
Secret named through `spec.files`. Where secrets sit is the agent's schema's own list (`schema.SECRET_PATHS`).
"""

from __future__ import annotations

import base64
import binascii
import pathlib
import tempfile
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from snoreloc.siblings import errors, findings, kube, loader, medium, redact, safefile, schema
from snoreloc_fleet.hub import adminaccess
from snoreloc_fleet.resource import delivery, site, siteinput

SITE_CONFIG_API_VERSION = "snoreloc.io/v1alpha1"
SITE_CONFIG_KIND = "SiteConfig"
PROXY_FIELDS = ("httpProxy", "httpsProxy")


@dataclass(frozen=True)
class Checked:
    """The outcome of checking a Site's medium."""

    problems: tuple[errors.Problem, ...]
    warnings: tuple[errors.Problem, ...] = ()
    missing: tuple[errors.Problem, ...] = ()  # inputs (Secrets, ConfigMaps, keys) that are not there
    inline: tuple[errors.Problem, ...] = ()  # secret material inline in the Site
    refused: tuple[errors.Problem, ...] = ()  # inputs refused before anything was read (`siteinput`)
    digest: str = ""
    files: tuple[str, ...] = ()
    tree: Mapping[str, bytes] = field(default_factory=dict, repr=False)

    @property
    def valid(self) -> bool:
        return not (self.problems or self.missing or self.inline or self.refused)


def site_config_document(obj: Mapping[str, Any], admin: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The site-config of a Site; `admin`: the hub-generated `adminAccess` setting (`hub.adminaccess`), added."""
    spec = obj.get("spec") or {}
    site_config = spec.get("siteConfig") or {}
    if admin is not None:
        site_config = {**site_config, "adminAccess": dict(admin)}
    return {
        "apiVersion": SITE_CONFIG_API_VERSION,
        "kind": SITE_CONFIG_KIND,
        "metadata": {"name": obj["metadata"]["name"]},
        "spec": site_config,
    }


def site_config_text(obj: Mapping[str, Any], admin: Mapping[str, Any] | None = None) -> bytes:
    """The site-config file the stick carries for this Site."""
    return yaml.safe_dump(site_config_document(obj, admin), sort_keys=False).encode()


def _decoded(holder: Mapping[str, Any] | None, key: str, *, base64_data: bool) -> bytes | None:
    if holder is None:
        return None
    if base64_data:
        value = (holder.get("data") or {}).get(key)
        if value is None:
            return None
        try:
            data = base64.b64decode(value, validate=True)
        except binascii.Error:
            return None
        redact.register_secret(data.decode("utf-8", "replace"))
        return data
    text = (holder.get("data") or {}).get(key)
    if text is None:
        binary = (holder.get("binaryData") or {}).get(key)
        return base64.b64decode(binary) if binary is not None else None
    return str(text).encode()


def resolve_files(client: kube.Client, obj: Mapping[str, Any]) -> tuple[dict[str, bytes], list[errors.Problem]]:
    """`spec.files` read from the Site's namespace: the files, and a problem per missing object or key."""
    namespace = obj["metadata"]["namespace"]
    found: dict[str, bytes] = {}
    missing = []
    for name, source in sorted(site.view(obj).files.items()):
        secret = isinstance(source, Mapping) and "secretKeyRef" in source
        ref = (source or {}).get("secretKeyRef" if secret else "configMapKeyRef") or {}
        resource = kube.SECRETS if secret else kube.CONFIGMAPS
        refused = siteinput.object_name_problem(ref.get("name"))
        if refused:  # never into an API path (`examine` refuses the Site before this is reached)
            missing.append(errors.Problem(f"spec.files.{name}", refused))
            continue
        holder = client.find(kube.Ref(resource, str(ref.get("name", "")), namespace))
        data = _decoded(holder, str(ref.get("key", "")), base64_data=secret)
        if data is None:
            what = f"{resource.kind} {namespace}/{ref.get('name')}"
            detail = "does not exist" if holder is None else f"has no key {ref.get('key')!r}"
            fix = f"create it with the key {ref.get('key')!r}, or fix spec.files.{name}"
            missing.append(errors.Problem(f"spec.files.{name}", f"{what} {detail}: {fix}"))
            continue
        found[name] = data
    return found, missing


def _walk(doc: Any, path: findings.Path) -> Iterator[tuple[findings.Path, Any]]:
    """The values at a schema path in a document (lists along the way are entered)."""
    if not path:
        yield (), doc
        return
    if isinstance(doc, list):
        for index, item in enumerate(doc):
            for rest, value in _walk(item, path):
                yield (index, *rest), value
        return
    if isinstance(doc, Mapping) and path[0] in doc:
        for rest, value in _walk(doc[path[0]], path[1:]):
            yield (path[0], *rest), value


def _carries_credentials(url: object) -> bool:
    parsed = urllib.parse.urlsplit(str(url))
    return bool(parsed.username or parsed.password)


def inline_secrets(document: Mapping[str, Any]) -> list[errors.Problem]:
    """Secret material written into the Site itself: refused on the hub (never quoted)."""
    found = []
    for secret_path in schema.SECRET_PATHS:
        for path, value in _walk(document, secret_path):
            if secret_path[-1] in PROXY_FIELDS and not _carries_credentials(value):
                continue  # a proxy URL without credentials is no secret
            where = "spec.siteConfig." + findings.render_path(path[1:])
            message = (
                "secret material is not accepted inline in a Site: put it in a Secret of this namespace, name it "
                "in spec.files and refer to it with {file: NAME}"
            )
            found.append(errors.Problem(where, message))
    return found


def lay_out(
    directory: pathlib.Path,
    obj: Mapping[str, Any],
    files: Mapping[str, bytes],
    admin: Mapping[str, Any] | None = None,
) -> pathlib.Path:
    """Write the Site's site-config and files into `directory` (0600 files); the site-config's path."""
    for name, data in files.items():
        target = directory / name
        if not target.resolve().is_relative_to(directory.resolve()):
            continue  # an unsafe name: the site-config's reference to it is reported by validation
        # A private directory of this check (TemporaryDirectory, 0700), removed after: no fsync per file.
        safefile.write(target, data, mode=0o600, make_parents=True, sync=False)
    path = directory / medium.SITE_CONFIG_NAME
    safefile.write(path, site_config_text(obj, admin), mode=0o600, sync=False)
    return path


def digest(obj: Mapping[str, Any], files: Mapping[str, bytes]) -> str:
    """The digest of the medium a Site and its files make, as `check` computes it (laid out, then the agent's
    `medium.digest` over what the site-config references), without validating: `fleet render --git` records it and
    `fleet diff` compares it."""
    with tempfile.TemporaryDirectory(prefix="snoreloc-fleet-digest.") as tmp:
        return medium.digest(medium.contents(lay_out(pathlib.Path(tmp), obj, files)))


def _site_config_problem(problem: errors.Problem) -> errors.Problem:
    """A finding of the site-config file, named as the Site's field (`spec.siteConfig.` + the file's path)."""
    path = problem.path
    if path.startswith("spec"):
        path = "spec.siteConfig" + path[len("spec") :]
    return errors.Problem(path, problem.message, problem.line, problem.column, problem.severity)


def check(
    obj: Mapping[str, Any],
    files: Mapping[str, bytes],
    missing: list[errors.Problem] | None = None,
    admin: Mapping[str, Any] | None = None,
) -> Checked:
    """Check a Site's medium with the agent's rules, and compute its digest and file list. `admin`: the hub's
    generated `adminAccess` setting, laid out in the site-config (it is the hub's, not the Site's: the inline-secret
    rule judges what the Site wrote)."""
    inline = inline_secrets(site_config_document(obj))
    with tempfile.TemporaryDirectory(prefix="snoreloc-fleet-site.") as tmp:
        path = lay_out(pathlib.Path(tmp), obj, files, admin)
        report = loader.validate(str(path))
        tree = medium.contents(path)
    return Checked(
        problems=tuple(_site_config_problem(p) for p in report.problems),
        warnings=tuple(_site_config_problem(p) for p in report.warnings),
        missing=tuple(missing or ()),
        inline=tuple(inline),
        digest=medium.digest(tree),
        files=tuple(tree),
        tree=tree,
    )


def examine(client: kube.Client, obj: Mapping[str, Any]) -> Checked:
    """A Site's medium read and checked, the one path of the controller and `fleet make-media`: its inputs judged
    first (`siteinput`: names, file names, size, depth), and nothing read, laid out or walked when they are refused.
    A Site whose medium cannot even be built is refused with what went wrong, never retried for ever."""
    spec = obj.get("spec")
    refused = siteinput.spec_problems(obj) + delivery.read(spec if isinstance(spec, Mapping) else {})[1]
    if refused:
        return Checked(problems=(), refused=tuple(refused))
    files, missing = resolve_files(client, obj)
    admin = None
    if adminaccess.request_of(obj).generate:
        if "adminAccess" in (site.view(obj).site_config or {}):
            message = (
                "spec.adminAccess.generate asks the hub to make this site's admin access, and spec.siteConfig "
                "gives its own: keep one (remove spec.siteConfig.adminAccess, or spec.adminAccess)"
            )
            return Checked(problems=(), refused=(errors.Problem("spec.siteConfig.adminAccess", message),))
        keys = adminaccess.read(client, obj)
        if keys is None:
            fix = "the controller makes it (is `snoreloc fleet controller` running?)"
            what = f"Secret {obj['metadata']['namespace']}/{adminaccess.secret_name(obj['metadata']['name'])}"
            missing.append(errors.Problem("spec.adminAccess", f"{what} does not exist yet: {fix}"))
        else:
            admin = adminaccess.medium_setting(keys, adminaccess.request_of(obj))
    try:
        return check(obj, files, missing, admin)
    except (errors.SnorelocError, ValueError, RecursionError) as exc:
        message = f"the medium cannot be built from this Site: {redact.redact(str(exc))}"
        return Checked(problems=(), refused=(errors.Problem("spec", message),))

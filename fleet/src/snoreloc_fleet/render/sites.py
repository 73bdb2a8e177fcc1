"""Rendered sites as hub objects: one `Site` per inventory row, its files in Secrets it names, never inline.

`snoreloc fleet render --sites DIR` writes `DIR/sites.yaml` (the Sites: safe to review, diff and commit) and
`DIR/secrets.yaml` (mode 0600: the files, in Secrets), for `kubectl apply -f`. A Site's `spec.siteConfig` is the
rendered site-config's spec, its labels the template's; each `{file: NAME}` becomes a `spec.files` entry with a
`secretKeyRef`: the site's own files in the Secret `<site>-files`, the files shared by the whole fleet (next to
the template) once in the Secret `<shared>`. Every file goes in a Secret, certificates too: the hub decides
nothing from a file's name, and a key in a Secret is never shown by `kubectl get sites`. The annotation
`fleet.snoreloc.io/key-order` keeps the rendered site-config's key order, which the API server does not
(`resource.keyorder`).

An inventory column `mustBootBy` (issue 37: the date from the seal marker of the node shipped to that store, RFC
3339) becomes the Site's `spec.shelf.mustBootBy`, so the hub knows the node's horizon before it ever reports; a
cell that is not such a date is refused (exit 65, its cell named), nothing written.

A site delivered through its server's BMC (issue 36) has its BMC in inventory columns, the way a metal3 fleet keeps
its BareMetalHosts' `bmc` in its inventory: `bmcAddress` (a `redfish-virtualmedia` address; a filled cell makes the
Site's `spec.delivery` `method: bmc`), `bmcCredentialsName` (the Secret with its username and password: never in the
inventory; default `<site>-bmc`), and optionally `bmcCA` (`CONFIGMAP/KEY`: the ConfigMap holding the BMC's CA),
`bmcDisableCertificateVerification` (`true`) and `bmcPower` (`on`, `restart`, `none`). They are judged by the one
rule of `spec.delivery` (`resource.delivery.read`, as the controller and `fleet validate` judge the Site): a wrong
cell is refused with its cell named (exit 65), nothing written. A site without `bmcAddress` is delivered by stick.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from snoreloc.siblings import errors, hubreport
from snoreloc_fleet.render import template
from snoreloc_fleet.resource import delivery, keyorder, site

_KEY_UNSAFE = re.compile(r"[^-._a-zA-Z0-9]")


def secret_key(name: str) -> str:
    """A Secret data key for a file name (`manifests/00-ns.yaml` -> `manifests.00-ns.yaml`)."""
    return _KEY_UNSAFE.sub(".", name.replace("/", "."))


def _files(ref: template.FileRef) -> Iterator[tuple[str, bytes]]:
    """(name under the site-config's directory, bytes) for a file, or every file of a directory, as render read it."""
    yield from ref.contents


def _secret(name: str, namespace: str, files: Iterable[tuple[str, bytes]]) -> dict[str, Any]:
    data = {secret_key(n): base64.b64encode(b).decode("ascii") for n, b in files}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": {f"{site.GROUP}/input": "true"}},
        "type": "Opaque",
        "data": dict(sorted(data.items())),
    }


def _clashes(rendered: template.Rendered, shared: dict[str, str]) -> Iterator[errors.Problem]:
    """Two files that would share a Secret key (`a/b.pem` and `a.b.pem`), one silently winning: a site's own in its
    Secret, or the template's in the shared Secret (`shared`: key -> first name, across every site)."""
    own: dict[str, str] = {}
    for ref in rendered.files:
        taken = own if ref.per_site else shared
        for name, _ in _files(ref):
            first = taken.setdefault(secret_key(name), name)
            if first != name:
                yield errors.Problem(
                    rendered.row.where(),
                    f"the files {first!r} and {name!r} both become the Secret key {secret_key(name)!r}: rename one",
                )


def refuse_clashes(sites: Sequence[template.Rendered]) -> None:
    """Raise ConfigError (exit 65) when two files of a site map to one Secret key; nothing is written."""
    shared: dict[str, str] = {}
    problems = [p for s in sites for p in _clashes(s, shared)]
    if problems:
        raise errors.ConfigError(
            f"{len(problems)} Secret key clash{'es' if len(problems) != 1 else ''}; nothing was written",
            problems=problems,
        )


def site_object(rendered: template.Rendered, namespace: str, shared: str) -> dict[str, Any]:
    data = rendered.data if isinstance(rendered.data, dict) else {}
    labels = dict(site.view(data).labels)
    files: dict[str, Any] = {}
    for ref in rendered.files:
        holder = f"{rendered.row.name}-files" if ref.per_site else shared
        for name, _ in _files(ref):
            files[name] = {"secretKeyRef": {"name": holder, "key": secret_key(name)}}
    spec: dict[str, Any] = {"siteConfig": data.get("spec") or {}}
    if files:
        spec["files"] = dict(sorted(files.items()))
    if cell := _cell(rendered, SHELF_COLUMN):
        spec[site.SPEC_SHELF] = {hubreport.SHELF_MUST_BOOT_BY: cell}
    if chosen := _delivery_cells(rendered)[0]:
        spec["delivery"] = chosen
    annotations = {keyorder.ANNOTATION: keyorder.annotation(spec["siteConfig"])}
    cells = inventory_cells(rendered)
    if cells:
        annotations[site.INVENTORY_CELLS] = cells
    if rendered.template_digest:  # which template made it: a wave's brake groups failures by it
        annotations[site.TEMPLATE_DIGEST] = rendered.template_digest
    metadata = {"name": rendered.row.name, "namespace": namespace, "labels": labels, "annotations": annotations}
    return {"apiVersion": site.API_VERSION, "kind": site.KIND, "metadata": metadata, "spec": spec}


def inventory_cells(rendered: template.Rendered) -> str:
    """The `site.INVENTORY_CELLS` annotation: the inventory cell of each field the inventory filled (JSON, keys
    sorted so a re-render diffs clean); the entries that fit `site.MAX_INVENTORY_CELLS`, "" when none."""
    kept: dict[str, str] = {}
    size = 2
    for path, cell in sorted(rendered.trace.items()):
        size += len(json.dumps(path)) + len(json.dumps(cell)) + 2
        if size > site.MAX_INVENTORY_CELLS:
            break
        kept[path] = cell
    return json.dumps(kept, separators=(",", ":")) if kept else ""


SHELF_COLUMN = "mustBootBy"  # the inventory column that gives `spec.shelf.mustBootBy`


def _cell(rendered: template.Rendered, column: str) -> str:
    """An inventory cell of the site's row, stripped ("" when empty or absent)."""
    value = rendered.row.values.get(column)
    return "" if value is None else str(value).strip()


def _shelf_problems(rendered: template.Rendered) -> list[errors.Problem]:
    cell = _cell(rendered, SHELF_COLUMN)
    if not cell or site.rfc3339(cell) is not None:
        return []
    message = (
        f"{cell[:40]!r} is not a must-boot-by date: give the seal marker's shelf.mustBootBy, e.g. "
        "2027-03-01T09:00:00Z (RFC 3339), or leave the cell empty"
    )
    return [errors.Problem(rendered.row.where(SHELF_COLUMN), message)]


def refuse_bad_shelf(sites: Sequence[template.Rendered]) -> None:
    """Raise ConfigError (exit 65) naming each `mustBootBy` cell that is not an RFC 3339 date; nothing is written."""
    problems = [p for s in sites for p in _shelf_problems(s)]
    if problems:
        raise errors.ConfigError(
            f"{len(problems)} must-boot-by date{'s' if len(problems) != 1 else ''} unreadable; nothing was written",
            problems=problems,
        )


def hub_cell_problems(rendered: template.Rendered) -> list[errors.Problem]:
    """What render would refuse in a site's hub-only cells (`mustBootBy`, the BMC columns): `fleet validate` of an
    inventory reports them as render refuses them (one rule each)."""
    return _shelf_problems(rendered) + _delivery_cells(rendered)[1]


BMC_COLUMNS = {  # inventory column -> spec.delivery.bmc's field (metal3 BareMetalHost's spec.bmc)
    "bmcAddress": "address",
    "bmcCredentialsName": "credentialsName",
    "bmcCA": "caConfigMapKeyRef",
    "bmcDisableCertificateVerification": "disableCertificateVerification",
    "bmcPower": "power",
}
_BMC_FIELDS = {f"{delivery.FIELD}.bmc.{field}": column for column, field in BMC_COLUMNS.items()}


_YES, _NO = ("true", "yes", "1"), ("false", "no", "0")


def _delivery_cells(rendered: template.Rendered) -> tuple[dict[str, Any], list[errors.Problem]]:
    """The Site's `spec.delivery` from the BMC columns ({} without `bmcAddress`: the stick), and what is wrong
    with them, each problem at its cell."""
    address = _cell(rendered, "bmcAddress")
    if not address:
        return {}, []
    bmc: dict[str, Any] = {
        "address": address,
        "credentialsName": _cell(rendered, "bmcCredentialsName") or f"{rendered.row.name}-bmc",
    }
    if ca := _cell(rendered, "bmcCA"):
        name, _, key = ca.partition("/")
        bmc["caConfigMapKeyRef"] = {"name": name, "key": key or "ca.crt"}
    found: list[errors.Problem] = []
    insecure = _cell(rendered, "bmcDisableCertificateVerification").lower()
    if insecure in _YES + _NO:
        bmc["disableCertificateVerification"] = insecure in _YES
    elif insecure:
        found.append(errors.Problem(f"{delivery.FIELD}.bmc.disableCertificateVerification", "give true or false"))
    if power := _cell(rendered, "bmcPower"):
        bmc["power"] = power
    chosen = {"method": delivery.Method.BMC.value, "bmc": bmc}
    found += delivery.read({"delivery": chosen})[1]
    problems = [errors.Problem(rendered.row.where(_column_of(p.path)), f"{p.message} ({p.path})") for p in found]
    return chosen, problems


def _column_of(path: str) -> str:
    for field, column in _BMC_FIELDS.items():
        if path == field or path.startswith(field + "."):
            return column
    return "bmcAddress"


def refuse_bad_delivery(sites: Sequence[template.Rendered]) -> None:
    """Raise ConfigError (exit 65) naming each BMC cell `spec.delivery`'s rule refuses; nothing is written."""
    problems = [p for s in sites for p in _delivery_cells(s)[1]]
    if problems:
        raise errors.ConfigError(
            f"{len(problems)} BMC cell{'s' if len(problems) != 1 else ''} refused; nothing was written",
            problems=problems,
        )


def objects(
    sites: Sequence[template.Rendered], namespace: str, shared: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(Sites, Secrets) for rendered sites: one Secret per site with files of its own, one for the shared files."""
    refuse_clashes(sites)
    refuse_bad_shelf(sites)
    refuse_bad_delivery(sites)
    site_objects = [site_object(s, namespace, shared) for s in sites]
    secrets = []
    common: dict[str, bytes] = {}
    for rendered in sites:
        own = [f for ref in rendered.files if ref.per_site for f in _files(ref)]
        if own:
            secrets.append(_secret(f"{rendered.row.name}-files", namespace, own))
        common.update({n: p for ref in rendered.files if not ref.per_site for n, p in _files(ref)})
    if common:
        secrets.insert(0, _secret(shared, namespace, sorted(common.items())))
    return site_objects, secrets

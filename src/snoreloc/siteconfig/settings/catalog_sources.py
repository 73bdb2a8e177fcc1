"""`spec.catalogSources`: the site's operator catalogs (CatalogSources in openshift-marketplace) and whether the
default sources stay on, applied by the catalogs step (`snoreloc.steps.cluster.catalogs`); no node change.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from snoreloc.siteconfig import checks, claims, fragments, setting


def _catalog_source() -> dict[str, Any]:
    text = {"type": "string", "minLength": 1, "maxLength": 253}
    return fragments.obj(
        {
            "name": fragments.prop(
                "Name of the CatalogSource in openshift-marketplace (a DNS label).",
                ["site-redhat-operators"],
                type="string",
                pattern=fragments.DNS_LABEL_PATTERN,
                **{"x-message": "must be a DNS label: lowercase letters, digits and '-', at most 63 characters"},
            ),
            "image": fragments.prop(
                "The catalog's index image on the site's mirror, with a tag or digest.",
                ["registry.site.example.com:8443/redhat/redhat-operator-index:v4.16"],
                type="string",
                maxLength=1024,
                pattern=fragments.IMAGE_PATTERN,
                **{"x-message": "must be an image reference host[:port]/path with a :tag or @sha256: digest"},
            ),
            "displayName": fragments.prop("Name shown in OperatorHub.", ["Red Hat Operators (site mirror)"], **text),
            "publisher": fragments.prop("Publisher shown in OperatorHub.", ["Site IT"], **text),
        },
        ("name", "image"),
    )


def _schema() -> dict[str, Any]:
    return fragments.prop(
        "Operator catalogs for a disconnected site. No node change: the marketplace operator starts the catalogs.",
        [
            {
                "disableDefaultSources": True,
                "sources": [{"name": "site-redhat", "image": "registry.site.example.com/i:v1"}],
            }
        ],
        **fragments.obj(
            {
                "disableDefaultSources": fragments.prop(
                    "Set OperatorHub `cluster` spec.disableAllDefaultSources (true turns the internet catalogs off). "
                    "Left out: OperatorHub is left as it is.",
                    [True],
                    type="boolean",
                ),
                "sources": fragments.prop(
                    "CatalogSource objects to create or update in openshift-marketplace (gRPC, from an index image).",
                    [[{"name": "site-redhat-operators", "image": "registry.site.example.com:8443/redhat/index:v4.16"}]],
                    type="array",
                    maxItems=64,
                    items=_catalog_source(),
                ),
            },
            minProperties=1,
        ),
    )


@dataclass(frozen=True)
class CatalogSource:
    """An operator catalog served from the site's mirror (a CatalogSource in openshift-marketplace)."""

    name: str
    image: str
    display_name: str | None = None
    publisher: str | None = None


@dataclass(frozen=True)
class CatalogSources:
    """The site's operator catalogs, and whether OperatorHub's default (internet) sources are turned off."""

    sources: tuple[CatalogSource, ...] = ()
    disable_default_sources: bool | None = None  # None: leave OperatorHub as it is


def _load(values: Mapping[str, Any] | None, checked: checks.Checked) -> CatalogSources | None:
    if values is None:
        return None
    sources = tuple(
        CatalogSource(e["name"], e["image"], e.get("displayName"), e.get("publisher"))
        for e in values.get("sources") or ()
    )
    return CatalogSources(sources, values.get("disableDefaultSources"))


# The CatalogSources the marketplace operator owns in openshift-marketplace (operator-framework/operator-marketplace
# defaults/01..04): it recreates one that is changed or deleted, and removes them all when OperatorHub disables the
# default sources, so a site catalog of one of these names is overwritten or deleted.
DEFAULT_CATALOG_SOURCES = frozenset(
    {"redhat-operators", "certified-operators", "community-operators", "redhat-marketplace"}
)


def name_problem(name: str) -> str | None:
    """Why a site CatalogSource may not take `name`, or None."""
    if name in DEFAULT_CATALOG_SOURCES:
        return (
            f"{name} is a default source's name: the marketplace operator owns it and would overwrite or delete "
            f"this catalog; use another name (for example site-{name})"
        )
    return None


def _check(run: checks.Run, spec: Mapping[str, Any]) -> None:
    catalogs = spec.get(SETTING.key)
    sources = catalogs.get("sources") if isinstance(catalogs, Mapping) else None
    seen: dict[str, int] = {}
    for index, entry in enumerate(sources if isinstance(sources, list) else ()):
        path = (*SETTING.path, "sources", index)
        if not isinstance(entry, Mapping) or not run.sound(path):
            continue
        checks.port(run, (*path, "image"), str(entry["image"]).split("/", 1)[0])
        if problem := name_problem(entry["name"]):
            run.error((*path, "name"), problem)
        if seen.setdefault(entry["name"], index) != index:
            run.error(
                (*path, "name"), f"already used by sources[{seen[entry['name']]}]; each catalog needs its own name"
            )


def _claims(spec: Mapping[str, Any]) -> Iterator[claims.Claim]:
    """Each listed catalog (by its name), and OperatorHub's default sources when the site-config says."""
    catalogs = spec.get(SETTING.key)
    if not isinstance(catalogs, Mapping):
        return
    at = SETTING.path
    sources = catalogs.get("sources")
    for index, source in enumerate(sources if isinstance(sources, list) else []):
        if isinstance(source, Mapping) and isinstance(source.get("name"), str):
            where = (*at, "sources", index, "name")
            yield claims.Claim(
                "operators.coreos.com", "CatalogSource", "openshift-marketplace", source["name"], where, ""
            )
    if "disableDefaultSources" in catalogs:
        fields = (("spec", "disableAllDefaultSources"),)
        where = (*at, "disableDefaultSources")
        yield claims.Claim(claims.CONFIG, "OperatorHub", "", "cluster", where, "default sources", fields)


SETTING = setting.Setting(
    key="catalogSources",
    field="catalog_sources",
    schema=_schema(),
    load=_load,
    check=_check,
    cost=setting.Cost(
        reboot="no",
        rollouts=(),
        note="catalogs: the marketplace operator starts them; no node change, no reboot",
    ),
    claims=_claims,
    rollback=setting.Rollback(),  # the marketplace operator follows; no rollout the journal waits for
)

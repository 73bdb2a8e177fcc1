"""The registry of site settings: the one list of setting modules, and everything assembled from it.

To add a setting, write `settings/<name>.py` declaring `SETTING` (schema fragment, model, load, checks, cost,
claims, rollback) and add one line to `SETTINGS` below; docs/architecture.md, "Adding a site setting", walks
through one. From this list come the schema's `spec` properties (after the core keys, in this order: the published
schema keeps it), the model's values (`load`), the offline checks (`check`, in this order), the secret paths
(`x-secret` in each fragment) and the claims (`claimed`, `owned`). The steps that apply settings, and their order,
are `engine.order`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from snoreloc.siteconfig import checks, claims, findings, setting
from snoreloc.siteconfig.settings import (
    admin_access,
    catalog_sources,
    dns,
    extra_manifests,
    kubelet,
    network_accept,
    network_probes,
    node_labels,
    ntp,
    operators,
    progress_page,
    proxy,
    routes,
    ssh_keys,
    timeouts,
)

SETTINGS: tuple[setting.Setting[Any], ...] = (
    ssh_keys.SETTING,
    proxy.SETTING,
    catalog_sources.SETTING,
    extra_manifests.SETTING,
    ntp.SETTING,
    network_probes.SETTING,
    network_accept.SETTING,
    timeouts.SETTING,
    kubelet.SETTING,
    routes.SETTING,
    operators.SETTING,
    progress_page.SETTING,
    dns.SETTING,
    node_labels.SETTING,
    admin_access.SETTING,
)


def schema_properties() -> dict[str, Any]:
    """The settings' `spec` properties, in registry order."""
    return {entry.key: entry.schema for entry in SETTINGS}


def secret_paths() -> tuple[findings.Path, ...]:
    """Where the settings' secrets sit in a site-config (their fragments' `x-secret` marks)."""
    return tuple(path for entry in SETTINGS for path in entry.secrets)


def claimed(spec: Mapping[str, Any]) -> list[claims.Claim]:
    """Every object (or field) the site-config's `spec` makes snoreloc write: the core fields', then each setting's."""
    return claims.core(spec) + [claim for entry in SETTINGS for claim in entry.claimed(spec)]


def owned() -> tuple[claims.Claim, ...]:
    """The objects the settings' steps create under fixed names (`seal` refuses a user's object under them)."""
    return tuple(claim for entry in SETTINGS for claim in entry.owns)


def check(run: checks.Run, spec: Mapping[str, Any]) -> None:
    """Every setting's offline checks, in registry order (an extra manifest checked against `claimed(spec)`)."""
    run.claimed = claimed(spec)
    for entry in SETTINGS:
        if entry.check is not None:
            entry.check(run, spec)


def load(spec: Mapping[str, Any], checked: checks.Checked) -> dict[str, Any]:
    """Each setting's model value by its key, built from the checked values (the loader places them)."""
    return {entry.key: entry.load(spec.get(entry.key), checked) for entry in SETTINGS}

"""The site-config the hub lays out (the controller's findings' lines, the stick's file) keeps the owner's key order
although the API server returns a Site's keys sorted: `fleet render` records the order in an annotation
(`resource.keyorder`), which can change the order only, never a value."""

from __future__ import annotations

import json
from typing import Any

import yaml
from snoreloc_fleet.hub import sitemedium
from snoreloc_fleet.resource import keyorder, site

from snoreloc_sim.hub import sortedkeys

OWNERS = {
    "domain": "sno.store-1.example.com",
    "pullSecret": {"file": "pull-secret.json", "mode": "merge"},
    "network": {"interfaces": [{"name": "eno1", "type": "ethernet", "ipv4": {"enabled": True, "dhcp": False}}]},
    "ntp": {"servers": ["10.0.0.1"]},
}


def _site(config: dict[str, Any], annotation: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "store-1", "namespace": "fleet"}
    if annotation is not None:
        meta["annotations"] = {keyorder.ANNOTATION: annotation}
    return {"apiVersion": site.API_VERSION, "kind": site.KIND, "metadata": meta, "spec": {"siteConfig": config}}


def _keys(text: bytes) -> list[str]:
    return list(yaml.safe_load(text)["spec"])


def test_a_site_served_with_sorted_keys_is_laid_out_in_the_owners_order() -> None:
    served = sortedkeys.sorted_keys(_site(OWNERS, keyorder.annotation(OWNERS)))
    assert list(served["spec"]["siteConfig"]) == ["domain", "network", "ntp", "pullSecret"]
    text = sitemedium.site_config_text(served)
    assert text == sitemedium.site_config_text(_site(OWNERS, None)), "byte for byte the owner's order"
    interface = yaml.safe_load(text)["spec"]["network"]["interfaces"][0]
    assert list(interface) == ["name", "type", "ipv4"] and list(interface["ipv4"]) == ["enabled", "dhcp"]


def test_without_the_annotation_the_servers_order_is_kept() -> None:
    served = sortedkeys.sorted_keys(_site(OWNERS, None))
    assert _keys(sitemedium.site_config_text(served)) == ["domain", "network", "ntp", "pullSecret"]


def test_keys_added_since_follow_and_a_broken_annotation_changes_nothing() -> None:
    order = json.loads(keyorder.annotation(OWNERS))
    del order["network"]
    edited = sortedkeys.sorted_keys({**OWNERS, "proxy": {"httpProxy": "http://proxy:3128"}})
    text = sitemedium.site_config_text(_site(edited, json.dumps(order)))
    assert _keys(text) == ["domain", "pullSecret", "ntp", "network", "proxy"]
    for broken in ("{", "[1, 2]", '"text"', "[" * 100_000, '{"domain": {"x": 1}, "ntp": []}'):
        laid_out = yaml.safe_load(sitemedium.site_config_text(_site(edited, broken)))["spec"]
        assert laid_out == edited, "order only, never a value"

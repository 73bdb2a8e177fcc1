"""The records a site DNS needs, as the warning and the refusal print them: the node's static site addresses
(A and AAAA), a placeholder for a DHCP site, never the internal address."""

from __future__ import annotations

from snoreloc.siteconfig import model
from snoreloc.steps.openshift import dns_names


def _site(network: dict[str, object] | None) -> model.SiteConfig:
    return model.SiteConfig(name="store-7", domain="store7.edge.example.org", network=network)


def test_static_addresses_give_a_and_aaaa_lines() -> None:
    iface = {
        "name": "eno1",
        "state": "up",
        "ipv4": {"enabled": True, "address": [{"ip": "10.7.0.10", "prefix-length": 24}]},
        "ipv6": {"enabled": True, "address": [{"ip": "2001:db8:7::10", "prefix-length": 64}]},
    }
    absent = {"name": "eno2", "state": "absent", "ipv4": {"address": [{"ip": "10.9.9.9", "prefix-length": 24}]}}

    lines = dns_names.zone_lines(_site({"interfaces": [iface, absent]}))

    assert [line.split() for line in lines] == [
        ["api.store7.edge.example.org.", "IN", "A", "10.7.0.10"],
        ["api.store7.edge.example.org.", "IN", "AAAA", "2001:db8:7::10"],
        ["*.apps.store7.edge.example.org.", "IN", "A", "10.7.0.10"],
        ["*.apps.store7.edge.example.org.", "IN", "AAAA", "2001:db8:7::10"],
    ]


def test_a_dhcp_site_gets_a_placeholder_and_the_warning_says_who_can_reach_it() -> None:
    site = _site({"interfaces": [{"name": "eno1", "state": "up", "ipv4": {"enabled": True, "dhcp": True}}]})

    text = dns_names.clients_warning(site, ["api.store7.edge.example.org"])

    assert "The cluster itself reaches its new names through the node's own DNS" in text
    assert "clients on the site (oc, browsers) reach it by name only once the site DNS has these records" in text
    assert text.endswith("IN A    <the node's site address>")

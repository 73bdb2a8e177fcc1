"""The site probes against a real site: a resolver that answers but refuses, a gateway that drops pings.

Both are ordinary at disconnected far-edge sites, and both mean the network works: the change must be committed.
"""

from __future__ import annotations

import pytest
from realhost_sandbox import Sandbox
from test_realhost_network import SITE_ADDRESSES, converge, site_network


def test_resolver_answering_noerror_is_committed(node: Sandbox) -> None:
    verdict = converge(node, "lib", site_network())

    assert verdict.get("change") == "applied", verdict
    assert node.addresses() == SITE_ADDRESSES


@pytest.mark.parametrize("rcode", ["REFUSED", "SERVFAIL"])
def test_resolver_answering_an_error_still_proves_the_network(node: Sandbox, rcode: str) -> None:
    node.set_dns_rcode(rcode)

    verdict = converge(node, "lib", site_network())

    assert verdict.get("change") == "applied", verdict
    assert node.addresses() == SITE_ADDRESSES
    assert node.checkpoints() == []


def test_gateway_dropping_icmp_still_proves_the_network(node: Sandbox) -> None:
    node.drop_icmp_echo()
    assert node.run(["ping", "-c", "1", "-W", "1", "198.51.100.1"], check=False).returncode != 0, "ICMP not dropped"

    verdict = converge(node, "lib", site_network())

    assert verdict.get("change") == "applied", verdict
    assert node.addresses() == SITE_ADDRESSES

"""The typed view of a Site (`resource.site.view`): each field read in one place, whatever shape the hub served."""

from __future__ import annotations

from typing import Any

import pytest
from snoreloc_fleet.resource import site

GOOD: dict[str, Any] = {
    "metadata": {
        "namespace": "stores",
        "name": "store-0412",
        "uid": "u-1",
        "generation": 3,
        "labels": {site.PHASE_LABEL: "Ready", "region": "emea"},
        "annotations": {site.MEDIA_REQUESTED: "2026-11-27T10:00:00Z"},
    },
    "spec": {
        "siteConfig": {"proxy": {"httpsProxy": "http://proxy:3128"}},
        "files": {"certs/api.crt": {"secretKeyRef": {"name": "store-0412-files", "key": "certs.api.crt"}}},
        "report": {"enabled": False, "expirationSeconds": 3600},
    },
    "status": {
        site.STATUS_MEDIA: {"digest": "sha256:abc"},
        site.STATUS_CONDITIONS: [
            {"type": "Validated", "status": "True"},
            {"type": "MediaReady", "status": "True", "observedGeneration": 3},
        ],
    },
}


def test_a_site_reads_as_its_fields() -> None:
    seen = site.view(GOOD)
    assert (seen.namespace, seen.name, seen.uid, seen.generation) == ("stores", "store-0412", "u-1", 3)
    assert seen.labels["region"] == "emea" and seen.media_requested == "2026-11-27T10:00:00Z"
    assert seen.site_config["proxy"] == {"httpsProxy": "http://proxy:3128"}
    assert list(seen.files) == ["certs/api.crt"]
    assert (seen.reports, seen.expiration, seen.media_digest) == (False, 3600, "sha256:abc")
    assert seen.condition("MediaReady") == {"type": "MediaReady", "status": "True", "observedGeneration": 3}
    assert seen.condition("Relocated") is None
    assert seen.obj is GOOD


@pytest.mark.parametrize(
    "odd",
    [
        {},
        {"metadata": None, "spec": None, "status": None},
        {"metadata": [], "spec": "x", "status": 7},
        {"metadata": {"labels": ["a"], "annotations": "b", "generation": "3"}, "spec": {"report": []}},
        {"spec": {"report": {"expirationSeconds": "never"}}, "status": {site.STATUS_CONDITIONS: [None, "x", 3]}},
        {"spec": {"report": {"expirationSeconds": -5}}, "status": {site.STATUS_MEDIA: ["digest"]}},
    ],
)
def test_any_other_shape_reads_as_empty_or_the_default(odd: dict[str, Any]) -> None:
    seen = site.view(odd)
    assert (seen.namespace, seen.name, seen.uid, seen.generation) == ("", "", "", 0)
    assert dict(seen.labels) == {} and dict(seen.annotations) == {} and seen.media_requested == ""
    assert dict(seen.site_config) == {} and dict(seen.files) == {}
    assert seen.reports is True and seen.expiration == site.DEFAULT_EXPIRATION
    assert seen.media_digest == "" and seen.condition("MediaReady") is None

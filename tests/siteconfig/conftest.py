"""Key material for site-config tests, generated per session (no private key is ever committed)."""

from __future__ import annotations

import datetime as dt

import pytest

from snoreloc.pki import certs

DOMAIN = "sno1.site.example.com"
API = f"api.{DOMAIN}"
APPS = f"*.apps.{DOMAIN}"


@pytest.fixture(scope="session")
def signer() -> tuple[bytes, bytes]:
    """A CA valid from 60 days ago for ten years: (cert PEM, key PEM)."""
    return certs.issue_ca("site-test-signer", days=3650, now=dt.datetime.now(dt.UTC) - dt.timedelta(days=60))


@pytest.fixture(scope="session")
def api_pair(signer: tuple[bytes, bytes]) -> tuple[bytes, bytes]:
    return certs.issue_serving(*signer, [API], now=dt.datetime.now(dt.UTC))


@pytest.fixture(scope="session")
def ingress_pair(signer: tuple[bytes, bytes]) -> tuple[bytes, bytes]:
    return certs.issue_serving(*signer, [APPS, f"apps.{DOMAIN}"], key="rsa-2048", now=dt.datetime.now(dt.UTC))

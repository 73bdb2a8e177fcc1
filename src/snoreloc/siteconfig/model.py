"""The site-config as the rest of snoreloc sees it: frozen, typed, already validated.

The loader turns a YAML document into these values only after the schema and every semantic check have passed,
so steps never re-check input. Secret material (keys, pull secrets) is held as bytes and never appears in
`repr`, so an accidental log line shows a placeholder instead.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

API_VERSION = "snoreloc.io/v1alpha1"
KIND = "SiteConfig"


@dataclass(frozen=True)
class CertKeyPair:
    """A user-supplied serving certificate (leaf first, then its chain) and its private key, both PEM."""

    cert_pem: bytes
    key_pem: bytes = field(repr=False)


@dataclass(frozen=True)
class Certificates:
    """User-supplied certificates; None means snoreloc issues one from the cluster's own signer."""

    api: CertKeyPair | None = None
    ingress: CertKeyPair | None = None


class PullSecretMode(enum.Enum):
    REPLACE = "replace"
    MERGE = "merge"


@dataclass(frozen=True)
class PullSecret:
    """A dockerconfigjson document (`{"auths": {...}}`) and how to combine it with the cluster's."""

    dockerconfigjson: bytes = field(repr=False)
    mode: PullSecretMode = PullSecretMode.REPLACE


@dataclass(frozen=True)
class Mirror:
    """One mirrored source: pulls of `source` try `mirrors` in order."""

    source: str
    mirrors: tuple[str, ...]
    mirror_source_policy: str | None = None  # NeverContactSource | AllowContactingSource


@dataclass(frozen=True)
class RegistryCA:
    """CA bundle (PEM) trusted for one registry, `host` or `host:port`."""

    registry: str
    bundle_pem: str


@dataclass(frozen=True)
class Timeouts:
    """Upper bounds, in seconds, for the waits a site may need to tune (each bounded by the schema)."""

    total: int = 3600
    site_config: int = 600
    network_probe: int = 120
    api: int = 1200
    settle: int = 1800


@dataclass(frozen=True)
class Kubelet:
    """Node facts the agent needs at the site."""

    node_name: str | None = None  # default: the host's name
    approve_csrs: bool = True


@dataclass(frozen=True)
class ProgressPage:
    """The read-only progress page the agent serves on the node while it runs (engine/page.py)."""

    enabled: bool = True
    port: int = 8090
    keep_minutes: int = 15  # after the run ends; the unit's TimeoutStartSec (90 min) must cover total + this


@dataclass(frozen=True)
class SiteConfig:
    """A validated site-config (`apiVersion: snoreloc.io/v1alpha1`, `kind: SiteConfig`)."""

    name: str
    domain: str
    network: dict[str, Any] | None = None  # nmstate desired state
    certificates: Certificates = Certificates()
    pull_secret: PullSecret | None = None
    image_digest_mirrors: tuple[Mirror, ...] = ()
    image_tag_mirrors: tuple[Mirror, ...] = ()
    remove_mirrors: tuple[str, ...] = ()  # names of factory-era ICSP/IDMS/ITMS objects to delete
    registry_ca: tuple[RegistryCA, ...] = ()
    timeouts: Timeouts = Timeouts()
    kubelet: Kubelet = Kubelet()
    progress_page: ProgressPage = ProgressPage()
    source_path: str | None = None

    @property
    def api_host(self) -> str:
        return f"api.{self.domain}"

    @property
    def api_int_host(self) -> str:
        return f"api-int.{self.domain}"

    @property
    def apps_domain(self) -> str:
        return f"apps.{self.domain}"

    @property
    def console_host(self) -> str:
        return f"console-openshift-console.{self.apps_domain}"

    @property
    def downloads_host(self) -> str:
        return f"downloads-openshift-console.{self.apps_domain}"

    @property
    def oauth_host(self) -> str:
        return f"oauth-openshift.{self.apps_domain}"

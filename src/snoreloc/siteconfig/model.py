"""The site-config as the rest of snoreloc sees it: frozen, typed, already validated.

The loader turns a YAML document into these values only after the schema and every semantic check have passed,
so steps never re-check or re-parse input: the pull secret arrives parsed, CA bundles cleaned, certificate pairs
checked for the names in `served_names`. Secret material (keys, the pull secret) is kept out of `repr`, so an
accidental log line shows a placeholder instead, and out of step fingerprints, which hash such fields whole.

The core fields are declared here; each site setting's model is declared in its own module (`settings.<name>`) and
re-exported here when `SiteConfig` has a field for it. A setting added later needs no field: its value is in
`SiteConfig.settings` and read with `SiteConfig.get(<module>.SETTING)`.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from snoreloc.siteconfig import checks, setting
from snoreloc.siteconfig.manifests import Manifest

# The typed models of the settings that have a field of their own below (each declared in its setting's module).
from snoreloc.siteconfig.settings.catalog_sources import CatalogSource, CatalogSources
from snoreloc.siteconfig.settings.kubelet import Kubelet
from snoreloc.siteconfig.settings.network_probes import NetworkProbes
from snoreloc.siteconfig.settings.ntp import Ntp
from snoreloc.siteconfig.settings.operators import CORE_OPERATORS, Operators
from snoreloc.siteconfig.settings.progress_page import ProgressPage
from snoreloc.siteconfig.settings.proxy import Proxy
from snoreloc.siteconfig.settings.routes import OwnCertificates, Routes
from snoreloc.siteconfig.settings.ssh_keys import SshKeys, SshKeysMode
from snoreloc.siteconfig.settings.timeouts import Timeouts

# Re-exported: `model.Ntp` and the like stay where the rest of snoreloc has always found them.
__all__ = [
    "CORE_OPERATORS",
    "CatalogSource",
    "CatalogSources",
    "Kubelet",
    "Manifest",
    "NetworkProbes",
    "Ntp",
    "Operators",
    "OwnCertificates",
    "ProgressPage",
    "Proxy",
    "Routes",
    "SshKeys",
    "SshKeysMode",
    "Timeouts",
]

T = TypeVar("T")

API_VERSION = "snoreloc.io/v1alpha1"
KIND = "SiteConfig"


@dataclass(frozen=True)
class CertKeyPair:
    """A user-supplied serving certificate (leaf first, then its chain) and its private key, both PEM."""

    cert_pem: bytes
    key_pem: bytes = field(repr=False)


@dataclass(frozen=True)
class ServedNames:
    """The names one serving certificate is for: what a user's must cover, and what snoreloc issues its own for.

    `required` is what the cluster serves with it. The API's namedCertificate is chosen by SNI for `api.<domain>`
    only; `api-int.<domain>` (what the node itself dials) keeps the internal load-balancer certificate, and OpenShift
    says not to give it a named certificate (the cluster degrades): "Adding API server certificates",
    access.redhat.com/documentation/.../openshift_container_platform/4.7/html/security_and_compliance/
    api-server-certificates. The router serves routes at `<route>.apps.<domain>` with the IngressController's
    default certificate: "User-provided certificates for default ingress", docs.openshift.com/container-platform/
    4.6/security/certificate_types_descriptions/user-provided-certificates-for-default-ingress.html.
    `issued` adds names that cost nothing in our own certificates, for clients that ask for them.
    """

    required: tuple[str, ...]
    issued: tuple[str, ...]


def served_names(which: str, domain: str) -> ServedNames:
    """The names of the `api` or `ingress` certificate (the keys of `spec.certificates`) for `domain`."""
    if which == "api":
        return ServedNames((f"api.{domain}",), (f"api.{domain}", f"api-int.{domain}"))
    if which == "ingress":
        return ServedNames((f"*.apps.{domain}",), (f"*.apps.{domain}", f"apps.{domain}"))
    raise ValueError(f"no certificate {which!r}; there are api and ingress")


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
    """A checked dockerconfigjson document, parsed (`{"auths": {registry: {...}}}`), and how to combine it."""

    document: Mapping[str, Any] = field(repr=False)
    mode: PullSecretMode = PullSecretMode.REPLACE

    @property
    def auths(self) -> Mapping[str, Any]:
        auths: Mapping[str, Any] = self.document["auths"]
        return auths


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
class SiteConfig:
    """A validated site-config (`apiVersion: snoreloc.io/v1alpha1`, `kind: SiteConfig`)."""

    name: str
    domain: str
    network: dict[str, Any] | None = None  # nmstate desired state
    network_probes: NetworkProbes = field(default_factory=NetworkProbes)
    certificates: Certificates = Certificates()
    pull_secret: PullSecret | None = None
    image_digest_mirrors: tuple[Mirror, ...] = ()
    image_tag_mirrors: tuple[Mirror, ...] = ()
    remove_mirrors: tuple[str, ...] = ()  # names of factory-era ICSP/IDMS/ITMS objects to delete
    registry_ca: tuple[RegistryCA, ...] = ()
    ssh_authorized_keys: SshKeys | None = None
    proxy: Proxy | None = None
    catalog_sources: CatalogSources | None = None
    extra_manifests: tuple[Manifest, ...] = ()
    ntp: Ntp | None = None
    timeouts: Timeouts = field(default_factory=Timeouts)
    kubelet: Kubelet = field(default_factory=Kubelet)
    routes: Routes = field(default_factory=Routes)
    operators: Operators = field(default_factory=Operators)
    progress_page: ProgressPage = field(default_factory=ProgressPage)
    source_path: str | None = None
    # Settings without a field above (a new setting needs none), by key; read them with `get`. Left out of the
    # fingerprint while empty, so a site-config's fingerprint does not change with the layout.
    settings: Mapping[str, Any] = field(default_factory=dict, metadata={"fingerprint_omit_empty": True})

    def get(self, entry: setting.Setting[T]) -> T:
        """The value of a setting (its default when the site-config leaves it out), whatever holds it."""
        if entry.field in FIELDS:
            return getattr(self, entry.field)  # type: ignore[no-any-return]
        if entry.key in self.settings:
            return self.settings[entry.key]  # type: ignore[no-any-return]
        return entry.load(None, checks.Checked((), {}))

    @property
    def api_host(self) -> str:
        return f"api.{self.domain}"

    def names_for(self, which: str) -> ServedNames:
        return served_names(which, self.domain)

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


FIELDS = frozenset(f.name for f in dataclasses.fields(SiteConfig))

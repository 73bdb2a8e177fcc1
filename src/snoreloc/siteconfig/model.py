"""The site-config as the rest of snoreloc sees it: frozen, typed, already validated.

The loader turns a YAML document into these values only after the schema and every semantic check have passed,
so steps never re-check or re-parse input: the pull secret arrives parsed, CA bundles cleaned, certificate pairs
checked for the names in `served_names`. Secret material (keys, the pull secret) is kept out of `repr`, so an
accidental log line shows a placeholder instead, and out of step fingerprints, which hash such fields whole.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
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


class SshKeysMode(enum.Enum):
    REPLACE = "replace"  # the site's keys become core's only keys
    ADD = "add"  # the site's keys are added to the ones core already has


@dataclass(frozen=True)
class SshKeys:
    """Public keys for the node's `core` user (OpenSSH `authorized_keys` lines, each checked), and how to combine."""

    keys: tuple[str, ...]
    mode: SshKeysMode = SshKeysMode.REPLACE


@dataclass(frozen=True)
class Proxy:
    """The cluster-wide proxy. The URLs may carry `user:password`, so they are kept out of `repr`."""

    http_proxy: str | None = field(default=None, repr=False)
    https_proxy: str | None = field(default=None, repr=False)
    no_proxy: tuple[str, ...] = ()
    trusted_ca: str | None = None  # PEM bundle, cleaned


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


@dataclass(frozen=True)
class Manifest:
    """One document of `spec.extraManifests`: where it came from and the object, checked offline. The object is
    kept out of `repr` (a Secret's data) and so hashed whole in fingerprints."""

    source: str  # the file, relative to the site-config's directory
    index: int  # the document's place in the file, from 0
    line: int  # where the document starts in the file
    obj: Mapping[str, Any] = field(repr=False)

    @property
    def where(self) -> str:
        return f"{self.source} document {self.index + 1} (line {self.line})"

    @property
    def api_version(self) -> str:
        return str(self.obj["apiVersion"])

    @property
    def kind(self) -> str:
        return str(self.obj["kind"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace") or "")

    @property
    def label(self) -> str:
        """`Kind namespace/name`, as the rest of snoreloc names objects."""
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


@dataclass(frozen=True)
class Ntp:
    """The node's time sources (host names or IP addresses, each checked), as chrony `server` and `pool` lines."""

    servers: tuple[str, ...] = ()
    pools: tuple[str, ...] = ()


@dataclass(frozen=True)
class Timeouts:
    """Upper bounds, in seconds, for the waits a site may need to tune (each bounded by the schema)."""

    total: int = 3600
    network_probe: int = 120
    api: int = 1200
    settle: int = 1800


@dataclass(frozen=True)
class NetworkProbes:
    """What must answer after the network change before it is committed (`spec.networkProbes`)."""

    enabled: bool = True  # False: `networkProbes: none`, commit without checking
    gateway: bool = True
    dns: bool = True
    tcp: tuple[tuple[str, int], ...] = ()  # (host, port); IPv6 hosts without brackets


@dataclass(frozen=True)
class Kubelet:
    """Node facts the agent needs at the site."""

    node_name: str | None = None  # default: the host's name
    approve_csrs: bool = True


class OwnCertificates(enum.Enum):
    """What to do with a route whose own certificate (`spec.tls.certificate`) would not cover its new host."""

    MOVE_AND_WARN = "move-and-warn"  # move it like the others; a warning names it (exit 2)
    KEEP_HOST = "keep-host"  # leave it on its factory host; a warning names it (exit 2)


@dataclass(frozen=True)
class Routes:
    """How user routes are moved to the new apps domain."""

    own_certificates: OwnCertificates = OwnCertificates.MOVE_AND_WARN


# The ClusterOperators a relocation always requires healthy, whatever it touched: the control plane (etcd, the
# kube and openshift API servers, controller manager, scheduler), and what carries the new names and our writes
# (authentication, ingress, machine-config, network). `operators.ignore` may not name one of them.
CORE_OPERATORS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "openshift-apiserver",
    "authentication",
    "ingress",
    "machine-config",
    "network",
)


@dataclass(frozen=True)
class Operators:
    """Which ClusterOperators must be healthy beyond the core set and what our writes move, and which to ignore."""

    require: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProgressPage:
    """The read-only progress page the agent serves on the node while it runs (engine/page.py)."""

    enabled: bool = True
    port: int = 8090
    keep_minutes: int = 15  # after the run ends; the unit's TimeoutStartSec (90 min) must cover total + this


@dataclass(frozen=True)
class Dns:
    """Whether the node's own dnsmasq answers the new names (host/node_dns.py), or the site's DNS must."""

    node_local: bool = True


@dataclass(frozen=True)
class SiteConfig:
    """A validated site-config (`apiVersion: snoreloc.io/v1alpha1`, `kind: SiteConfig`)."""

    name: str
    domain: str
    network: dict[str, Any] | None = None  # nmstate desired state
    network_probes: NetworkProbes = NetworkProbes()
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
    timeouts: Timeouts = Timeouts()
    kubelet: Kubelet = Kubelet()
    routes: Routes = Routes()
    operators: Operators = Operators()
    progress_page: ProgressPage = ProgressPage()
    dns: Dns = Dns()
    source_path: str | None = None

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

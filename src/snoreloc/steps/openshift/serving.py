"""The serving certificates the relocation stores: for which names, signed by whom by default, in which secrets, and
the component routes that serve them on the apps domain. The certificates step writes them; domain points the
cluster at them; settle checks the endpoints present them; `engine.kubeconfig` tells administrators which CA
verifies the API.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from snoreloc import redact
from snoreloc.adapters import kube
from snoreloc.pki import certs
from snoreloc.siteconfig import model

API_SECRET = "snoreloc-api-cert"  # noqa: S105 (a name, not a password)


INGRESS_SECRET = "snoreloc-ingress-cert"  # noqa: S105


@dataclass(frozen=True)
class Target:
    """One serving certificate: the names it serves, who signs it by default, and where it is stored."""

    what: str
    served: model.ServedNames
    signer: kube.Ref
    secrets: tuple[kube.Ref, ...]
    user: model.CertKeyPair | None

    @property
    def names(self) -> tuple[str, ...]:
        """What the stored pair must cover: the required names for the user's pair, all of ours for one we issue."""
        return self.served.required if self.user else self.served.issued


def targets(site: model.SiteConfig) -> tuple[Target, Target]:
    api = Target(
        "API",
        site.names_for("api"),
        kube.Ref(kube.SECRETS, "loadbalancer-serving-signer", "openshift-kube-apiserver-operator"),
        (kube.Ref(kube.SECRETS, API_SECRET, "openshift-config"),),
        site.certificates.api,
    )
    ingress = Target(
        "ingress",
        site.names_for("ingress"),
        kube.Ref(kube.SECRETS, "router-ca", "openshift-ingress-operator"),
        (
            kube.Ref(kube.SECRETS, INGRESS_SECRET, "openshift-config"),
            kube.Ref(kube.SECRETS, INGRESS_SECRET, "openshift-ingress"),
        ),
        site.certificates.ingress,
    )
    return api, ingress


def tls_pair(secret: kube.Obj | None) -> tuple[bytes, bytes] | None:
    """(cert, key) PEM of a TLS secret, the key registered as a secret; None if absent or incomplete."""
    data = (secret or {}).get("data") or {}
    try:
        cert, key = base64.b64decode(data["tls.crt"]), base64.b64decode(data["tls.key"])
    except (KeyError, ValueError):
        return None
    redact.register_secret(key)
    return cert, key


def api_ca(site: model.SiteConfig, client: kube.Client) -> bytes | None:
    """The public CA bundle that verifies what the API serves for `api.<domain>`: the issuers after the leaf in the
    site's own certificate, else the signer the certificates step issues ours with; None when it cannot be told
    (a site certificate that comes without its issuers, a missing or unreadable signer)."""
    try:
        if site.certificates.api is not None:
            issuers = certs.parse_chain(site.certificates.api.cert_pem)[1:]
            return certs.pem_bundle(issuers) if issuers else None
        pair = tls_pair(client.find(targets(site)[0].signer))
        return None if pair is None else certs.pem_bundle(certs.parse_chain(pair[0]))
    except (certs.CertError, ValueError):
        return None


API_SECRET_CONFIG = kube.Ref(kube.SECRETS, API_SECRET, "openshift-config")


INGRESS_SECRET_CONFIG = kube.Ref(kube.SECRETS, INGRESS_SECRET, "openshift-config")


INGRESS_SECRET_OPERAND = kube.Ref(kube.SECRETS, INGRESS_SECRET, "openshift-ingress")


# (namespace, name, host prefix, the operator that rolls out when it changes)
COMPONENT_ROUTES = (
    ("openshift-console", "console", "console-openshift-console", "console"),
    ("openshift-console", "downloads", "downloads-openshift-console", "console"),
    ("openshift-authentication", "oauth-openshift", "oauth-openshift", "authentication"),
)

# The routes the console operator makes for a componentRoute with a custom hostname, carrying the certificate of
# its secret (openshift/console-operator `pkg/api/api.go`: OpenshiftConsoleCustomRouteName = "console-custom"; the
# downloads' counterpart is "downloads-custom", which openshift-tests-private waits for after adding a
# componentRoute). They follow the componentRoutes the domain step writes: no route step of ours moves them, and
# their certificate is the componentRoute's, not a user's own (issue 35: `plan` warned about them).
COMPONENT_CUSTOM_ROUTES = tuple(
    (namespace, f"{name}-custom") for namespace, name, _prefix, operator in COMPONENT_ROUTES if operator == "console"
)

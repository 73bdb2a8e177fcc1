"""The factory's ways into a cluster that travel with the node, and what a site-config does about each (issue 32).

`seal` lists them at the factory (no site-config yet: what a site-config can do), `plan` for the site-config at hand
(what this one does). Facts are read from the API and never include a secret: counts, names, certificate subjects.

- SSH keys of `core` (MachineConfig `99-master-ssh`): `spec.sshAuthorizedKeys` with `mode: replace` replaces them.
- The admin client signer(s) in `openshift-config/admin-kubeconfig-client-ca`, which verify the installer's admin
  kubeconfig (folded into the API server's client CA bundle: openshift/cluster-kube-apiserver-operator
  `pkg/operator/targetconfigcontroller/targetconfigcontroller.go`, `ManageClientCABundle`):
  `spec.adminAccess.clientCA` (revokeFactory) revokes them.
- The kubeadmin login (Secret `kube-system/kubeadmin`): `spec.adminAccess.kubeadmin` removes it or replaces its hash.
- The node-local kubeconfigs' signer (`openshift-kube-apiserver-operator/node-system-admin-signer`, which signs the
  client certificate of the kubeconfigs under `/etc/kubernetes/static-pod-resources/kube-apiserver-certs/secrets/
  node-kubeconfigs/`): left alone, because the agent itself talks to the API with them, and they never left the
  node unless someone copied them off; the kube-apiserver operator rotates that signer itself.
- The factory's entries in the pull secret (`openshift-config/pull-secret`, registry names only): `spec.pullSecret`
  with `mode: replace` (the default) drops them; `merge` keeps them.
- Long-lived service-account tokens outside the platform's namespaces (Secrets of type
  `kubernetes.io/service-account-token`, which never expire: since 4.16 OpenShift makes none for its service accounts
  by itself, so one in a user namespace was made on purpose, e.g. by the factory's CI): listed by namespace and name
  (never their content), since no site-config setting can tell the factory's from the site's; delete them.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from snoreloc.adapters import kube
from snoreloc.pki import certs
from snoreloc.siteconfig import model
from snoreloc.siteconfig.settings import admin_access, ssh_keys

SSH_CONFIG = kube.Ref(kube.MACHINECONFIGS, ssh_keys.MACHINECONFIG)
CLIENT_CA = kube.Ref(kube.CONFIGMAPS, admin_access.CLIENT_CA_CONFIGMAP, admin_access.CLIENT_CA_NAMESPACE)
KUBEADMIN = kube.Ref(kube.SECRETS, admin_access.KUBEADMIN_SECRET, admin_access.KUBEADMIN_NAMESPACE)
NODE_SIGNER = kube.Ref(kube.SECRETS, "node-system-admin-signer", "openshift-kube-apiserver-operator")
PULL_SECRET = kube.Ref(kube.SECRETS, "pull-secret", "openshift-config")
SA_TOKEN_TYPE = "kubernetes.io/service-account-token"  # noqa: S105 (a type) a Secret's selectable `type` (pkg/registry/core/secret)
PLATFORM_NAMESPACES = ("openshift", "openshift-", "kube-")  # the platform's own: its operators hold these tokens
SHOWN_TOKENS = 10  # names listed before "and N more"


@dataclass(frozen=True)
class WayIn:
    """One way in: what it is, what the cluster holds of it now (no secret), and what the site-config does."""

    what: str
    found: str
    action: str

    def line(self) -> str:
        return f"{self.what}: {self.found}; {self.action}"


def _ssh(client: kube.Client, site: model.SiteConfig | None) -> WayIn:
    config = client.find(SSH_CONFIG) or {}
    users = ((config.get("spec") or {}).get("config") or {}).get("passwd", {}).get("users") or []
    keys = [key for user in users if user.get("name") == "core" for key in user.get("sshAuthorizedKeys") or []]
    found = f"{len(keys)} key(s) in MachineConfig {SSH_CONFIG.name}"
    wanted = None if site is None else site.get(ssh_keys.SETTING)
    if site is None:
        action = "a site-config's spec.sshAuthorizedKeys (mode replace) replaces them"
    elif wanted is None:
        action = "KEPT: this site-config has no spec.sshAuthorizedKeys"
    elif wanted.mode is model.SshKeysMode.REPLACE:
        action = "revoked: spec.sshAuthorizedKeys replaces them"
    else:
        action = "KEPT: spec.sshAuthorizedKeys mode add keeps them beside the site's"
    return WayIn("SSH keys of core", found, action)


def _signers(client: kube.Client, access: admin_access.AdminAccess | None, sealing: bool) -> WayIn:
    bundle = ((client.find(CLIENT_CA) or {}).get("data") or {}).get(admin_access.CLIENT_CA_KEY, "")
    try:
        found_certs = certs.load_all(bundle.encode()) if bundle.strip() else []
    except ValueError:
        found_certs = []
    names = [certs.info(cert).subject_cn or "a CA" for cert in found_certs]
    found = f"{len(names)} CA(s) in ConfigMap {CLIENT_CA.namespace}/{CLIENT_CA.name}" + (
        f" ({', '.join(names)})" if names else ""
    )
    if sealing:
        action = "a site-config's spec.adminAccess.clientCA revokes them (revokeFactory, the default)"
    elif access is None or access.client_ca is None:
        action = "KEPT: this site-config gives no spec.adminAccess.clientCA"
    elif access.revoke_factory:
        action = "revoked: spec.adminAccess.clientCA replaces the factory's with the owner's"
    else:
        action = "KEPT: spec.adminAccess.revokeFactory is false"
    return WayIn("the factory's admin client signer (its admin kubeconfig)", found, action)


def _kubeadmin(client: kube.Client, access: admin_access.AdminAccess | None, sealing: bool) -> WayIn:
    present = client.find(KUBEADMIN) is not None
    found = f"Secret {KUBEADMIN.namespace}/{KUBEADMIN.name} " + ("present" if present else "absent (login off)")
    if sealing:
        action = "a site-config's spec.adminAccess.kubeadmin removes it or replaces its password hash"
    elif access is None or access.kubeadmin is admin_access.Kubeadmin.KEEP:
        action = "KEPT: this site-config keeps kubeadmin" if present else "nothing to do"
    elif access.kubeadmin is admin_access.Kubeadmin.REMOVE:
        action = "revoked: spec.adminAccess.kubeadmin removes the Secret" if present else "nothing to do"
    else:
        action = "revoked: spec.adminAccess.kubeadmin replaces its password hash"
    return WayIn("the kubeadmin login", found, action)


def _node_kubeconfigs(client: kube.Client) -> WayIn:
    signer = client.find(NODE_SIGNER)
    found = f"signer Secret {NODE_SIGNER.namespace}/{NODE_SIGNER.name} " + ("present" if signer else "not found")
    action = (
        "not changed by snoreloc: the agent uses these node-local kubeconfigs, they stay on the node, and the "
        "kube-apiserver operator rotates their signer; a copy taken off the node at the factory works until then"
    )
    return WayIn("the node-local kubeconfigs' signer", found, action)


def _registries(client: kube.Client) -> list[str]:
    data = ((client.find(PULL_SECRET) or {}).get("data") or {}).get(".dockerconfigjson")
    try:
        document = json.loads(base64.b64decode(data or ""))
    except (ValueError, binascii.Error):
        return []
    auths = document.get("auths") if isinstance(document, dict) else None
    return sorted(str(name) for name in auths) if isinstance(auths, dict) else []


def _pull_secret(client: kube.Client, site: model.SiteConfig | None) -> WayIn:
    registries = _registries(client)
    found = f"{len(registries)} registr(y/ies)" + (f" ({', '.join(registries)})" if registries else "")
    if site is None:
        action = "a site-config's spec.pullSecret (mode replace, the default) drops them"
    elif site.pull_secret is None:
        action = "KEPT: this site-config has no spec.pullSecret"
    elif site.pull_secret.mode is model.PullSecretMode.REPLACE:
        dropped = [name for name in registries if name not in site.pull_secret.auths]
        action = f"revoked: spec.pullSecret replaces them ({len(dropped)} of the factory's dropped)"
    else:
        action = "KEPT: spec.pullSecret mode merge keeps the factory's entries"
    return WayIn("the factory's pull-secret entries", found, action)


def _token_names(client: kube.Client) -> list[str]:
    """namespace/name of every long-lived service-account token outside the platform's namespaces (content unread
    beyond the list answer, never kept)."""
    names: list[str] = []
    for page in client.pages(kube.SECRETS, field_selector=f"type={SA_TOKEN_TYPE}"):
        for secret in page:
            meta = secret.get("metadata") or {}
            namespace = str(meta.get("namespace", ""))
            if secret.get("type") == SA_TOKEN_TYPE and not namespace.startswith(PLATFORM_NAMESPACES):
                names.append(f"{namespace}/{meta.get('name', '')}")
    return sorted(names)


def _sa_tokens(client: kube.Client, sealing: bool) -> WayIn:
    names = _token_names(client)
    shown = ", ".join(names[:SHOWN_TOKENS]) + (
        f" and {len(names) - SHOWN_TOKENS} more" if len(names) > SHOWN_TOKENS else ""
    )
    found = f"{len(names)} long-lived token Secret(s) outside the platform's namespaces" + (
        f" ({shown})" if names else ""
    )
    if not names:
        action = "nothing to do"
    elif sealing:
        action = "no site-config setting revokes them: delete the ones the site must not inherit before sealing"
    else:
        action = "KEPT: no site-config setting revokes them; delete the factory's (oc delete secret -n NAMESPACE NAME)"
    return WayIn("service-account tokens", found, action)


def ways_in(client: kube.Client, site: model.SiteConfig | None) -> list[WayIn]:
    """Every factory way in with what `site` does about it (None: at the factory, what a site-config can do)."""
    access = None if site is None else site.get(admin_access.SETTING)
    sealing = site is None
    return [
        _ssh(client, site),
        _signers(client, access, sealing),
        _kubeadmin(client, access, sealing),
        _node_kubeconfigs(client),
        _pull_secret(client, site),
        _sa_tokens(client, sealing),
    ]

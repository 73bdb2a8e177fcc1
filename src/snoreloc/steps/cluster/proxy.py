"""The cluster-wide proxy: Proxy `cluster` and the CA bundle it trusts, a ConfigMap in `openshift-config`.

The machine-config operator renders the proxy into the node's configuration (the environment of CRI-O, kubelet
and the machine-config daemon), so a change of `httpProxy`, `httpsProxy` or `noProxy` is a machine-config update
that reboots the node; a change of the trusted CA alone is written to
`/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt` and restarts kubelet and CRI-O without a
reboot (openshift-docs, "Replacing the default ingress certificate", the note on `oc patch proxy/cluster`; the
no-reboot path for the CA is documented for current releases, and we have not verified it on 4.12). So this step
and `ntp` (the other write that reboots) are the last that write: the reboot then interrupts no other write, and the
final settle rides it out (its own pool update, queued after cluster-config's if that one is still running).

Only the fields the site-config gives are set; the others keep what the factory had. The CA bundle is merged into
the ConfigMap the Proxy already names, if any (certificates already in it are not added twice), like the registry
CA. Proxy URLs may carry a password: they are registered as secrets before anything is planned or printed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from snoreloc.adapters import kube
from snoreloc.pki import certs
from snoreloc.siteconfig import model
from snoreloc.siteconfig.settings import proxy as proxy_setting
from snoreloc.steps import base, context
from snoreloc.steps.openshift import ownership

PROXY_CLUSTER = kube.Ref(kube.PROXIES, "cluster")
TRUSTED_CA = proxy_setting.TRUSTED_CA_CONFIGMAP
CA_KEY = "ca-bundle.crt"  # the key OpenShift reads from the trustedCA ConfigMap
URL_FIELDS = ("httpProxy", "httpsProxy")


def desired_spec(site: model.Proxy) -> dict[str, str]:
    """The Proxy spec fields the site sets (noProxy as the comma-separated list the API takes)."""
    wanted = {"httpProxy": site.http_proxy, "httpsProxy": site.https_proxy}
    spec = {key: value for key, value in wanted.items() if value is not None}
    if site.no_proxy:
        spec["noProxy"] = ",".join(site.no_proxy)
    return spec


def merged_bundle(current: str, site_pem: str) -> str:
    """`current` with the site's certificates it does not hold yet appended (an unreadable `current` is kept and
    appended to: it is the user's)."""
    try:
        have = certs.parse_chain(current.encode()) if current.strip() else []
    except certs.CertError:
        have = []
    missing = [cert for cert in certs.parse_chain(site_pem.encode("ascii")) if cert not in have]
    if not missing:
        return current
    addition = certs.pem_bundle(missing).decode("ascii")
    return (current.rstrip("\n") + "\n" if current.strip() else "") + addition


def _register_urls(spec: Mapping[str, Any]) -> None:
    """The passwords in proxy URLs (the cluster's and the site's) never reach a plan, log or report."""
    for name in URL_FIELDS:
        if isinstance(spec.get(name), str) and spec[name]:
            proxy_setting.register_proxy_password(spec[name])


def ca_changes(ctx: context.Context, site: model.Proxy, proxy: kube.Obj) -> tuple[str | None, list[base.ObjectChange]]:
    """The ConfigMap change for the trusted CA, and the name the Proxy must point at (None: no CA to set)."""
    if site.trusted_ca is None:
        return None, []
    name = ((proxy.get("spec") or {}).get("trustedCA") or {}).get("name") or TRUSTED_CA
    ref = kube.Ref(kube.CONFIGMAPS, name, "openshift-config")
    metadata = {"name": name, "namespace": ref.namespace, "labels": dict(ownership.MANAGED_BY)}
    desired = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {CA_KEY: site.trusted_ca}}

    def merge(current: kube.Obj) -> kube.Obj:
        data = current.get("data") or {}
        current["data"] = {**data, CA_KEY: merged_bundle(data.get(CA_KEY, ""), site.trusted_ca or "")}
        return current

    change = base.upsert(ctx, ref, desired, merge)
    return name, [] if change is None else [_tagged(change, "proxy trusted CA")]


def _tagged(change: base.ObjectChange, why: str) -> base.ObjectChange:
    return base.ObjectChange(
        change.ref, change.action, change.before, change.after, change.mutate, (base.MCP_MASTER,), why
    )


def proxy_changes(ctx: context.Context) -> list[base.ObjectChange]:
    site = ctx.site.get(proxy_setting.SETTING)
    if site is None:
        return []
    proxy = ctx.kube.get(PROXY_CLUSTER)
    _register_urls(proxy.get("spec") or {})
    wanted = desired_spec(site)
    _register_urls(wanted)
    ca_name, changes = ca_changes(ctx, site, proxy)
    trusted = {} if ca_name is None else {"trustedCA": {"name": ca_name}}

    def mutate(current: kube.Obj) -> kube.Obj:
        current.setdefault("spec", {}).update({**wanted, **trusted})
        return current

    change = base.update(PROXY_CLUSTER, proxy, mutate, keep=context.Keep(rollback=proxy_setting.SETTING.rollback))
    return changes + ([] if change is None else [_tagged(change, "cluster-wide proxy")])


def reboots(changes: Sequence[base.ObjectChange]) -> bool:
    """Whether the plan changes a proxy URL or noProxy (a node reboot), not only the trusted CA."""
    for change in changes:
        if change.ref == PROXY_CLUSTER:
            before = {k: (change.before or {}).get("spec", {}).get(k) for k in (*URL_FIELDS, "noProxy")}
            after = {k: (change.after or {}).get("spec", {}).get(k) for k in (*URL_FIELDS, "noProxy")}
            if before != after:
                return True
    return False


class Proxy(base.ObjectStep):
    name = "proxy"
    setting = proxy_setting.SETTING  # the setting this step applies
    description = "setting the cluster-wide proxy (machine-config update)"

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {"proxy": ctx.site.get(proxy_setting.SETTING)}

    def changes(self, ctx: context.Context) -> list[base.ObjectChange]:
        return proxy_changes(ctx)

    def notes(self, ctx: context.Context, changes: Sequence[base.ObjectChange]) -> tuple[str, ...]:
        if not changes:
            return ()
        if reboots(changes):
            return (proxy_setting.SETTING.cost.note,)
        return ("proxy: trusted CA only; the pool updates without a reboot (kubelet and CRI-O restart)",)


STEP = Proxy()  # placed by `engine.order.cluster_steps`

"""Each site's reporting credential: a token that may only get and patch its own Site's status, revocable, expiring.

Per Site `NAME` the controller keeps, all owned by the Site (deleted with it by the garbage collector):

- ServiceAccount `site-NAME` (`automountServiceAccountToken: false`),
- Role `site-NAME`: `get` and `patch` of `sites/status` with `resourceNames: [NAME]`, nothing else (RBAC cannot
  narrow `create`, `list` or `watch` by name, so none of them is granted; kubernetes.io/docs/reference/
  access-authn-authz/rbac/#referring-to-resources), and RoleBinding `site-NAME` to the ServiceAccount,
- Secret `site-NAME-binding`: the object the token is bound to (TokenRequest `boundObjectRef`): deleting it revokes
  the token whatever its expiry (kubernetes.io/docs/reference/kubernetes-api/authentication-resources/
  token-request-v1/), once the API server's token cache lets go of it (at most 10 s, `TOKEN_CACHE_SECONDS`;
  `revoke` deletes the RoleBinding first, which takes every permission away at once),
- Secret `NAME-report`: the reporting kubeconfig for the stick (hub URL and CA, the token, the Site's namespace, and
  in the context's `fleet.snoreloc.io/site` extension the Site's name and the site's report key) and the report key
  itself, from which `import-report` proves a report carried back by hand.

All of it is made only when a stick is asked for: `fleet make-media` sets the Site's `fleet.snoreloc.io/media-
requested` annotation (a time), and the controller issues credentials only to valid Sites carrying it, so a hub of
10,000 Sites does not hold 10,000 live tokens for servers not yet shipped, nor renew them. The report Secret records
the request its token answers (`fleet.snoreloc.io/request`). Once issued, a token is issued again when its binding
Secret was deleted or replaced *and a newer request came* (revoked, then `make-media` again; a revoked credential is
not re-issued by itself), when the hub's address changed, or when less than a fifth of its lifetime is left.
Tokens and keys never leave these Secrets except onto the stick (`fleet make-media`); nothing here logs them.
"""

from __future__ import annotations

import base64
import datetime as dt
import secrets
import urllib.parse
from dataclasses import dataclass
from typing import Any

import yaml

from snoreloc.siblings import hubreport, kube, redact
from snoreloc_fleet.resource import delivery, site

SERVICEACCOUNTS = kube.Resource("", "v1", "serviceaccounts", "ServiceAccount", True)
ROLES = kube.Resource("rbac.authorization.k8s.io", "v1", "roles", "Role", True)
ROLEBINDINGS = kube.Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True)
KUBECONFIG_KEY = "kubeconfig"
REPORT_KEY = "reportKey"
BINDING_UID = f"{site.GROUP}/binding-uid"
HUB_URL = f"{site.GROUP}/hub-url"
PROXY_URL = f"{site.GROUP}/proxy-url"
EXPIRES_AT = f"{site.GROUP}/expires-at"
ISSUED_AT = f"{site.GROUP}/issued-at"
REQUEST = f"{site.GROUP}/request"  # on the report Secret: the Site's media-requested value its token answers
TOKEN_CACHE_SECONDS = 10  # kube-apiserver's TokenSuccessCacheTTL (pkg/kubeapiserver/options/authentication.go)

OFFLINE = f"{site.GROUP}/offline"  # on the report Secret: the offline policy its kubeconfig carries ("": none)
OFFLINE_KEY = (
    hubreport.OFFLINE_KEY
)  # in the kubeconfig's site extension: what the node does when it cannot reach the hub
RENEW_FRACTION = 0.2  # renew when less than this fraction of the lifetime is left
PATCH_VERBS = ("get", "patch")


def account_name(name: str) -> str:
    return f"site-{name}"


def binding_name(name: str) -> str:
    return f"site-{name}-binding"


def report_secret_name(name: str) -> str:
    """The Secret holding the site's reporting kubeconfig and report key (`fleet make-media` reads it)."""
    return f"{name}-report"


@dataclass(frozen=True)
class Hub:
    """How nodes reach the hub: its URL and the CA that verifies it (which the controller's own address may not be:
    a controller inside the hub reaches `kubernetes.default.svc`)."""

    url: str
    ca_pem: bytes


@dataclass(frozen=True)
class Issued:
    """What status shows of the credential (no token)."""

    service_account: str
    secret: str
    issued_at: str
    expires_at: str

    def status(self) -> dict[str, str]:
        return {
            "serviceAccount": self.service_account,
            "secret": self.secret,
            "issuedAt": self.issued_at,
            "expiresAt": self.expires_at,
        }


def owner_reference(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return {
        "apiVersion": site.API_VERSION,
        "kind": site.KIND,
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _meta(obj: dict[str, Any], name: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": obj["metadata"]["namespace"],
        "labels": {site.SITE_LABEL: obj["metadata"]["name"]},
        "ownerReferences": [owner_reference(obj)],
    }


def role_rules(name: str) -> list[dict[str, Any]]:
    """The only permission a site's token has: get and patch of its own Site's status."""
    return [
        {
            "apiGroups": [site.GROUP],
            "resources": [f"{site.PLURAL}/status"],
            "resourceNames": [name],
            "verbs": list(PATCH_VERBS),
        }
    ]


def _ensure(
    client: kube.Client,
    resource: kube.Resource,
    desired: dict[str, Any],
    compare: tuple[str, ...],
    found: tuple[dict[str, Any] | None] | None = None,
) -> Any:
    """Create `desired`, or bring the existing object's `compare` fields to it (409 on create: it exists). `found`:
    the object as just read (a 1-tuple; None inside when it is not there), to spare reading it again."""
    meta = desired["metadata"]
    ref = kube.Ref(resource, meta["name"], meta["namespace"])
    current = client.find(ref) if found is None else found[0]
    if current is None:
        try:
            return client.create(resource, desired)
        except kube.Conflict:  # created meanwhile (another worker, a restart): compare with it below
            current = client.get(ref)
    patch = {key: desired[key] for key in compare if current.get(key) != desired[key]}
    owners = current.get("metadata", {}).get("ownerReferences") or []
    if not any(o.get("uid") == meta["ownerReferences"][0]["uid"] for o in owners):
        patch["metadata"] = {"ownerReferences": meta["ownerReferences"], "labels": meta["labels"]}
    return client.patch(ref, patch) if patch else current


def ensure_access(client: kube.Client, obj: dict[str, Any]) -> None:
    """The ServiceAccount, Role and RoleBinding of a Site (idempotent: unchanged objects are not written)."""
    name = obj["metadata"]["name"]
    account = account_name(name)
    sa = {"metadata": _meta(obj, account), "automountServiceAccountToken": False}
    _ensure(client, SERVICEACCOUNTS, sa, ("automountServiceAccountToken",))
    _ensure(client, ROLES, {"metadata": _meta(obj, account), "rules": role_rules(name)}, ("rules",))
    binding = {
        "metadata": _meta(obj, account),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": obj["metadata"]["namespace"]}],
    }
    _ensure(client, ROLEBINDINGS, binding, ("subjects",))


def _binding(client: kube.Client, obj: dict[str, Any], found: dict[str, Any] | None) -> dict[str, Any]:
    desired = {"metadata": _meta(obj, binding_name(obj["metadata"]["name"])), "type": "Opaque", "data": {}}
    result: dict[str, Any] = _ensure(client, kube.SECRETS, desired, (), (found,))
    return result


def _when(text: str | None) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None
    except ValueError:
        return None


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def proxy_for(obj: dict[str, Any], hub: Hub) -> str:
    """The proxy the node must use to reach the hub: the site's `spec.proxy.httpsProxy`, unless the hub's host is
    in its `noProxy` ("" when none). A proxy URL with credentials never gets here: the Site is refused first."""
    proxy = site.view(obj).site_config.get("proxy")
    proxy = proxy if isinstance(proxy, dict) else {}
    url = str(proxy.get("httpsProxy") or "")
    host = urllib.parse.urlsplit(hub.url).hostname or ""
    for entry in proxy.get("noProxy") or []:
        domain = str(entry).strip().lstrip(".")
        if entry == "*" or host == domain or host.endswith("." + domain):
            return ""
    return url


BMC_REQUEST = "delivery:bmc"  # a BMC-delivered Site's standing request: the controller delivers its medium itself


def requested(obj: dict[str, Any]) -> str:
    """The Site's request for a medium: its media-requested annotation (a stick asked for), else `BMC_REQUEST` for a
    Site delivered through its BMC (the controller asks for itself, as make-media asks for a stick); "" when none."""
    seen = site.view(obj)
    if seen.media_requested:
        return seen.media_requested
    spec = obj.get("spec")
    method = delivery.read(spec if isinstance(spec, dict) else {})[0].method
    return BMC_REQUEST if method is delivery.Method.BMC else ""


def _notes(obj: dict[str, Any] | None) -> dict[str, str]:
    return dict(site.view(obj or {}).annotations)


def _uid(obj: dict[str, Any] | None) -> str:
    return site.view(obj or {}).uid


def live(report: dict[str, Any] | None, binding: dict[str, Any] | None, now: dt.datetime) -> bool:
    """Whether the token in `report` still works and is not due for renewal: bound to `binding` as it is (not
    deleted, not replaced) with more than a fifth of its lifetime left. `make-media` asks for a credential when not."""
    notes = _notes(report)
    if report is None or binding is None or notes.get(BINDING_UID) != _uid(binding):
        return False
    issued, expires = _when(notes.get(ISSUED_AT)), _when(notes.get(EXPIRES_AT))
    if issued is None or expires is None:
        return False
    return (expires - now) >= (expires - issued) * RENEW_FRACTION


def answers(report: dict[str, Any] | None, binding: dict[str, Any] | None, request: str) -> bool:
    """Whether the controller answered `request` (a media-requested value) with the token in `report`, bound to
    `binding` as it is (not deleted or replaced since): `make-media` stops waiting for that request then."""
    notes = _notes(report)
    bound = binding is not None and notes.get(BINDING_UID) == _uid(binding)
    return bool(request) and bound and notes.get(REQUEST) == request


def _needs_token(
    report: dict[str, Any] | None, binding: dict[str, Any], hub: Hub, proxy: str, offline: str, *, now: dt.datetime
) -> bool:
    notes = _notes(report)
    wanted = (hub.url, proxy, offline)
    return (notes.get(HUB_URL), notes.get(PROXY_URL, ""), notes.get(OFFLINE, "")) != wanted or not live(
        report, binding, now
    )


def _request_token(client: kube.Client, obj: dict[str, Any], binding: dict[str, Any], seconds: int) -> dict[str, Any]:
    meta = obj["metadata"]
    ref = kube.Ref(SERVICEACCOUNTS, account_name(meta["name"]), meta["namespace"])
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {
            "expirationSeconds": seconds,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Secret", "name": binding["metadata"]["name"],
                               "uid": binding["metadata"]["uid"]},
        },
    }  # fmt: skip
    result: dict[str, Any] = client.request("POST", ref.path("token"), body=body)
    return result


def kubeconfig(
    hub: Hub, namespace: str, name: str, token: str, key: bytes, *, proxy: str = "", offline: str = ""
) -> str:
    """The reporting kubeconfig put on the stick (`hubreport.target_from` reads it back on the node); `proxy`: the
    site's proxy to the hub (`proxy-url`, which the kubernetes client honours); `offline`: its wave's offline policy
    (`proceed` or `hold`, in the site extension; "": in no wave, absent, which the node reads as proceed)."""
    extension = {"site": name, REPORT_KEY: base64.b64encode(key).decode()}
    if offline:
        extension[OFFLINE_KEY] = offline
    user, cluster = f"site-{name}", "fleet-hub"
    server: dict[str, Any] = {"server": hub.url, "certificate-authority-data": base64.b64encode(hub.ca_pem).decode()}
    if proxy:
        server["proxy-url"] = proxy
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": server}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [
            {
                "name": name,
                "context": {
                    "cluster": cluster,
                    "user": user,
                    "namespace": namespace,
                    "extensions": [
                        {
                            "name": hubreport.EXTENSION,
                            "extension": extension,
                        }
                    ],
                },
            }
        ],
        "current-context": name,
    }
    return yaml.safe_dump(document, sort_keys=False)


def report_key(report: dict[str, Any] | None) -> bytes | None:
    """The site's report key from its report Secret (None: not issued yet)."""
    encoded = ((report or {}).get("data") or {}).get(REPORT_KEY)
    if not encoded:
        return None
    key = base64.b64decode(encoded)
    redact.register_secret(key.hex())
    return key


def _revoked(obj: dict[str, Any], report: dict[str, Any] | None, binding: dict[str, Any] | None) -> bool:
    """Whether the token answering the Site's current request was revoked (its binding Secret deleted or replaced
    since): then no new one is issued until a new request."""
    if report is None or _notes(report).get(REQUEST) != requested(obj):
        return False
    return binding is None or _uid(binding) != _notes(report).get(BINDING_UID)


def ensure_token(
    client: kube.Client, obj: dict[str, Any], hub: Hub, now: dt.datetime, *, offline: str = ""
) -> Issued | None:
    """The site's reporting token and kubeconfig for its current request, issued or re-issued when needed (see the
    module's docstring); None when the token answering that request was revoked. `offline`: the offline policy of
    the Site's wave, carried in the kubeconfig ("": in no wave)."""
    meta = obj["metadata"]
    name, namespace = meta["name"], meta["namespace"]
    ref = kube.Ref(kube.SECRETS, report_secret_name(name), namespace)
    current = client.find(ref)
    found = client.find(kube.Ref(kube.SECRETS, binding_name(name), namespace))
    if _revoked(obj, current, found):  # by someone deleting the binding Secret: no grant left either
        withdraw(client, namespace, name)
        return None
    ensure_access(client, obj)
    binding = _binding(client, obj, found)
    proxy = proxy_for(obj, hub)
    if _needs_token(current, binding, hub, proxy, offline, now=now):
        seconds = site.view(obj).expiration
        answer = _request_token(client, obj, binding, seconds)
        token = answer["status"]["token"]
        redact.register_secret(token)
        expires = _when(answer["status"].get("expirationTimestamp")) or now + dt.timedelta(seconds=seconds)
        key = report_key(current) or secrets.token_bytes(32)
        annotations = {
            BINDING_UID: binding["metadata"]["uid"], HUB_URL: hub.url, PROXY_URL: proxy, ISSUED_AT: _iso(now),
            EXPIRES_AT: _iso(expires), REQUEST: requested(obj), OFFLINE: offline,
        }  # fmt: skip
        data = {
            KUBECONFIG_KEY: base64.b64encode(
                kubeconfig(hub, namespace, name, token, key, proxy=proxy, offline=offline).encode()
            ).decode(),
            REPORT_KEY: base64.b64encode(key).decode(),
        }
        desired = {"metadata": {**_meta(obj, ref.name), "annotations": annotations}, "type": "Opaque", "data": data}
        if current is None:
            current = client.create(kube.SECRETS, desired)
        else:
            current = client.patch(ref, {"metadata": {"annotations": annotations}, "data": data})
    elif _notes(current).get(REQUEST) != requested(obj):  # a new request, answered by the live token
        current = client.patch(ref, {"metadata": {"annotations": {REQUEST: requested(obj)}}})
    notes = _notes(current)
    return Issued(account_name(name), ref.name, notes.get(ISSUED_AT, ""), notes.get(EXPIRES_AT, ""))


def revoke(client: kube.Client, namespace: str, name: str) -> None:
    """Revoke every token issued for the site, as quickly as the API server allows (docs/fleet.md, "How
    credentials are scoped, expire and are revoked"): delete its RoleBinding, so that the token may do nothing (403)
    as soon as the API server's RBAC informers see the deletion (no cache: kubernetes `plugin/pkg/auth/authorizer/
    rbac/rbac.go` reads the listers), then its binding Secret, so that it stops authenticating (401) once the API
    server's token cache lets go of it (at most `TOKEN_CACHE_SECONDS`). No new one is issued until a stick is asked
    for again (`fleet make-media` sets a new media-requested time); `ensure_access` then binds the Role again."""
    withdraw(client, namespace, name)
    _delete(client, kube.Ref(kube.SECRETS, binding_name(name), namespace))


def withdraw(client: kube.Client, namespace: str, name: str) -> None:
    """Delete the site's RoleBinding (if there): its tokens keep authenticating but are granted nothing."""
    _delete(client, kube.Ref(ROLEBINDINGS, account_name(name), namespace))


def _delete(client: kube.Client, ref: kube.Ref) -> None:
    if client.find(ref) is None:
        return  # nothing to delete: no write
    try:
        client.delete(ref)
    except kube.NotFound:
        return


def remove(client: kube.Client, namespace: str, name: str, owner_uid: str) -> list[str]:
    """Delete what the controller made for a deleted Site (the objects whose owner is that Site's uid), at once:
    the garbage collector of kube-controller-manager does the same through the ownerReferences, later. Returns
    what was deleted."""
    owned = (
        (SERVICEACCOUNTS, account_name(name)), (ROLES, account_name(name)), (ROLEBINDINGS, account_name(name)),
        (kube.SECRETS, binding_name(name)), (kube.SECRETS, report_secret_name(name)),
    )  # fmt: skip
    deleted = []
    for resource, object_name in owned:
        ref = kube.Ref(resource, object_name, namespace)
        current = client.find(ref)
        owners = (current or {}).get("metadata", {}).get("ownerReferences") or []
        if current is None or not any(o.get("uid") == owner_uid for o in owners):
            continue  # gone already, or a newer Site's of the same name
        try:
            client.delete(ref)
        except kube.NotFound:
            continue
        deleted.append(str(ref))
    return deleted

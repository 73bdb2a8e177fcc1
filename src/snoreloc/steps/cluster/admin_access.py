"""Step `admin-access`: the site's owner gets admin access and the factory's stops working (`spec.adminAccess`).

Two objects, both OpenShift's own:

- ConfigMap `openshift-config/admin-kubeconfig-client-ca`, key `ca-bundle.crt`: the CAs whose client certificates
  the API server accepts for administrators. The kube-apiserver operator folds it into the API server's client CA
  bundle (openshift/cluster-kube-apiserver-operator `pkg/operator/targetconfigcontroller/targetconfigcontroller.go`,
  `ManageClientCABundle`, "this is from the installer and contains the value to verify the admin.kubeconfig user",
  combined into `openshift-kube-apiserver/client-ca`); the API server reloads that bundle live, with no
  new revision (a field report for 4.21; we model it so and say so in docs/access.md). Nothing but the installer
  writes the ConfigMap (the operator's resource graph marks it "Static", from the installer:
  `pkg/cmd/resourcegraph/resourcegraph.go`), so nothing puts a revoked signer back. The owner's CA is added;
  with `revokeFactory` the factory's are removed. "The factory's" is what the bundle held before the first run:
  the step records those certificates' SHA-256 fingerprints in an annotation of the ConfigMap
  (`FACTORY_ANNOTATION`) with the owner's (`SITE_ANNOTATION`), so a later run (a resume, a re-relocation) still
  tells them apart from a CA a user added since, which is kept and reported (`kept`).
- Secret `kube-system/kubeadmin`, key `kubeadmin`: the bcrypt hash of the kubeadmin password. `remove` deletes it
  (the login is off), `{passwordHash}` replaces the hash.

Backups are the usual ones (the whole ConfigMap, the whole Secret, taken before the first write and kept across
runs), so `snoreloc rollback` restores the factory's access and says so (the setting's `rollback.why`). The agent
itself never needs either: it talks to the API with the node's own kubeconfig, whose client certificate is signed
by the node-system-admin signer, not by a CA in this bundle, so revoking the factory's signer never cuts it off.

Where it runs: right after the first settle, before the node's labels. The factory's ways in are revoked only once
the relocated cluster has proved healthy under its new names, so a run that fails earlier leaves the factory's
technician the access they need to look; and not while the domain step's kube-apiserver revision takes the API away
on a single node (the settle waits that out). The change rolls nothing out, so it needs no settle of its own (the
final settle still follows). The SSH keys (`ssh-keys`) are the other factory way in a site-config replaces;
`steps.openshift.factory_access` lists them all for `plan` and `seal`.

Only public material is written or shown: certificates, and the password's hash (masked in plans like any Secret).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from snoreloc import errors, redact
from snoreloc.adapters import kube
from snoreloc.pki import certs
from snoreloc.siteconfig import setting as setting_mod
from snoreloc.siteconfig.settings import admin_access as admin_setting
from snoreloc.steps import base, context
from snoreloc.steps.openshift import factory_access, serving

CLIENT_CA = kube.Ref(kube.CONFIGMAPS, admin_setting.CLIENT_CA_CONFIGMAP, admin_setting.CLIENT_CA_NAMESPACE)
KUBEADMIN = kube.Ref(kube.SECRETS, admin_setting.KUBEADMIN_SECRET, admin_setting.KUBEADMIN_NAMESPACE)
CA_KEY = admin_setting.CLIENT_CA_KEY
FACTORY_ANNOTATION = "snoreloc.io/factory-admin-client-cas"  # fingerprints of the factory's CAs (first run)
SITE_ANNOTATION = "snoreloc.io/site-admin-client-cas"  # fingerprints of the owner's CAs snoreloc added
KEEP = context.Keep(rollback=admin_setting.SETTING.rollback)
API_CA_DETAIL = "apiCA"  # the step's record of the CA that verifies the API (public), read by the hub report
# The OAuth server refuses a kubeadmin Secret created over an hour after kube-system ("kubeadmin secret cannot be
# recreated": openshift/library-go `pkg/authentication/bootstrapauthenticator/bootstrap.go`,
# `getBootstrapUserSecret`). So a new hash is written into the Secret the installer made, never into a new one, and
# a rollback that recreates a removed Secret does not bring the login back: it says so before it starts.
KUBEADMIN_GONE = setting_mod.Rollback(
    why="the kubeadmin Secret is recreated, but the OAuth server does not honour a kubeadmin Secret created after "
    "installation (library-go bootstrapauthenticator): the kubeadmin login stays off; the factory's admin "
    "kubeconfig works again"
)
KUBEADMIN_ABSENT = (
    "kubeadmin: the cluster has no kube-system/kubeadmin Secret (removed at the factory), and the OAuth server does "
    "not honour one created after installation: the login stays off and the passwordHash is not written"
)


@dataclass(frozen=True)
class Bundle:
    """The client CA bundle sorted by whose each certificate is (each list of (fingerprint, certificate))."""

    factory: tuple[tuple[str, certs.Certificate], ...]  # the factory's, still in the bundle
    earlier: tuple[tuple[str, certs.Certificate], ...]  # an earlier run's owner CA that is not this one's
    users: tuple[tuple[str, certs.Certificate], ...]  # neither the factory's nor ours: kept
    factory_fingerprints: tuple[str, ...]  # everything the factory had (recorded on the first run)


def _certificates(text: str) -> list[tuple[str, certs.Certificate]]:
    if not text.strip():
        return []
    try:
        found = certs.load_all(text.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        raise errors.PermanentStepError(
            f"admin-access: {CLIENT_CA} key {CA_KEY} holds something that is not PEM certificates",
            hint="Look at the ConfigMap (oc get cm -n openshift-config admin-kubeconfig-client-ca -o yaml); fix or "
            "remove what is not a certificate, then run again.",
        ) from None
    return [(certs.fingerprint(cert), cert) for cert in found]


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(part for part in (value or "").split(",") if part)


def sorted_bundle(current: kube.Obj | None, ours: Sequence[str]) -> Bundle:
    """Whose each certificate of the ConfigMap is: the factory's (recorded on the first run, else all that is
    there now and not ours), an earlier run's owner CA, or a user's."""
    data = (current or {}).get("data") or {}
    annotations = ((current or {}).get("metadata") or {}).get("annotations") or {}
    found = _certificates(str(data.get(CA_KEY, "")))
    if FACTORY_ANNOTATION in annotations:
        factory = _split(annotations.get(FACTORY_ANNOTATION))
    else:
        factory = tuple(fp for fp, _ in found if fp not in ours)
    earlier = set(_split(annotations.get(SITE_ANNOTATION))) - set(ours)
    return Bundle(
        factory=tuple((fp, cert) for fp, cert in found if fp in factory),
        earlier=tuple((fp, cert) for fp, cert in found if fp in earlier and fp not in factory),
        users=tuple((fp, cert) for fp, cert in found if fp not in factory and fp not in earlier and fp not in ours),
        factory_fingerprints=factory,
    )


def _metadata(ref: kube.Ref) -> dict[str, Any]:
    return {"name": ref.name, "namespace": ref.namespace}


def _name(cert: certs.Certificate, fp: str) -> str:
    cn = certs.info(cert).subject_cn
    return f"{'CN ' + cn if cn else 'a CA'} (sha256 {fp[:16]})"


def desired_bundle(site: admin_setting.AdminAccess, bundle: Bundle) -> list[certs.Certificate]:
    """What `ca-bundle.crt` must hold: the factory's unless revoked, a user's always, the owner's."""
    keep = list(bundle.users)
    if not site.revoke_factory:
        keep = list(bundle.factory) + list(bundle.earlier) + keep
    ours = certs.parse_chain((site.client_ca or "").encode("ascii"))
    return [cert for _, cert in keep] + ours


def _annotated(obj: kube.Obj, factory: Sequence[str], ours: Sequence[str]) -> None:
    annotations = obj.setdefault("metadata", {}).setdefault("annotations", {}) or {}
    annotations[FACTORY_ANNOTATION] = ",".join(factory)
    annotations[SITE_ANNOTATION] = ",".join(ours)
    obj["metadata"]["annotations"] = annotations


def client_ca_change(ctx: context.Context, site: admin_setting.AdminAccess) -> base.ObjectChange | None:
    if site.client_ca is None:
        return None
    ours = site.fingerprints()
    current = ctx.kube.find(CLIENT_CA)
    bundle = sorted_bundle(current, ours)
    pem = certs.pem_bundle(desired_bundle(site, bundle)).decode("ascii")

    def mutate(obj: kube.Obj) -> kube.Obj:
        fresh = sorted_bundle(obj, ours)  # on a conflict, judged again on the fresh object
        obj["data"] = {**(obj.get("data") or {}), CA_KEY: certs.pem_bundle(desired_bundle(site, fresh)).decode()}
        _annotated(obj, fresh.factory_fingerprints, ours)
        return obj

    if current is None:
        created: kube.Obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _metadata(CLIENT_CA)}
        created["data"] = {CA_KEY: pem}
        _annotated(created, (), ours)
        return base.create(CLIENT_CA, created, why="the owner's admin client CA", keep=KEEP)
    return base.update(CLIENT_CA, current, mutate, why="the owner's admin client CA", keep=KEEP)


def _password_hash(secret: kube.Obj | None) -> str | None:
    """The hash the Secret holds (registered as a secret: it never reaches a plan, log or report)."""
    value = ((secret or {}).get("data") or {}).get(admin_setting.KUBEADMIN_KEY)
    if not isinstance(value, str):
        return None
    redact.register_secret(value)
    try:
        decoded = base64.b64decode(value).decode()
    except ValueError:
        return None
    redact.register_secret(decoded)
    return decoded


def kubeadmin_change(ctx: context.Context, site: admin_setting.AdminAccess) -> base.ObjectChange | None:
    if site.kubeadmin is admin_setting.Kubeadmin.KEEP:
        return None
    current = ctx.kube.find(KUBEADMIN)
    _password_hash(current)
    if site.kubeadmin is admin_setting.Kubeadmin.REMOVE:
        if current is None:
            return None
        return base.delete(KUBEADMIN, current, why="the kubeadmin login", keep=context.Keep(rollback=KUBEADMIN_GONE))
    assert site.password_hash is not None
    redact.register_secret(site.password_hash)
    encoded = base64.b64encode(site.password_hash.encode()).decode()
    redact.register_secret(encoded)
    if current is None:
        return None  # a new Secret would not be honoured (KUBEADMIN_ABSENT, in the plan's notes and the run's warnings)

    def mutate(obj: kube.Obj) -> kube.Obj:
        obj["data"] = {**(obj.get("data") or {}), admin_setting.KUBEADMIN_KEY: encoded}
        return obj

    return base.update(KUBEADMIN, current, mutate, why="kubeadmin's new password hash", keep=KEEP)


def revoked(ctx: context.Context, site: admin_setting.AdminAccess) -> list[str]:
    """The factory's ways in this run closes (for the plan's notes and the report)."""
    out = []
    if site.client_ca is not None and site.revoke_factory:
        bundle = sorted_bundle(ctx.kube.find(CLIENT_CA), site.fingerprints())
        out += [f"the factory's admin client signer {_name(cert, fp)}" for fp, cert in bundle.factory]
        out += [f"an earlier owner's admin client CA {_name(cert, fp)}" for fp, cert in bundle.earlier]
    if site.kubeadmin is admin_setting.Kubeadmin.REMOVE and ctx.kube.find(KUBEADMIN) is not None:
        out.append("the kubeadmin login (Secret kube-system/kubeadmin removed)")
    if site.kubeadmin is admin_setting.Kubeadmin.REPLACE:
        secret = ctx.kube.find(KUBEADMIN)
        if secret is not None and _password_hash(secret) != site.password_hash:
            out.append("the factory's kubeadmin password (replaced by the site-config's hash)")
    return out


def users_cas(ctx: context.Context, site: admin_setting.AdminAccess) -> list[str]:
    """A user's admin client CAs (neither the factory's nor ours), kept in the bundle."""
    if site.client_ca is None:
        return []
    bundle = sorted_bundle(ctx.kube.find(CLIENT_CA), site.fingerprints())
    return [
        f"admin client CA {_name(cert, fp)} in {CLIENT_CA} (neither the factory's nor the owner's)"
        for fp, cert in bundle.users
    ]


class AdminAccessStep(base.ObjectStep):
    name = "admin-access"
    setting = admin_setting.SETTING  # the setting this step applies
    description = "giving the owner admin access and revoking the factory's (no rollout)"

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        site = ctx.site.get(self.setting)
        if site is None:
            return {"admin_access": None}
        digest = None if site.password_hash is None else hashlib.sha256(site.password_hash.encode()).hexdigest()
        return {
            "client_ca": site.fingerprints(),
            "revoke_factory": site.revoke_factory,
            "kubeadmin": site.kubeadmin.value,
            "password_hash_sha256": digest,
        }

    def changes(self, ctx: context.Context) -> list[base.ObjectChange]:
        site = ctx.site.get(self.setting)
        if site is None:
            return []
        found = [client_ca_change(ctx, site), kubeadmin_change(ctx, site)]
        return [change for change in found if change is not None]

    def notes(self, ctx: context.Context, changes: Sequence[base.ObjectChange]) -> tuple[str, ...]:
        site = ctx.site.get(self.setting)
        if site is None or not changes:
            return ()
        ours = certs.parse_chain((site.client_ca or "").encode("ascii")) if site.client_ca else []
        notes = [self.setting.cost.note]
        notes += [f"adds the owner's admin client CA {_name(cert, certs.fingerprint(cert))}" for cert in ours]
        notes += [f"revokes {what}" for what in revoked(ctx, site)]
        notes += [f"keeps {what}" for what in users_cas(ctx, site)]
        return tuple(notes)

    def plan(self, ctx: context.Context) -> base.Plan:
        """The changes, and in the notes every factory way in with what this site-config does about it (always:
        a site-config without `adminAccess` is told what the factory keeps)."""
        changes = tuple(self.changes(ctx))
        site = ctx.site.get(self.setting)
        data: dict[str, Any] = {}
        if site is not None and changes:
            data = {"revoked": revoked(ctx, site), "kept": users_cas(ctx, site)}
        warnings: tuple[str, ...] = ()
        if site is not None and site.kubeadmin is admin_setting.Kubeadmin.REPLACE and ctx.kube.find(KUBEADMIN) is None:
            warnings = (KUBEADMIN_ABSENT,)
            data = {**data, "warnings": warnings}
        ways = tuple(f"factory way in: {way.line()}" for way in factory_access.ways_in(ctx.kube, ctx.site))
        return base.Plan(self.name, changes, self.notes(ctx, changes) + warnings + ways, data)

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
        outcome = base.apply_changes(ctx, plan, warnings=tuple(plan.data.get("warnings", ())))
        details: dict[str, Any] = {
            "revoked": list(plan.data.get("revoked", ())),
            "kept": list(plan.data.get("kept", ())),
        }
        ca = serving.api_ca(ctx.site, ctx.kube)
        if ca is not None:  # public: the owner's kubeconfig needs it, and the node's hub report carries it
            details[API_CA_DETAIL] = ca.decode("ascii")
        return base.StepOutcome(outcome.changed, outcome.rollouts, outcome.warnings, details)

    def verify(self, ctx: context.Context) -> None:
        """Read back over the API: the bundle holds exactly the CAs asked for, the kubeadmin Secret is as asked."""
        site = ctx.site.get(self.setting)
        if site is None:
            return
        if site.client_ca is not None:
            current = ctx.kube.find(CLIENT_CA)
            have = [fp for fp, _ in _certificates(str(((current or {}).get("data") or {}).get(CA_KEY, "")))]
            wanted = [certs.fingerprint(c) for c in desired_bundle(site, sorted_bundle(current, site.fingerprints()))]
            if sorted(have) != sorted(wanted):
                raise errors.TemporaryError(f"admin-access: {CLIENT_CA} does not hold exactly the CAs asked for yet")
        secret = ctx.kube.find(KUBEADMIN)
        if site.kubeadmin is admin_setting.Kubeadmin.REMOVE and secret is not None:
            raise errors.TemporaryError(f"admin-access: {KUBEADMIN} still exists")
        replaced = (
            secret is None or _password_hash(secret) == site.password_hash
        )  # none: KUBEADMIN_ABSENT, said in the plan
        if site.kubeadmin is admin_setting.Kubeadmin.REPLACE and not replaced:
            raise errors.TemporaryError(f"admin-access: {KUBEADMIN} does not hold the site-config's password hash")


STEP = AdminAccessStep()  # placed by `engine.order.cluster_steps`

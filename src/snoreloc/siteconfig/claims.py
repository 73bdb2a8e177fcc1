"""Which cluster objects snoreloc and the site settings manage, and the extra manifests that must not touch them.

An extra manifest is applied with server-side apply and `force` after every other step, so one that names an object
snoreloc writes would silently undo it: a Proxy manifest beside `spec.proxy`, a Secret named like snoreloc's serving
certificate, a CatalogSource named like one of `spec.catalogSources`, a MachineConfig that writes `/etc/chrony.conf`
and is merged after snoreloc's (machine-config merges MachineConfigs in name order, the last file wins). `collisions`
refuses each (exit 65, at the manifest's site-config line, naming the file, the document, the object and the
setting that manages it). Claims on fields (the APIServer's serving certificates, the Ingress domain) refuse only a
manifest that sets those fields, so a manifest may still set, say, the APIServer's audit profile.

`broad_grants` finds RBAC that hands cluster-admin, or a role whose rules allow every verb, to a subject that is
nearly everyone: every user (`system:authenticated`), anyone at all (`system:unauthenticated`), every service
account (`system:serviceaccounts`) or every service account of a namespace (`system:serviceaccounts:<ns>`). These
are warnings in `validate` and `plan`: a lab may mean it, a site almost never does.

The core fields' claims are here (`core`); each setting declares its own in its module (`Setting.claims`, or
`Setting.owns` when its step writes objects under fixed names), and `registry.claims` gives them all. The object
names are snoreloc's (the steps write them; docs/site-config.md lists them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from snoreloc.siteconfig import findings
from snoreloc.siteconfig import manifests as manifests_mod

SPEC = ("spec",)
CONFIG = "config.openshift.io"
MCO = "machineconfiguration.openshift.io"
SERVING_SECRETS = (  # steps.openshift.serving.API_SECRET, INGRESS_SECRET
    ("openshift-config", "snoreloc-api-cert"),
    ("openshift-config", "snoreloc-ingress-cert"),
    ("openshift-ingress", "snoreloc-ingress-cert"),
)
BROAD_GROUPS = {
    "system:authenticated": "every authenticated user",
    "system:unauthenticated": "anyone, without logging in",
    "system:serviceaccounts": "every service account of every namespace",
}
_ROLE_KINDS = ("ClusterRole", "Role")


@dataclass(frozen=True)
class Claim:
    """An object (or some of its fields) that snoreloc writes, the setting that makes it do so, and why."""

    group: str
    kind: str
    namespace: str
    name: str
    setting: findings.Path
    why: str
    fields: tuple[tuple[str, ...], ...] = ()  # empty: the whole object
    file: str = ""  # a master MachineConfig writing this file on the node: one merged after it wins the file

    def takes(self, manifest: manifests_mod.Manifest) -> bool:
        obj = manifest.obj
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        meta = obj.get("metadata") or {}
        same = (group, obj.get("kind"), meta.get("namespace") or "", meta.get("name"))
        if same != (self.group, self.kind, self.namespace, self.name):
            return False
        return not self.fields or any(_has(obj, field) for field in self.fields)


def _has(obj: Mapping[str, Any], field: tuple[str, ...]) -> bool:
    node: Any = obj
    for part in field:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def given(spec: Mapping[str, Any], key: str) -> bool:
    """Whether the site-config sets `spec.<key>` to something (a setting's claims hold only then)."""
    return spec.get(key) not in (None, {}, [])


def core(spec: Mapping[str, Any]) -> list[Claim]:
    """Every object the core fields of the site-config's `spec` make snoreloc write (each setting declares its own:
    `setting.Setting.claimed`; `registry.claims` gives them all)."""
    domain = (*SPEC, "domain")
    found = [Claim("", "Secret", ns, name, domain, "snoreloc's serving certificate") for ns, name in SERVING_SECRETS]
    found += [
        Claim(CONFIG, "APIServer", "", "cluster", domain, "the API's serving certificate", (("spec", "servingCerts"),)),
        Claim(
            CONFIG, "Ingress", "", "cluster", domain, "the apps domain", (("spec", "domain"), ("spec", "appsDomain"))
        ),
        Claim(CONFIG, "Ingress", "", "cluster", domain, "the console's routes", (("spec", "componentRoutes"),)),
        Claim(
            "operator.openshift.io",
            "IngressController",
            "openshift-ingress-operator",
            "default",
            domain,
            "the router's certificate",
            (("spec", "defaultCertificate"),),
        ),
        Claim(CONFIG, "ImageDigestMirrorSet", "", "snoreloc-digest-mirrors", (*SPEC, "imageDigestMirrors"), "mirrors"),
        Claim(CONFIG, "ImageTagMirrorSet", "", "snoreloc-tag-mirrors", (*SPEC, "imageTagMirrors"), "mirrors"),
    ]
    if given(spec, "pullSecret"):
        found.append(Claim("", "Secret", "openshift-config", "pull-secret", (*SPEC, "pullSecret"), "the pull secret"))
    if given(spec, "registryCA"):
        where = (*SPEC, "registryCA")
        found.append(Claim("", "ConfigMap", "openshift-config", "snoreloc-registry-ca", where, "the registry CAs"))
        found.append(
            Claim(CONFIG, "Image", "", "cluster", where, "the registry CAs", (("spec", "additionalTrustedCA"),))
        )
    return found


def _role(manifest: manifests_mod.Manifest) -> str:
    if manifest.kind != "MachineConfig":
        return ""
    labels = (manifest.obj.get("metadata") or {}).get("labels") or {}
    return str(labels.get("machineconfiguration.openshift.io/role", ""))


def _writes(manifest: manifests_mod.Manifest, path: str) -> bool:
    storage = ((manifest.obj.get("spec") or {}).get("config") or {}).get("storage") or {}
    entries = storage.get("files") if isinstance(storage, Mapping) else None
    return isinstance(entries, list) and any(isinstance(e, Mapping) and e.get("path") == path for e in entries)


def _wins_file(manifest: manifests_mod.Manifest, claim: Claim) -> bool:
    """A master MachineConfig writing the claim's file, merged after the claim's (the last in name order wins)."""
    return (
        bool(claim.file)
        and _role(manifest) == "master"
        and _writes(manifest, claim.file)
        and manifest.name > claim.name
    )


def _setting_words(claim: Claim) -> str:
    why = f" ({claim.why})" if claim.why else ""
    return f"{findings.render_path(claim.setting)} manages it{why}"


def collisions(
    wanted: Sequence[Claim], manifests: Sequence[manifests_mod.Manifest]
) -> list[tuple[manifests_mod.Manifest, str]]:
    """The manifests that would overwrite what snoreloc writes (`wanted`: every claim of the site-config), each with
    why (the object and the setting)."""
    found = []
    for manifest in manifests:
        claim = next((c for c in wanted if c.takes(manifest)), None)
        what = f"{manifest.where}: {manifest.kind} {_named(manifest)}"
        if claim is not None:
            fields = f" ({', '.join('.'.join(f) for f in claim.fields)})" if claim.fields else ""
            found.append((manifest, f"{what}{fields} is written by snoreloc: {_setting_words(claim)}; remove it"))
        elif (winner := next((c for c in wanted if _wins_file(manifest, c)), None)) is not None:
            key = findings.render_path(winner.setting)
            why = f"{what} writes {winner.file} and sorts after {winner.name}, so it would win over {key}"
            found.append((manifest, f"{why}; remove it, or drop {key}"))
    return found


def _named(manifest: manifests_mod.Manifest) -> str:
    namespace = (manifest.obj.get("metadata") or {}).get("namespace")
    return f"{namespace}/{manifest.name}" if namespace else manifest.name


# --- RBAC that grants nearly everyone nearly everything --------------------------------------------------------------


def _all_verbs_roles(manifests: Sequence[manifests_mod.Manifest]) -> set[tuple[str, str]]:
    """(kind, name) of the roles among the manifests whose rules allow every verb."""
    found = set()
    for manifest in manifests:
        if manifest.kind in _ROLE_KINDS:
            rules = manifest.obj.get("rules")
            if any(isinstance(r, Mapping) and "*" in (r.get("verbs") or []) for r in rules or []):
                found.add((manifest.kind, manifest.name))
    return found


def _broad(subject: Mapping[str, Any]) -> str | None:
    name = str(subject.get("name", ""))
    if subject.get("kind") != "Group":
        return None
    if name in BROAD_GROUPS:
        return f"{BROAD_GROUPS[name]} ({name})"
    if name.startswith("system:serviceaccounts:"):
        return f"every service account of namespace {name.rsplit(':', 1)[1]} ({name})"
    return None


def broad_grants(manifests: Sequence[manifests_mod.Manifest]) -> list[tuple[manifests_mod.Manifest, str]]:
    """Bindings that give cluster-admin or an every-verb role to a subject that is nearly everyone, with why."""
    sweeping = _all_verbs_roles(manifests)
    found = []
    for manifest in manifests:
        if manifest.kind not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        ref = manifest.obj.get("roleRef") or {}
        role = (str(ref.get("kind", "")), str(ref.get("name", "")))
        if role != ("ClusterRole", "cluster-admin") and role not in sweeping:
            continue
        what = "cluster-admin" if role[1] == "cluster-admin" else f"{role[0]} {role[1]}, which allows every verb"
        for subject in manifest.obj.get("subjects") or []:
            who = _broad(subject) if isinstance(subject, Mapping) else None
            if who is not None:
                found.append((manifest, f"{manifest.where}: {manifest.kind} {manifest.name} grants {what} to {who}"))
    return found

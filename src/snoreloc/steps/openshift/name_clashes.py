"""A user's object under a name snoreloc creates (its serving secrets, its record of site domains; the objects a
setting's step creates under fixed names, its `owns`, such as the chrony MachineConfig, are that step's own
preflight check and `seal` adds them: `owned_by_settings`) is theirs and is never taken over; the run refuses,
saying to rename, delete or label it.

Such a clash is found as early as the API allows, with one definition of the names (`our_names`):

- at the factory, by `seal` (the API is up there): the earliest moment, before the node travels;
- at the site, by `preflight`, before the first write of any cluster step. On the node the API only answers after
  the network step has applied the site network and kubelet has started (the API server is a static pod of this
  very node), so a clash at the site cannot be found before those two host steps; after `seal` it means someone
  created the object since.
"""

from __future__ import annotations

from snoreloc.adapters import kube
from snoreloc.siteconfig import claims, model, registry
from snoreloc.steps import context
from snoreloc.steps.openshift import ownership, serving, site_domains


def our_names(site: model.SiteConfig | None = None) -> list[kube.Ref]:
    """The objects snoreloc creates under fixed names (for `site`, or for any site when None)."""
    secrets = (
        [ref for target in serving.targets(site) for ref in target.secrets]
        if site is not None
        else [
            kube.Ref(kube.SECRETS, serving.API_SECRET, "openshift-config"),
            kube.Ref(kube.SECRETS, serving.INGRESS_SECRET, "openshift-config"),
            kube.Ref(kube.SECRETS, serving.INGRESS_SECRET, "openshift-ingress"),
        ]
    )
    return [*secrets, site_domains.RECORD]


def owned_by_settings() -> tuple[kube.Ref, ...]:
    """The objects the settings' steps create under fixed names (each setting's `owns`), for `seal`."""
    return tuple(kube.Ref(_resource(claim), claim.name, claim.namespace) for claim in registry.owned())


def _resource(claim: claims.Claim) -> kube.Resource:
    return next(res for res in kube.KNOWN if (res.group, res.kind) == (claim.group, claim.kind))


def found(
    client: kube.Client, site: model.SiteConfig | None = None, extra: tuple[kube.Ref, ...] = ()
) -> list[kube.Ref]:
    """Our names (and `extra` ones) that a user's object holds (no snoreloc label)."""
    return [
        ref for ref in (*our_names(site), *extra) if (obj := client.find(ref)) is not None and not ownership.ours(obj)
    ]


def preflight_check(ctx: context.Context) -> list[str]:
    """A preflight check (the pipeline passes it): refuse the run, naming the first clash and its fix, before any
    change."""
    for ref in found(ctx.kube, ctx.site):
        ownership.refuse_users(ref, ctx.kube.find(ref), step="preflight")
    return []


def fix(ref: kube.Ref) -> str:
    """What to do about a clash, as `seal` lists it."""
    return (
        f"{ref} exists but was not created by snoreloc (no {ownership.label_text()} label): rename or delete it if "
        "it is no longer needed, or add the label if it is snoreloc's"
    )

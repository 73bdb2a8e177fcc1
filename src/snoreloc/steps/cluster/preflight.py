"""Preflight: refuse to start on a cluster that is not healthy, and learn the facts the other steps rely on.

A relocation started on a degraded cluster cannot be told apart from one we broke, so every ClusterOperator must be
Available, not Progressing and not Degraded before we change anything; after a cold boot they take minutes to get there,
so preflight waits for that (bounded by `timeouts.settle`) before it refuses. `--ignore-preflight` overrides, for the
technician who knows why. The factory domain and the version come from the cluster, not from input. A site-config the
cluster's version cannot express (tag mirrors before 4.13), an extra manifest the cluster's dry run refuses, or a chrony
MachineConfig that would keep the site's time sources off the node (the settings' `checks`, which the pipeline passes
in) is refused here, before any change, whatever --ignore-preflight says: it is the site-config (or that object) that
must change. On the node, the new names must resolve there (the node's resolver is the one the cluster's pods end up
asking): the authentication and console operators check their routes by name and stay Degraded otherwise, so a run
whose node does not answer them itself (`spec.dns.nodeLocal: false`, or no SNO dnsmasq configuration) refuses to start
until the site DNS has the records, which the refusal lists. From a workstation (`--cluster-only`) a name that does not
resolve is only a warning: its resolver is not the cluster's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from snoreloc import errors
from snoreloc.adapters import kube
from snoreloc.siteconfig.settings import dns as dns_setting
from snoreloc.siteconfig.settings import extra_manifests as extra_manifests_setting
from snoreloc.siteconfig.settings import timeouts as timeouts_setting
from snoreloc.steps import base, context
from snoreloc.steps.openshift import dns_names, health, mirrors, node_csrs

LOG = logging.getLogger(__name__)


def blockers(
    ctx: context.Context, seen: node_csrs.Approvals | None = None, *, approve: bool = True
) -> tuple[list[str], list[str]]:
    """(what keeps the relocation from starting, unhealthy operators it only warns about). The node comes first:
    while it is NotReady its CSRs are approved here too (unless planning), and no operator can recover before
    it is Ready."""
    node = node_csrs.tend(ctx, seen, approve=approve)
    found = health.survey(ctx, health.MOVED_BY_US)
    return node + [f"ClusterOperator {item}" for item in found.blocking], list(found.warnings)


def _node_addresses(ctx: context.Context) -> set[str]:
    addresses: set[str] = set()
    for node in ctx.kube.list(kube.NODES):
        addresses |= {str(a.get("address")) for a in node.get("status", {}).get("addresses") or []}
    return addresses


def dns_check(ctx: context.Context) -> tuple[list[str], list[str]]:
    """(names that do not resolve, warnings about names that resolve elsewhere than to this node)."""
    ours = _node_addresses(ctx) | {ctx.api_endpoint[0], ctx.ingress_endpoint[0]}
    ours |= set(dns_names.site_addresses(ctx.site))
    missing, warnings = [], []
    for name, probe in (
        (ctx.site.api_host, ctx.site.api_host),
        (f"*.{ctx.site.apps_domain}", f"test.{ctx.site.apps_domain}"),
    ):
        found = ctx.resolve(probe)
        if not found:
            missing.append(name)
        elif not set(found) & ours:
            warnings.append(f"{probe} resolves to {', '.join(found)}, not to this node")
    return missing, warnings


def dns_warnings(ctx: context.Context) -> list[str]:
    """Names people will use that do not resolve to this node. On the node a name that does not resolve at all
    refuses the run (the operators would stay Degraded) unless --ignore-preflight; elsewhere it is a warning."""
    missing, warnings = dns_check(ctx)
    if not missing:
        return warnings
    if not ctx.settings.on_node:
        return [
            *warnings,
            f"{', '.join(missing)} do not resolve from here yet; clients need these records in the "
            "site DNS:\n" + "\n".join(dns_names.zone_lines(ctx.site)),
        ]
    why = (
        "node-local DNS is off (spec.dns.nodeLocal: false)"
        if not ctx.site.get(dns_setting.SETTING).node_local
        else "the node does not answer them itself (it has no SNO dnsmasq configuration; see the node-dns step)"
    )
    text = dns_names.refusal(ctx.site, missing, why)
    if ctx.settings.ignore_preflight:
        return [*warnings, f"preflight ignored: {text}"]
    raise errors.UnavailableError(
        f"preflight: {text}",
        hint="Add the records to the site DNS and run again (`snoreloc run` resumes), or set spec.dns.nodeLocal: "
        "true on a node with the SNO dnsmasq configuration.",
    )


HEALTHY = "the node Ready and the required ClusterOperators Available, not Progressing, not Degraded"


def wait_until_healthy(ctx: context.Context, step: str, unhealthy: list[str], seen: node_csrs.Approvals) -> list[str]:
    """After a cold boot at the site the operators take minutes to report healthy again, so wait for them (bounded
    by `timeouts.settle`) before refusing; a unit that refused at once would spend its restarts in those minutes.
    Returns the warnings once healthy; refuses with what is still not ready at the end."""
    last = [unhealthy]
    LOG.info(
        "%s: waiting up to %ss for %s: %s",
        step,
        ctx.site.get(timeouts_setting.SETTING).settle,
        HEALTHY,
        "; ".join(unhealthy),
    )

    def healthy() -> list[str] | None:
        last[0], warnings = blockers(ctx, seen)
        return None if last[0] else warnings

    try:
        return base.wait_for(ctx, step, HEALTHY, float(ctx.site.get(timeouts_setting.SETTING).settle), healthy)
    except errors.WaitTimeout as exc:
        raise errors.UnavailableError(
            f"{step}: waited {exc.seconds:.0f}s for {HEALTHY}; the cluster is not healthy, so no site setting was "
            f"applied{_approved(seen)}. Not ready: " + "; ".join(last[0]),
            hint="Wait for the cluster to settle (`oc get nodes`, `oc get clusteroperators`) and run again, "
            "or pass --ignore-preflight if you know why they are not ready.",
        ) from exc


def _approved(seen: node_csrs.Approvals) -> str:
    count = len(seen.approved)
    return f" (it approved {count} of this node's CSRs while it waited)" if count else ""


Check = Callable[[context.Context], Sequence[str]]
"""A site setting's refusal before any change: raises naming what to fix, else returns notes for the plan."""


class Preflight:
    name = "preflight"
    description = "checking the cluster is healthy and reading its factory facts"

    def __init__(self, checks: Sequence[Check] = ()) -> None:
        self.checks = tuple(checks)  # the settings' own checks, in run order (the pipeline passes them)

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {
            "domain": ctx.site.domain,
            "tag_mirrors": ctx.site.image_tag_mirrors,
            "extra_manifests": ctx.site.get(extra_manifests_setting.SETTING),
        }

    def plan(self, ctx: context.Context) -> base.Plan:
        """The facts and the health, read through an API that may still come and go after a cold boot (a pool
        finishing its update reboots the node): such an outage is waited out, bounded by `timeouts.settle`."""
        return base.wait_for(
            ctx,
            self.name,
            "the API to answer",
            float(ctx.site.get(timeouts_setting.SETTING).settle),
            lambda: self._survey(ctx),
        )

    def _survey(self, ctx: context.Context) -> base.Plan:
        version = ctx.kube.server_version()
        major, minor = base.cluster_version(ctx)
        mirrors.require_mirror_support(ctx.site, (major, minor))
        checked = [note for check in self.checks for note in check(ctx)]  # e.g. the extra manifests' dry run
        factory = base.factory_apps_domain(ctx)
        base_domain = ctx.kube.get(base.DNS_CLUSTER).get("spec", {}).get("baseDomain", "")
        legacy = mirrors.is_legacy((major, minor))
        mirror_api = "ImageContentSourcePolicy" if legacy else "ImageDigestMirrorSet/ImageTagMirrorSet"
        notes: tuple[str, ...] = (
            f"OpenShift {major}.{minor} (kube {version}); mirrors as {mirror_api}",
            f"factory domain {base_domain} (apps {factory}) -> site domain {ctx.site.domain}",
        )
        unhealthy, warnings = blockers(ctx, approve=False)
        data = {"unhealthy": unhealthy, "warnings": warnings, "factory_apps_domain": factory}
        data["version"] = f"{major}.{minor}"
        notes += (*checked, *(f"not ready: {item}" for item in unhealthy))
        notes += tuple(f"warning: {item}" for item in health.warning_text(warnings))
        return base.Plan(self.name, notes=notes, data=data)

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
        names = dns_warnings(ctx)  # before the health wait: a refusal for DNS needs no waiting
        seen = node_csrs.Approvals()
        unhealthy, operators = list(plan.data.get("unhealthy", [])), list(plan.data.get("warnings", []))
        if unhealthy and not ctx.settings.ignore_preflight:
            operators, unhealthy = wait_until_healthy(ctx, self.name, unhealthy, seen), []
        warnings = names + health.warning_text(operators)
        if unhealthy:
            warnings.append("preflight ignored: " + "; ".join(unhealthy))
        details = {**plan.data, "unhealthy": unhealthy, "warnings": operators, "csrs_approved": seen.approved}
        return base.StepOutcome(warnings=tuple(warnings), details=details)

    def verify(self, ctx: context.Context) -> None:
        ctx.kube.server_version()

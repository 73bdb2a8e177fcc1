"""Operator health as the relocation judges it: which ClusterOperators must be healthy, and which only warn.

A field cluster is rarely pristine: `insights` is Degraded at a site without internet, `monitoring` may be
Progressing for reasons of its own. Requiring every operator would make such a cluster unrelocatable, and no
retry would help. So the relocation requires the core set (`model.CORE_OPERATORS`), the operators our writes roll
out, and whatever `operators.require` adds; any other unhealthy operator becomes a warning (the run ends with
exit 2 and the report lists it), unless `operators.ignore` names it. The node comes first: while it is NotReady
no operator can recover, so that is said on its own (see `node_csrs.tend`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from snoreloc.adapters import kube
from snoreloc.siteconfig import model
from snoreloc.siteconfig.settings import operators as operators_setting
from snoreloc.steps import base, context

# What our writes may roll out (the rollout names the steps journal, mapped to the operator that reports them).
MOVED_BY_US = ("kube-apiserver", "openshift-apiserver", "authentication", "console", "ingress", "machine-config")
_OPERATOR_OF = {base.MCP_MASTER: "machine-config"}


@dataclass(frozen=True)
class Health:
    """Unhealthy operators, each as `name: what is wrong`: those the run needs, and those it only reports."""

    blocking: tuple[str, ...]
    warnings: tuple[str, ...]


def required(site: model.SiteConfig, touched: Iterable[str]) -> frozenset[str]:
    """The operators that must be healthy: the core set, what we touched, and what the site-config adds."""
    moved = {_OPERATOR_OF.get(name, name) for name in touched}
    return frozenset(model.CORE_OPERATORS) | moved | set(site.get(operators_setting.SETTING).require)


def survey(ctx: context.Context, touched: Iterable[str]) -> Health:
    """Every ClusterOperator's health, sorted into blocking problems and warnings."""
    needed = required(ctx.site, touched)
    blocking: list[str] = []
    warnings: list[str] = []
    seen: set[str] = set()
    for co in ctx.kube.list(kube.CLUSTEROPERATORS):
        name = co["metadata"]["name"]
        seen.add(name)
        problems = base.operator_problems(co)
        if not problems or (name not in needed and name in ctx.site.get(operators_setting.SETTING).ignore):
            continue
        target = blocking if name in needed else warnings
        target.append(f"{name}: {'; '.join(problems)}")
    blocking += [
        f"{name}: no such ClusterOperator"
        for name in sorted(set(ctx.site.get(operators_setting.SETTING).require) - seen)
    ]
    return Health(tuple(blocking), tuple(warnings))


def warning_text(items: Iterable[str]) -> list[str]:
    """Report lines for unhealthy operators the relocation does not need."""
    return [f"ClusterOperator {item} (not needed by the relocation; left as it is)" for item in items]

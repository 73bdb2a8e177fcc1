"""`spec.operators`: the operators policy: which ClusterOperators must be healthy beside the core set, and which
only warn or are ignored (`snoreloc.steps.openshift.health` judges by it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from snoreloc.siteconfig import checks, fragments, setting


def _operator_names(description: str, example: list[str]) -> dict[str, Any]:
    return fragments.prop(
        description,
        [example],
        type="array",
        uniqueItems=True,
        maxItems=128,
        items={
            "type": "string",
            "maxLength": 253,
            "pattern": fragments.DNS_SUBDOMAIN_PATTERN,
            "x-message": "must be a ClusterOperator name (lowercase letters, digits, '-' and '.')",
        },
    )


def _schema() -> dict[str, Any]:
    return fragments.prop(
        "Which ClusterOperators must be healthy before and after the relocation. The core set and the operators "
        "our changes roll out are always required; any other unhealthy operator is a warning (exit 2).",
        [{"require": ["monitoring"], "ignore": ["insights"]}],
        **fragments.obj(
            {
                "require": _operator_names(
                    "Further operators to require healthy (unhealthy: preflight refuses, settle waits).", ["monitoring"]
                ),
                "ignore": _operator_names(
                    "Operators whose health is not even worth a warning (never a core operator).", ["insights"]
                ),
            }
        ),
    )


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


def _load(values: Mapping[str, Any] | None, checked: checks.Checked) -> Operators:
    values = values or {}
    return Operators(require=tuple(values.get("require") or ()), ignore=tuple(values.get("ignore") or ()))


def _check(run: checks.Run, spec: Mapping[str, Any]) -> None:
    path = SETTING.path
    values = spec.get(SETTING.key) or {}
    if not run.sound(path) or not isinstance(values, Mapping):
        return
    required = set(values.get("require") or ())
    for i, name in enumerate(values.get("ignore") or ()):
        if name in CORE_OPERATORS:
            run.error((*path, "ignore", i), f"{name} is a core operator the relocation always requires; remove it")
        elif name in required:
            run.error((*path, "ignore", i), f"{name} is also in {SETTING.key}.require; keep it in one list")


SETTING = setting.Setting(key="operators", field="operators", schema=_schema(), load=_load, check=_check)

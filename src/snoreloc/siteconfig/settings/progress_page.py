"""`spec.progressPage`: the read-only progress page the agent serves on the node's site network while it runs
(`snoreloc.engine.page`); its port must not be one OpenShift uses on the node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from snoreloc.siteconfig import checks, fragments, setting


def _schema() -> dict[str, Any]:
    default = ProgressPage()
    return fragments.prop(
        "The read-only progress page the agent serves on the node's site network while it runs.",
        [{"enabled": True, "port": default.port, "keepMinutes": default.keep_minutes}],
        **fragments.obj(
            {
                "enabled": fragments.prop(f"Serve the page (default {default.enabled}).", [True], type="boolean"),
                "port": fragments.prop(
                    f"TCP port of the page (default {default.port}); not one OpenShift uses on the node.",
                    [default.port],
                    type="integer",
                    minimum=1024,
                    maximum=65535,
                ),
                "keepMinutes": fragments.prop(
                    f"Minutes the page stays up after the run ends (0-1440, default {default.keep_minutes}).",
                    [default.keep_minutes],
                    type="integer",
                    minimum=0,
                    maximum=1440,
                ),
            }
        ),
    )


@dataclass(frozen=True)
class ProgressPage:
    """The read-only progress page the agent serves on the node while it runs (engine/page.py)."""

    enabled: bool = True
    port: int = 8090
    keep_minutes: int = 15  # after the run ends; the unit's TimeoutStartSec (90 min) must cover total + this


def _load(values: Mapping[str, Any] | None, checked: checks.Checked) -> ProgressPage:
    default = ProgressPage()
    values = values or {}
    return ProgressPage(
        enabled=values.get("enabled", default.enabled),
        port=values.get("port", default.port),
        keep_minutes=values.get("keepMinutes", default.keep_minutes),
    )


# Ports OpenShift's own services listen on in a control-plane node's host network (openshift/openshift-docs
# snippets/network-flow-matrix.csv), and the NodePort range: the progress page must not take one of them.
RESERVED_PORTS = frozenset(
    {22, 53, 80, 111, 443, 1936, 2379, 2380, 5050, 5051, 6080, 6180, 6183, 6385, 6388, 6443, 8080, 8798}
    | set(range(9000, 10000))
    | set(range(10250, 10261))
    | {10300, 10309, 10357, 17697, 18080, 22623, 22624}
    | set(range(30000, 32768))
)


def _check(run: checks.Run, spec: Mapping[str, Any]) -> None:
    path = (*SETTING.path, "port")
    port = (spec.get(SETTING.key) or {}).get("port")
    if run.sound(path) and port in RESERVED_PORTS:
        run.error(path, f"port {port} is used by OpenShift on the node; pick a free one such as 8090")


SETTING = setting.Setting(key="progressPage", field="progress_page", schema=_schema(), load=_load, check=_check)

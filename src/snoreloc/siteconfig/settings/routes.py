"""`spec.routes`: the routes policy: what happens to a user route whose own certificate would not cover its new
host (the routes step, `snoreloc.steps.cluster.routes`, reads it).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from snoreloc.siteconfig import checks, fragments, setting


def _schema() -> dict[str, Any]:
    return fragments.prop(
        "How user routes move to the new apps domain.",
        [{"ownCertificates": "keep-host"}],
        **fragments.obj(
            {
                "ownCertificates": fragments.prop(
                    "A route with its own certificate (spec.tls.certificate) that would not cover its new host: "
                    "`move-and-warn` (default) moves it and warns; `keep-host` leaves it on its factory host and "
                    "warns. Either way `plan` and the report name it.",
                    ["keep-host"],
                    enum=[choice.value for choice in OwnCertificates],
                ),
            }
        ),
    )


class OwnCertificates(enum.Enum):
    """What to do with a route whose own certificate (`spec.tls.certificate`) would not cover its new host."""

    MOVE_AND_WARN = "move-and-warn"  # move it like the others; a warning names it (exit 2)
    KEEP_HOST = "keep-host"  # leave it on its factory host; a warning names it (exit 2)


@dataclass(frozen=True)
class Routes:
    """How user routes are moved to the new apps domain."""

    own_certificates: OwnCertificates = OwnCertificates.MOVE_AND_WARN


def _load(values: Mapping[str, Any] | None, checked: checks.Checked) -> Routes:
    default = Routes().own_certificates.value
    return Routes(own_certificates=OwnCertificates((values or {}).get("ownCertificates", default)))


SETTING = setting.Setting(key="routes", field="routes", schema=_schema(), load=_load)

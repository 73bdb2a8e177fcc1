"""`spec.networkAccept`: the risky network changes the author means (no default route, no DNS server, no br-ex).

It has no model and no step of its own: the network's check (`semantic`, `nmstate_check`) reads it, and refuses
such a network unless it is listed here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from snoreloc.siteconfig import checks, fragments, setting

KEY = "networkAccept"


def accepted(spec: Mapping[str, Any]) -> frozenset[str]:
    """The risky changes the site-config accepts (empty when the key is absent or not a list)."""
    accept = spec.get(KEY)
    return frozenset(str(name) for name in accept) if isinstance(accept, list) else frozenset()


def _load(values: Any, checked: checks.Checked) -> None:
    return None


SETTING = setting.Setting(
    key=KEY,
    field="",
    schema=fragments.prop(
        "Risky network changes the author means: removing the default route, every DNS server, or "
        "br-ex. Without them listed here, such a network is an error.",
        [["removeDefaultRoute"]],
        type="array",
        uniqueItems=True,
        items={"enum": ["removeDefaultRoute", "removeDNSServers", "removeBrEx"]},
    ),
    load=_load,
)

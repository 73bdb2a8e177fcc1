"""`spec.ntp`: the node's time sources, written by the ntp step as chrony.conf in a MachineConfig of ours
(`snoreloc.steps.cluster.ntp`). Each source becomes a line of chrony.conf, so each is checked to be one host name or
address. On OpenShift 4.12-4.16 the machine-config daemon reboots the node for it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from snoreloc.siteconfig import checks, claims, fragments, setting

MACHINECONFIG = "99-master-snoreloc-chrony"  # ours, written by the ntp step (`steps.cluster.ntp.CHRONY_CONFIG`)
CHRONY_FILE = "/etc/chrony.conf"
NTP_MAX_SOURCES = 16  # servers and pools together: a site has a few; chrony polls each, so a long list is a mistake


# A host name or an IPv4/IPv6 address, nothing else: the value becomes one chrony.conf line, so no spaces (options)
# and no line breaks (directives); `_check` checks the whole string again, since `$` lets a final newline pass.
_NTP_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"


NTP_SOURCE_PATTERN = rf"^(?:{_NTP_LABEL}(?:\.{_NTP_LABEL})*|[0-9A-Fa-f:.]+)$"


def _ntp_sources(what: str, example: list[str]) -> dict[str, Any]:
    return fragments.prop(
        f"{what}: host names or IP addresses (no options: snoreloc adds `iburst`).",
        [example],
        type="array",
        minItems=1,
        maxItems=NTP_MAX_SOURCES,
        uniqueItems=True,
        items={
            "type": "string",
            "maxLength": 253,
            "pattern": NTP_SOURCE_PATTERN,
            "x-message": "must be a host name or an IP address, without spaces or options",
        },
    )


def _schema() -> dict[str, Any]:
    return fragments.prop(
        "Time sources for the node's chrony, written to /etc/chrony.conf by a MachineConfig. On OpenShift 4.12 to "
        "4.16 this change reboots the node (see docs/site-config.md).",
        [{"servers": ["ntp1.site.example.com", "192.0.2.123"], "pools": ["pool.site.example.com"]}],
        **fragments.obj(
            {
                "servers": _ntp_sources("NTP servers (chrony `server`)", ["ntp1.site.example.com", "192.0.2.123"]),
                "pools": _ntp_sources(
                    "NTP pools, names resolving to several servers (chrony `pool`)", ["pool.site.example.com"]
                ),
            },
            (),
            minProperties=1,
            **{"x-message": "give `servers`, `pools` or both"},
        ),
    )


@dataclass(frozen=True)
class Ntp:
    """The node's time sources (host names or IP addresses, each checked), as chrony `server` and `pool` lines."""

    servers: tuple[str, ...] = ()
    pools: tuple[str, ...] = ()


def _load(values: Mapping[str, Any] | None, checked: checks.Checked) -> Ntp | None:
    if values is None:
        return None
    return Ntp(servers=tuple(values.get("servers") or ()), pools=tuple(values.get("pools") or ()))


_NTP_SOURCE = re.compile(NTP_SOURCE_PATTERN)


NTP_KINDS = ("servers", "pools")


def ntp_source_problem(value: str) -> str | None:
    """Why `value` cannot be one chrony `server`/`pool` name, or None. It becomes a line of chrony.conf, so the whole
    string must be one host name or IP address: the schema's `$` would let a final line break through."""
    if not _NTP_SOURCE.fullmatch(value):
        return "must be one host name or IP address on one line, without spaces, options or line breaks"
    if ":" in value or value.replace(".", "").isdigit():
        try:
            address = ipaddress.ip_address(value)
        except ValueError:
            return "is not a valid IP address"
        if address.is_unspecified or address.is_multicast:
            return "is not an address a time server can have (unspecified or multicast)"
        return None
    if len(value) > checks.MAX_NAME:
        return f"is longer than {checks.MAX_NAME} characters"
    return None


def _check(run: checks.Run, spec: Mapping[str, Any]) -> None:
    path = SETTING.path
    ntp = spec.get(SETTING.key)
    if not isinstance(ntp, Mapping):
        return
    seen: dict[str, str] = {}
    for kind in NTP_KINDS:
        values = ntp.get(kind)
        for index, value in enumerate(values if isinstance(values, list) else ()):
            if not isinstance(value, str) or not run.sound((*path, kind, index)):
                continue
            problem = ntp_source_problem(value)
            if problem:
                run.error((*path, kind, index), problem)
            earlier = seen.setdefault(value.lower(), f"{kind}[{index}]")
            if earlier != f"{kind}[{index}]":
                run.error((*path, kind, index), f"already listed as {SETTING.key}.{earlier}; list each source once")
    count = sum(len(ntp[kind]) for kind in NTP_KINDS if isinstance(ntp.get(kind), list))
    if count > NTP_MAX_SOURCES and run.sound(path):
        run.error(path, f"lists {count} sources; at most {NTP_MAX_SOURCES} servers and pools together")


SETTING = setting.Setting(
    key="ntp",
    field="ntp",
    schema=_schema(),
    load=_load,
    check=_check,
    cost=setting.Cost(
        reboot="yes",
        rollouts=("mcp/master",),
        note="ntp: OpenShift 4.12-4.16 applies /etc/chrony.conf with a machine-config pool update and a REBOOT",
    ),
    owns=(
        claims.Claim(
            claims.MCO,
            "MachineConfig",
            "",
            MACHINECONFIG,
            ("spec", "ntp"),
            "snoreloc's chrony configuration",
            file=CHRONY_FILE,
        ),
    ),
    rollback=setting.Rollback(
        ("mcp/master",), True, f"the chrony MachineConfig {MACHINECONFIG} goes: the node reboots"
    ),
)

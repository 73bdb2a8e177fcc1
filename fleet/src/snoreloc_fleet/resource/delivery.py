"""How a Site's medium reaches its server (`spec.delivery`): a stick someone carries (the default), or the server's
BMC, which the hub drives (issue 36). One definition of the rules, for the controller and for `fleet validate`.

The BMC is written in the shape fleet owners already write for metal3 BareMetalHosts (metal3-io/baremetal-operator
`docs/api.md`, "BMC"): an `address` whose scheme names the driver and whose path names the Redfish System
(`redfish-virtualmedia://HOST[:PORT]/redfish/v1/Systems/ID`, HTTPS; `redfish-virtualmedia+https://` the same said
plainly; `redfish-virtualmedia+http://` without TLS), `credentialsName` (a Secret of the Site's namespace with
`username` and `password`), `disableCertificateVerification`; and, ours, the CA that verifies the BMC
(`caConfigMapKeyRef`) and what to do with the power once the image is inserted (`power`). Credentials are never
part of the address: one that carries `user:password@` is refused without being quoted.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from snoreloc.siblings import errors
from snoreloc_fleet.resource import siteinput

FIELD = "spec.delivery"
SCHEMES = {  # metal3's address schemes for Redfish virtual media -> the URL scheme the BMC answers on
    "redfish-virtualmedia": "https",
    "redfish-virtualmedia+https": "https",
    "redfish-virtualmedia+http": "http",
}
SYSTEM_PATH = re.compile(r"^/redfish/v1/Systems/[^/?#\s]+/?$")
MAX_ADDRESS = 2048


class Method(StrEnum):
    STICK = "stick"
    BMC = "bmc"


class State(StrEnum):
    """Where a BMC-delivered Site's image is (`status.delivery.state`, the BMC cycle's record: `controller.bmccycle`
    says what each means); the Site's schema and the controller's metrics name the same values."""

    INSERTED = "Inserted"
    EJECTED = "Ejected"
    TIMED_OUT = "TimedOut"
    FAILED = "Failed"
    NO_IMAGE_SERVER = "NoImageServer"


class Power(StrEnum):
    ON = "on"  # power on if off; a server already on and waiting sees the device appear
    RESTART = "restart"  # restart it so it boots with the image attached
    NONE = "none"  # leave the power to someone else


@dataclass(frozen=True)
class Bmc:
    """A Site's BMC, parsed: where Redfish answers, which System, and how to trust and log into it."""

    endpoint: str  # scheme://host[:port] for sushy
    system_path: str
    credentials_name: str
    verify: bool
    ca_ref: Mapping[str, str] | None
    power: Power


@dataclass(frozen=True)
class Delivery:
    method: Method
    bmc: Bmc | None = None


def spec_schema() -> dict[str, Any]:
    """The CRD's schema for `spec.delivery` (the controller checks the rest: `problems`)."""
    key_ref = {
        "type": "object",
        "required": ["name", "key"],
        "properties": {"name": {"type": "string", "maxLength": 253}, "key": {"type": "string", "maxLength": 253}},
    }
    return {
        "type": "object",
        "description": "How the medium reaches the server: a stick (default) or the server's BMC (Redfish virtual "
        "media), in metal3 BareMetalHost's shape.",
        "properties": {
            "method": {"type": "string", "enum": [m.value for m in Method], "default": Method.STICK.value},
            "bmc": {
                "type": "object",
                "required": ["address", "credentialsName"],
                "properties": {
                    "address": {"type": "string", "maxLength": MAX_ADDRESS},
                    "credentialsName": {"type": "string", "maxLength": 253},
                    "disableCertificateVerification": {"type": "boolean", "default": False},
                    "caConfigMapKeyRef": key_ref,
                    "power": {"type": "string", "enum": [p.value for p in Power], "default": Power.ON.value},
                },
            },
        },
    }


EXAMPLE = "redfish-virtualmedia://10.0.0.5/redfish/v1/Systems/1"


def _address_problem(address: object) -> str | None:
    """Why `address` is not a BMC address we can use (None: it is). Never quotes it (it may hold a password)."""
    if not isinstance(address, str) or not address or len(address) > MAX_ADDRESS:
        return f"give the BMC's Redfish address, e.g. {EXAMPLE}"
    split = urllib.parse.urlsplit(address)
    if split.scheme not in SCHEMES:
        return f"the scheme must be one of {', '.join(f'{s}://' for s in SCHEMES)} (e.g. {EXAMPLE})"
    if split.username is not None or split.password is not None:
        return "carries credentials: put them in the Secret named by credentialsName (username, password)"
    return _place_problem(split)


def _place_problem(split: urllib.parse.SplitResult) -> str | None:
    try:
        host, _port = split.hostname, split.port
    except ValueError:
        return "the port is not a number between 0 and 65535"
    if not host:
        return f"names no host (e.g. {EXAMPLE})"
    if not SYSTEM_PATH.match(split.path) or split.query or split.fragment:
        return f"the path must name the Redfish System, /redfish/v1/Systems/ID (e.g. {EXAMPLE})"
    return None


def _endpoint(address: str) -> tuple[str, str]:
    """(scheme://host[:port] for the Redfish client, the System's path) of a valid address."""
    split = urllib.parse.urlsplit(address)
    host = split.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    return f"{SCHEMES[split.scheme]}://{netloc}" + (f":{split.port}" if split.port else ""), split.path.rstrip("/")


def _address_problems(address: object) -> tuple[list[errors.Problem], tuple[str, str] | None]:
    problem = _address_problem(address)
    if problem is not None:
        return [errors.Problem(f"{FIELD}.bmc.address", problem)], None
    return [], _endpoint(str(address))


def _bmc_problems(bmc: Mapping[str, Any]) -> tuple[list[errors.Problem], Bmc | None]:
    found, parsed = _address_problems(bmc.get("address"))
    secret_problem = siteinput.object_name_problem(bmc.get("credentialsName"))
    if secret_problem:
        found.append(errors.Problem(f"{FIELD}.bmc.credentialsName", secret_problem))
    ca = bmc.get("caConfigMapKeyRef")
    if ca is not None:
        if not isinstance(ca, Mapping):
            found.append(errors.Problem(f"{FIELD}.bmc.caConfigMapKeyRef", "give {name, key} of a ConfigMap"))
        else:
            for part, check in (("name", siteinput.object_name_problem), ("key", siteinput.key_problem)):
                problem = check(ca.get(part))
                if problem:
                    found.append(errors.Problem(f"{FIELD}.bmc.caConfigMapKeyRef.{part}", problem))
    insecure = bmc.get("disableCertificateVerification") is True
    if insecure and ca is not None:
        message = "give one of caConfigMapKeyRef (verify the BMC with this CA) and disableCertificateVerification"
        found.append(errors.Problem(f"{FIELD}.bmc.disableCertificateVerification", message))
    power = bmc.get("power", Power.ON.value)
    if power not in {p.value for p in Power}:
        found.append(errors.Problem(f"{FIELD}.bmc.power", "one of on, restart, none"))
    if found or parsed is None:
        return found, None
    ref = {"name": str(ca["name"]), "key": str(ca["key"])} if isinstance(ca, Mapping) else None
    return [], Bmc(parsed[0], parsed[1], str(bmc["credentialsName"]), not insecure, ref, Power(power))


def read(spec: Mapping[str, Any]) -> tuple[Delivery, list[errors.Problem]]:
    """The Site's delivery and what is wrong with it (a wrong delivery falls back to the stick, with problems)."""
    given = spec.get("delivery")
    if given is None:
        return Delivery(Method.STICK), []
    if not isinstance(given, Mapping):
        return Delivery(Method.STICK), [errors.Problem(FIELD, "give {method: stick} or {method: bmc, bmc: {...}}")]
    method = given.get("method", Method.STICK.value)
    if method not in {m.value for m in Method}:
        return Delivery(Method.STICK), [errors.Problem(f"{FIELD}.method", "one of stick, bmc")]
    bmc = given.get("bmc")
    if method == Method.STICK.value:
        return Delivery(Method.STICK), []
    if not isinstance(bmc, Mapping):
        needed = errors.Problem(f"{FIELD}.bmc", "method bmc needs bmc: {address, credentialsName}")
        return Delivery(Method.STICK), [needed]
    found, parsed = _bmc_problems(bmc)
    return (Delivery(Method.BMC, parsed), []) if parsed else (Delivery(Method.STICK), found)

"""The site's BMC as the hub drives it: Redfish through `sushy` (the client OpenStack Ironic and metal3 use), so the
vendors' quirks are sushy's (SuperMicro refusing `Inserted`/`WriteProtected` on InsertMedia, Lenovo's PATCH with
`If-Match`, BMCs that need `TransferProtocolType` named: `sushy/resources/manager/virtual_media.py`,
`insert_media`), not ours.

What the controller needs and nothing more: the System the Site's address names, its CD/DVD virtual media device
(under the System, where newer BMCs put it, else under the System's Managers), insert an image by URL, eject it,
what is inserted now, and the power. Every failure becomes a `BmcError` of a kind the fleet owner can act on
(wrong credentials, unreachable, certificate, device busy or missing, refused) carrying the BMC's own message;
the credentials are never part of a message.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import requests
import sushy
from sushy import exceptions as sushy_errors

from snoreloc.siblings import redact
from snoreloc_fleet.resource import delivery

CD_TYPES = ("CD", "DVD")
TIMEOUT = 30.0  # seconds a Redfish request waits for the BMC's answer (sushy's `read_timeout`; its default is 60)
CONNECT_TIMEOUT = 10.0  # seconds to connect to the BMC (sushy's `connect_timeout`; at most the request's timeout)
# sushy tries a request that did not connect, timed out (or a BMC's 5xx on a GET) this many times, this many seconds
# apart (its defaults, 10 and 3, hold a controller's BMC worker 30 s per pass on an unreachable BMC; the cycle retries
# with back-off)
RETRIES = 3
RETRY_DELAY = 1


def longest_wait(timeout: float = TIMEOUT) -> float:
    """The longest one Redfish request can hold a BMC worker when the BMC accepts the connection but never answers:
    sushy's connector (`Connector._op`) retries a read timeout as a transient error, `RETRIES` times in all."""
    return RETRIES * timeout + (RETRIES - 1) * RETRY_DELAY


class Problem(enum.StrEnum):
    CREDENTIALS = "BMCCredentials"
    UNREACHABLE = "BMCUnreachable"
    CERTIFICATE = "BMCCertificate"
    NO_DEVICE = "BMCNoVirtualMedia"
    REFUSED = "BMCRefused"


ADVICE = {
    Problem.CREDENTIALS: "check the username and password in the Secret named by spec.delivery.bmc.credentialsName",
    Problem.UNREACHABLE: "check spec.delivery.bmc.address and that the hub can reach the BMC; retrying",
    Problem.CERTIFICATE: "give the BMC's CA (spec.delivery.bmc.caConfigMapKeyRef), or set "
    "disableCertificateVerification if you accept an unverified BMC",
    Problem.NO_DEVICE: "this BMC offers no CD/DVD virtual media for the System: deliver this site by stick",
    Problem.REFUSED: "the BMC refused the request; its message says why",
}


class BmcError(Exception):
    def __init__(self, problem: Problem, message: str) -> None:
        super().__init__(redact.redact(message))
        self.problem = problem
        self.advice = ADVICE[problem]


@dataclass(frozen=True)
class Media:
    """What the System's virtual CD/DVD holds now."""

    inserted: bool
    image: str | None  # the URL it was given (the hub's signed URL: never logged by us)


@dataclass(frozen=True)
class Login:
    username: str
    password: str


def _classify(exc: BaseException) -> BmcError:
    if isinstance(exc, sushy_errors.AccessError):
        return BmcError(Problem.CREDENTIALS, f"the BMC refused the credentials (HTTP {exc.status_code})")
    if isinstance(exc, requests.exceptions.SSLError) or "CERTIFICATE_VERIFY_FAILED" in str(exc):
        return BmcError(Problem.CERTIFICATE, "the BMC's certificate is not trusted")
    if isinstance(exc, sushy_errors.ConnectionError | requests.exceptions.ConnectionError):
        return BmcError(Problem.UNREACHABLE, "the BMC did not answer")
    if isinstance(exc, sushy_errors.HTTPError):
        return BmcError(Problem.REFUSED, f"HTTP {exc.status_code}: {exc.detail or exc.message}")
    return BmcError(Problem.REFUSED, f"{type(exc).__name__}: {exc}")


class Bmc:
    """One Site's BMC. `verify`: True (the system's CAs), a CA bundle file's path, or False; `timeout`: seconds each
    request waits for the BMC's answer (`longest_wait` bounds a request, retries included)."""

    def __init__(self, bmc: delivery.Bmc, login: Login, verify: bool | str, timeout: float = TIMEOUT) -> None:
        redact.register_secret(login.password)
        self._bmc = bmc
        try:
            # HTTP basic auth, as metal3 and the emulators use it: no session to create, renew or leak
            auth = sushy.auth.BasicAuth(username=login.username, password=login.password)
            self._root = sushy.Sushy(
                bmc.endpoint,
                verify=verify,
                auth=auth,
                server_side_retries=RETRIES,
                server_side_retries_delay=RETRY_DELAY,
                read_timeout=timeout,
                connect_timeout=min(CONNECT_TIMEOUT, timeout),
            )
        except Exception as exc:
            raise _classify(exc) from None

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BmcError:
            raise
        except Exception as exc:
            raise _classify(exc) from None

    def _system(self) -> Any:
        return self._call(self._root.get_system, self._bmc.system_path)

    def _devices(self, system: Any) -> Iterator[Any]:
        with contextlib.suppress(sushy_errors.MissingAttributeError):
            yield from system.virtual_media.get_members()
        for manager in system.managers:
            yield from manager.virtual_media.get_members()

    def device(self) -> Any:
        """The System's CD/DVD virtual media device (under the System first, then its Managers)."""

        def find() -> Any:
            for device in self._devices(self._system()):
                if any(str(kind.value if hasattr(kind, "value") else kind) in CD_TYPES for kind in device.media_types):
                    return device
            raise BmcError(Problem.NO_DEVICE, f"no CD/DVD virtual media for {self._bmc.system_path}")

        return self._call(find)

    def media(self) -> Media:
        device = self.device()
        return Media(bool(device.inserted), device.image or None)

    def insert(self, url: str) -> None:
        """Attach the image at `url` (ejecting what is there first), write-protected."""
        device = self.device()
        if device.inserted:
            self._call(device.eject_media)
            device.refresh()
        self._call(device.insert_media, url, inserted=True, write_protected=True)

    def eject(self) -> None:
        device = self.device()
        if device.inserted:
            self._call(device.eject_media)

    def powered(self) -> bool:
        return bool(self._call(lambda: self._system().power_state) == sushy.POWER_STATE_ON)

    def power(self, action: delivery.Power) -> None:
        """Apply the Site's power choice now that the image is inserted."""
        if action is delivery.Power.NONE:
            return
        system = self._system()
        off = system.power_state == sushy.POWER_STATE_OFF
        if action is delivery.Power.ON and not off:
            return  # a server already on and waiting sees the device appear
        value = sushy.RESET_ON if off else sushy.RESET_FORCE_RESTART
        self._call(system.reset_system, value)

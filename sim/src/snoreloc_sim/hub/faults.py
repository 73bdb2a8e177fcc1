"""Faults a hub test injects on purpose, to prove a controller or a reporter survives what a real hub does.

- `fail_next` / `conflict_next`: the next write (or any verb given) to one object is refused; a conflict (409)
  first moves the object's resourceVersion on, as a concurrent writer would, so a client that re-reads sees why.
- `expire_watches`: the watch history is compacted (`watch.History.compact`): every open watch ends with an
  ERROR event (410 Expired) and resuming from any earlier resourceVersion gets 410; continue tokens expire too.
- `restart`: every connection, watches included, is dropped; the history survives (etcd keeps its revisions).
- `latency`: seconds added before each request is handled.
The refusals carry the Status kube-apiserver sends for them (409 `Conflict`: "the object has been modified",
staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go `Update`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from snoreloc_sim.hub import rbac
from snoreloc_sim.kube import model

WRITE_VERBS = frozenset({"create", "update", "patch", "delete"})
_MESSAGES = {
    409: "the object has been modified; please apply your changes to the latest version and try again",
    500: "Internal error occurred: injected fault",
    503: "the server is currently unable to handle the request",
}
_REASONS = {409: "Conflict", 500: "InternalError", 503: "ServiceUnavailable", 429: "TooManyRequests"}


@dataclass
class _Planned:
    resource: str  # plural, or plural.group
    name: str
    namespace: str
    code: int
    verbs: frozenset[str]
    times: int


class HubFaults:
    """The hub's fault switches; thread-safe. `bump(attrs)` moves an object's resourceVersion on."""

    def __init__(self, bump: Callable[[rbac.Attributes], None]) -> None:
        self._bump = bump
        self._lock = threading.Lock()
        self._planned: list[_Planned] = []
        self.latency = 0.0
        self.fired: list[str] = []  # "<code> <verb> <resource> <namespace>/<name>", for assertions

    def fail_next(
        self,
        resource: str,
        name: str,
        namespace: str = "",
        *,
        code: int = 409,
        verbs: frozenset[str] = WRITE_VERBS,
        times: int = 1,
    ) -> None:
        """Refuse the next `times` requests with one of `verbs` on that object with `code`."""
        with self._lock:
            self._planned.append(_Planned(resource, name, namespace, code, frozenset(verbs), times))

    def conflict_next(self, resource: str, name: str, namespace: str = "", *, times: int = 1) -> None:
        self.fail_next(resource, name, namespace, code=409, times=times)

    def refusal(self, attrs: rbac.Attributes) -> model.ApiError | None:
        """The injected refusal for this request, if one is planned."""
        with self._lock:
            planned = next((p for p in self._planned if _matches(p, attrs)), None)
            if planned is None:
                return None
            planned.times -= 1
            if planned.times <= 0:
                self._planned.remove(planned)
            self.fired.append(f"{planned.code} {attrs.verb} {planned.resource} {attrs.namespace}/{attrs.name}")
        if planned.code == 409:
            self._bump(attrs)
        qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
        message = _MESSAGES.get(planned.code, "injected fault")
        if planned.code == 409:
            message = f'Operation cannot be fulfilled on {qualified} "{attrs.name}": {message}'
        details = {"name": attrs.name, "group": attrs.api_group, "kind": attrs.resource}
        return model.ApiError(planned.code, _REASONS.get(planned.code, "InternalError"), message, details=details)


def _matches(planned: _Planned, attrs: rbac.Attributes) -> bool:
    qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
    return (
        planned.resource in (attrs.resource, qualified)
        and planned.name == attrs.name
        and planned.namespace == attrs.namespace
        and attrs.verb in planned.verbs
    )

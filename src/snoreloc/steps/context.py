"""What a cluster step is given: the site-config, the API, the clock, and the engine's services behind Protocols.

Steps sit below the engine in the layer order, so the engine's journal and backup store reach them only through
the small Protocols declared here (the engine implements them; tests may pass fakes). A step never touches
`time`, sockets or files itself: the clock, the TLS dial and the resolver come in through this context.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.siteconfig import model, setting

Obj = kube.Obj
Dialer = Callable[[tuple[str, int], str], bytes]
Resolver = Callable[[str], list[str]]
Client = kube.Client
_DEFAULT_DIAL: Dialer = kube.dial_tls
_DEFAULT_RESOLVE: Resolver = kube.resolve


@dataclass(frozen=True)
class Keep:
    """What a backup records beside the original. `rollback`: what restoring the object sets in motion (the
    setting's declaration; None: not declared, `rollback` judges by the object's kind). `labels`: only these label
    keys of the object are ours to put back (the node's labels): None keeps and restores the whole object."""

    rollback: setting.Rollback | None = None
    labels: tuple[str, ...] | None = None


WHOLE = Keep()  # the whole object, no declared effect


class Backups(Protocol):
    """Keeps the original of every object before our first change to it."""

    def save(self, ref: kube.Ref, original: Obj | None, keep: Keep = WHOLE) -> None:
        """Record `original` (None: the object did not exist, we create it) unless one is already kept; with
        `keep.labels`, the original values of those label keys (keys an earlier save did not cover are added)."""

    def save_many(self, originals: Sequence[tuple[kube.Ref, Obj | None]]) -> None:
        """`save` for many objects at once, durably, before the first write to any of them."""


class Rollouts(Protocol):
    """The operators (and `mcp/master`) our writes set in motion, with the wall time of our last such write."""

    def pending(self) -> Mapping[str, datetime]: ...

    def settled(self, names: list[str]) -> None: ...

    def observe(self, name: str, busy: bool, since: datetime) -> None:
        """A rollout's progress condition as seen now (busy: rolling out), since its last transition."""


@dataclass(frozen=True)
class Settings:
    """Knobs from the command line; times are seconds of the injected clock."""

    ingress_endpoint: tuple[str, int] | None = None  # default: the API host, port 443
    route_workers: int = 16
    poll_interval: float = 2.0  # the settle's last look lands up to this long after the last rollout ended
    ignore_preflight: bool = False
    cert_renew_before_days: int = 30
    operator_regen_timeout: float = 300.0
    csr_wait: float = 0.0  # how long the csr step waits for pending CSRs to appear (0: look once)
    node_name: str | None = None
    on_node: bool = False  # the node flow: `resolve` is the node's own resolver, as the cluster's pods see it


@dataclass
class Context:
    """Everything a step may use. `deadline` is the clock's monotonic time the whole run must end by."""

    site: model.SiteConfig
    kube: Client
    clock: clock_mod.Clock
    backups: Backups
    rollouts: Rollouts
    settings: Settings = Settings()
    dial: Dialer = _DEFAULT_DIAL
    resolve: Resolver = _DEFAULT_RESOLVE
    deadline: float | None = None
    warnings: list[str] = field(default_factory=list)

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - self.clock.monotonic()

    @property
    def ingress_endpoint(self) -> tuple[str, int]:
        return self.settings.ingress_endpoint or (self.kube.endpoint[0], 443)

    @property
    def api_endpoint(self) -> tuple[str, int]:
        return self.kube.endpoint

"""The site's network, applied so that a bad one can never strand the node.

The order is nmstate's transaction: apply the desired state *without committing* under a rollback timeout, probe
what the site needs (default gateway, DNS servers, optionally the registry), then commit; if a probe fails, roll
back explicitly and fail with what did not answer. Nothing commits before every probe passed.

If the agent dies between apply and commit (power cut, OOM, kill), NetworkManager restores the checkpoint by itself
when the rollback timeout expires, so the node is back on the network it had and a re-run starts over. For that to
hold, the rollback timeout is longer than the whole probe window (enforced by `Policy`).

At first boot NetworkManager can refuse an apply for a while (devices still settling), so an apply that fails in a
retryable way is tried again a bounded number of times with exponential backoff. An apply that nmstate rejects as
invalid is the site-config's fault and is not retried. When the current state already contains everything the
site asks for, nothing is applied at all (a re-run changes nothing).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from snoreloc import errors
from snoreloc.adapters import clock, nmstate, probe

LOG = logging.getLogger(__name__)

DEFAULT_ROUTES = ("0.0.0.0/0", "::/0")
PROBE_HINT = (
    "The node is back on its previous network. Check the cabling and VLAN, and the addresses, gateway and DNS "
    "servers in the site-config's `network` section; then run `snoreloc run` again."
)
INVALID_HINT = "Fix the `network` section of the site-config (nmstate's message above says what it rejected)."
RETRY_HINT = "NetworkManager kept refusing the change; the node keeps its previous network. Run `snoreloc run` again."

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Policy:
    """Bounds of the network step; the rollback timeout must outlast the probe window."""

    rollback_timeout: int = 180
    probe_window: float = 90.0
    probe_interval: float = 5.0
    attempts: int = 4
    backoff: float = 10.0

    def __post_init__(self) -> None:
        if self.rollback_timeout < self.probe_window + 30:
            raise ValueError("rollback_timeout must exceed probe_window by at least 30 s")
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")


class Change(enum.Enum):
    UNCHANGED = "unchanged"
    APPLIED = "applied"


@dataclass(frozen=True)
class Outcome:
    """What the step did, after how many apply attempts, and what the probes saw."""

    change: Change
    attempts: int = 0
    checks: tuple[probe.Check, ...] = ()


def converge(
    backend: nmstate.NmstateBackend,
    prober: probe.Prober,
    clk: clock.Clock,
    desired: dict[str, Any],
    *,
    registry: tuple[str, int] | None = None,
    policy: Policy = Policy(),
    progress: Progress = LOG.info,
) -> Outcome:
    """Bring the node to `desired`, or leave it on the network it had and raise."""
    if matches(desired, backend.show()):
        progress("network: already as the site-config asks; nothing to apply")
        return Outcome(Change.UNCHANGED)
    targets = probe_targets(desired, registry)
    if not targets:
        LOG.warning("network: the desired state names no default gateway or DNS server; nothing to probe")
    for attempt in range(1, policy.attempts + 1):
        checkpoint = _apply(backend, desired, policy, attempt)
        if checkpoint is not None:
            checks = _probe_then_commit(backend, prober, clk, checkpoint, targets=targets, policy=policy)
            return Outcome(Change.APPLIED, attempt, checks)
        delay = policy.backoff * 2 ** (attempt - 1)
        progress(
            f"network: NetworkManager refused the change (attempt {attempt}/{policy.attempts}); retry in {delay:g}s"
        )
        clk.sleep(delay)
    raise errors.InternalError("unreachable: the last attempt either returns or raises")


def _apply(
    backend: nmstate.NmstateBackend, desired: dict[str, Any], policy: Policy, attempt: int
) -> nmstate.Checkpoint | None:
    """The checkpoint of a pending apply; None when a retryable failure should be tried again."""
    try:
        checkpoint = backend.apply(desired, commit=False, rollback_timeout=policy.rollback_timeout)
    except nmstate.ApplyFailed as exc:
        if not exc.retryable:
            raise errors.ConfigError(f"nmstate rejected the site network: {exc.detail}", hint=INVALID_HINT) from exc
        if attempt >= policy.attempts:
            raise errors.TemporaryError(
                f"nmstate failed {attempt} times to apply the site network: {exc.detail}", hint=RETRY_HINT
            ) from exc
        LOG.warning("network: apply attempt %d failed: %s", attempt, exc.detail)
        return None
    return checkpoint or nmstate.Checkpoint()


def _probe_then_commit(
    backend: nmstate.NmstateBackend,
    prober: probe.Prober,
    clk: clock.Clock,
    checkpoint: nmstate.Checkpoint,
    *,
    targets: list[probe.Target],
    policy: Policy,
) -> tuple[probe.Check, ...]:
    try:
        checks = probe_until_ok(prober, clk, targets, policy)
    except BaseException:
        backend.rollback(checkpoint)
        raise
    failed = [check for check in checks if not check.ok]
    if failed:
        backend.rollback(checkpoint)
        summary = "; ".join(f"{check.target}: {check.detail}" for check in failed)
        raise errors.TemporaryError(
            f"the site network failed its checks and was rolled back: {summary}", hint=PROBE_HINT
        )
    backend.commit(checkpoint)
    return checks


def probe_until_ok(
    prober: probe.Prober, clk: clock.Clock, targets: list[probe.Target], policy: Policy
) -> tuple[probe.Check, ...]:
    """Probe every target until all pass or the probe window closes; returns the last round's verdicts."""
    deadline = clk.monotonic() + policy.probe_window
    while True:
        checks = tuple(prober.check(target) for target in targets)
        if all(check.ok for check in checks) or clk.monotonic() >= deadline:
            return checks
        clk.sleep(min(policy.probe_interval, max(deadline - clk.monotonic(), 0.0)))


def probe_targets(desired: dict[str, Any], registry: tuple[str, int] | None = None) -> list[probe.Target]:
    """Default gateways and DNS servers named in the desired state, plus the registry when given."""
    targets = list(_gateways(desired))
    servers = desired.get("dns-resolver", {}).get("config", {}).get("server", []) or []
    targets += [probe.Target(probe.Kind.DNS, str(server)) for server in servers]
    if registry is not None:
        targets.append(probe.Target(probe.Kind.TCP, registry[0], registry[1]))
    return list(dict.fromkeys(targets))


def _gateways(desired: dict[str, Any]) -> Iterator[probe.Target]:
    for route in desired.get("routes", {}).get("config", []) or []:
        if (
            route.get("destination") in DEFAULT_ROUTES
            and route.get("state") != "absent"
            and "next-hop-address" in route
        ):
            yield probe.Target(
                probe.Kind.GATEWAY, str(route["next-hop-address"]), interface=route.get("next-hop-interface")
            )


def matches(desired: Any, current: Any) -> bool:
    """True when `current` already holds everything in `desired` (a subset match; list items matched by content)."""
    if isinstance(desired, dict):
        if desired.get("state") == "absent":
            return False
        return isinstance(current, dict) and all(
            key in current and matches(value, current[key]) for key, value in desired.items()
        )
    if isinstance(desired, list):
        if not isinstance(current, list):
            return False
        if all(not isinstance(item, dict | list) for item in desired):
            return [_scalar(item) for item in desired] == [_scalar(item) for item in current]
        return all(any(matches(item, candidate) for candidate in current) for item in desired)
    return _scalar(desired) == _scalar(current)


def _scalar(value: Any) -> str:
    return str(value).lower()

"""The site's network, applied so that a bad one can never strand the node.

The order is nmstate's transaction: apply the desired state *without committing* under a rollback timeout, probe
what the site says must be reachable (`spec.networkProbes`: by default each default gateway and DNS server, plus
any TCP targets), then commit; if a probe fails, roll back explicitly and fail with what did not answer. Nothing
commits before every probe passed, and a change with nothing to probe is never committed unless the site-config
says `networkProbes: none`. Gateways and DNS servers learnt by DHCP are read from the state after the apply.

If the agent dies between apply and commit (power cut, OOM, kill), NetworkManager restores the checkpoint by itself
when the rollback timeout expires, so the node is back on the network it had and a re-run starts over. For that to
hold, the rollback timeout is longer than the whole probe window (enforced by `Policy`).

At first boot NetworkManager can refuse an apply for a while (devices still settling), so an apply that fails in a
retryable way is tried again a bounded number of times with exponential backoff. An apply that nmstate rejects as
invalid is the site-config's fault and is not retried. When the current state already contains everything the
site asks for, nothing is applied at all (a re-run changes nothing); "contains" compares the way nmstate's own
verification does: addresses in canonical form, and an interface or route marked `state: absent` is satisfied by
its absence.
"""

from __future__ import annotations

import enum
import ipaddress
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from snoreloc import errors, waits
from snoreloc.adapters import clock, nmstate, probe
from snoreloc.siteconfig import model, nmstate_check
from snoreloc.siteconfig.settings import network_probes

LOG = logging.getLogger(__name__)

PROBE_HINT = (
    "The node is back on its previous network. Check the cabling and VLAN, and the addresses, gateway and DNS "
    "servers in the site-config's `network` section; then run `snoreloc run` again."
)
INVALID_HINT = "Fix the `network` section of the site-config (nmstate's message above says what it rejected)."
NOTHING_HINT = (
    "Name a default gateway or DNS server in the site-config's `network`, add "
    f"`{network_probes.KEY}.tcp` targets, or set `{network_probes.NONE_SAID}` to commit without "
    "checking."
)
RETRY_HINT = "NetworkManager kept refusing the change; the node keeps its previous network. Run `snoreloc run` again."

Progress = Callable[[str], None]
DEFAULT_PROBES = model.NetworkProbes()


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


class Convergence(enum.Enum):
    UNCHANGED = "unchanged"
    APPLIED = "applied"


@dataclass(frozen=True)
class ConvergeResult:
    """What the step did, after how many apply attempts, and what the probes saw."""

    change: Convergence
    attempts: int = 0
    checks: tuple[probe.Check, ...] = ()


def converge(
    backend: nmstate.NmstateBackend,
    prober: probe.Prober,
    clk: clock.Clock,
    desired: dict[str, Any],
    *,
    probes: model.NetworkProbes = DEFAULT_PROBES,
    policy: Policy = Policy(),
    progress: Progress = LOG.info,
) -> ConvergeResult:
    """Bring the node to `desired`, or leave it on the network it had and raise."""
    if matches(desired, backend.show()):
        progress("network: already as the site-config asks; nothing to apply")
        return ConvergeResult(Convergence.UNCHANGED)
    for attempt in range(1, policy.attempts + 1):
        checkpoint = _apply(backend, desired, policy, attempt)
        if checkpoint is not None:
            checks = _probe_then_commit(backend, prober, clk, checkpoint, desired=desired, probes=probes, policy=policy)
            return ConvergeResult(Convergence.APPLIED, attempt, checks)
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
    desired: dict[str, Any],
    probes: model.NetworkProbes,
    policy: Policy,
) -> tuple[probe.Check, ...]:
    try:
        checks = _checked(backend, prober, clk, desired, probes=probes, policy=policy)
    except BaseException:
        backend.rollback(checkpoint)
        raise
    backend.commit(checkpoint)
    return checks


def _checked(
    backend: nmstate.NmstateBackend,
    prober: probe.Prober,
    clk: clock.Clock,
    desired: dict[str, Any],
    *,
    probes: model.NetworkProbes,
    policy: Policy,
) -> tuple[probe.Check, ...]:
    if not probes.enabled:
        LOG.warning("network: committing without probes, as the site-config asks (%s)", network_probes.NONE_SAID)
        return ()
    targets = probe_targets(desired, probes, applied=backend.show() if nmstate_check.dynamic(desired) else None)
    if not targets:
        raise errors.TemporaryError(
            "the site network was rolled back: nothing to probe (no default gateway, DNS server or TCP target)",
            hint=NOTHING_HINT,
        )
    return probe_until_ok(prober, clk, targets, policy)


def probe_until_ok(
    prober: probe.Prober, clk: clock.Clock, targets: list[probe.Target], policy: Policy
) -> tuple[probe.Check, ...]:
    """Probe every target until all pass; TemporaryError naming each failure once the probe window closes."""
    last: list[tuple[probe.Check, ...]] = []

    def round_() -> tuple[probe.Check, ...] | None:
        checks = tuple(prober.check(target) for target in targets)
        last[:] = [checks]
        failed = [check for check in checks if not check.ok]
        if failed:
            raise errors.TemporaryError(_summary(failed))
        return checks

    what = "the site network to answer: " + ", ".join(str(target) for target in targets)
    wait = waits.Wait("network", what, policy.probe_window, interval=policy.probe_interval)
    try:
        return waits.until(round_, wait, clk)
    except errors.WaitTimeout as exc:
        failed = [check for check in (last[0] if last else ()) if not check.ok]
        raise errors.TemporaryError(
            f"the site network failed its checks for {policy.probe_window:g}s and was rolled back: "
            f"{_summary(failed) or exc.message}",
            hint=PROBE_HINT,
        ) from exc


def _summary(failed: list[probe.Check]) -> str:
    return "; ".join(f"{check.target}: {check.detail}" for check in failed)


def probe_targets(
    desired: Mapping[str, Any],
    probes: model.NetworkProbes = DEFAULT_PROBES,
    *,
    applied: Mapping[str, Any] | None = None,
) -> list[probe.Target]:
    """What must answer: default gateways and DNS servers (of `desired`, else as learnt in `applied`), TCP targets."""
    targets: list[probe.Target] = []
    if probes.gateway:
        gateways = nmstate_check.default_gateways(desired) or _running_gateways(applied)
        targets += [probe.Target(probe.Kind.GATEWAY, address, interface=iface) for address, iface in gateways]
    if probes.dns:
        servers = nmstate_check.dns_servers(desired) or _running_servers(applied)
        targets += [probe.Target(probe.Kind.DNS, server) for server in servers]
    targets += [probe.Target(probe.Kind.TCP, host, port) for host, port in probes.tcp]
    return list(dict.fromkeys(targets))


def _running_gateways(applied: Mapping[str, Any] | None) -> list[tuple[str, str | None]]:
    if applied is None:
        return []
    return nmstate_check.default_gateways({"routes": {"config": applied.get("routes", {}).get("running") or []}})


def _running_servers(applied: Mapping[str, Any] | None) -> list[str]:
    if applied is None:
        return []
    running = applied.get("dns-resolver", {}).get("running") or {}
    return nmstate_check.dns_servers({"dns-resolver": {"config": running}})


def matches(desired: Any, current: Any) -> bool:
    """True when `current` already holds everything in `desired`, compared as nmstate's verification compares.

    A subset match: list items are matched by content, addresses in canonical form, and an item marked
    `state: absent` is satisfied when nothing in `current` matches it but what the same list also asks for (an
    interface still listed but down or absent counts as gone: nmstate keeps showing a physical NIC whose profile it
    removed). The exception is nmstate's: "remove every default route, add this one" verifies once only the new one is
    left (nmstate/nmstate rust/src/lib/query_apply/route.rs: an absent route is removed "unless another matching
    route been added").
    """
    if isinstance(desired, dict):
        return isinstance(current, dict) and all(
            key in current and matches(value, current[key]) for key, value in desired.items()
        )
    if isinstance(desired, list):
        if not isinstance(current, list):
            return False
        if all(not isinstance(item, dict | list) for item in desired):
            return [_scalar(item) for item in desired] == [_scalar(item) for item in current]
        return all(_held(item, current, desired) for item in desired)
    return _scalar(desired) == _scalar(current)


def _held(item: Any, current: list[Any], siblings: list[Any]) -> bool:
    if not _absent(item):
        return any(matches(item, candidate) for candidate in current)
    wanted = {key: value for key, value in item.items() if key != "state"}
    if "name" in wanted:
        wanted = {"name": wanted["name"]}
    also_asked = [sibling for sibling in siblings if not _absent(sibling)]
    return not any(
        matches(wanted, c) and c.get("state") not in ("absent", "down") and not any(matches(a, c) for a in also_asked)
        for c in current
        if isinstance(c, dict)
    )


def _absent(item: Any) -> bool:
    return isinstance(item, dict) and item.get("state") == "absent"


def _scalar(value: Any) -> str:
    text = str(value).lower()
    try:
        return str(ipaddress.ip_interface(text)) if "/" in text else str(ipaddress.ip_address(text))
    except ValueError:
        return text


def describe(desired: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """What applying `desired` would change on `current`, one line per interface, plus routes and DNS (for `plan`)."""
    lines = [line for iface in desired.get("interfaces") or [] for line in _interface_lines(iface, current)]
    routes = (desired.get("routes") or {}).get("config") or []
    held = (current.get("routes") or {}).get("config") or []
    lines += [f"route {_short(route)}: {_route_verb(route)}" for route in routes if not _held(route, held, routes)]
    dns = (desired.get("dns-resolver") or {}).get("config")
    shown = (current.get("dns-resolver") or {}).get("config") or {}
    if dns is not None and not matches(dns, shown):
        lines.append(f"dns-resolver: {_short(shown)} -> {_short(dns)}")
    return lines


def _interface_lines(iface: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    name = iface.get("name")
    existing = [c for c in current.get("interfaces") or [] if isinstance(c, dict) and c.get("name") == name]
    if iface.get("state") == "absent":
        gone = _held(dict(iface), existing, [])
        return [] if gone else [f"interface {name}: remove"]
    if not existing:
        return [f"interface {name}: add {_short({k: v for k, v in iface.items() if k != 'name'})}"]
    before = existing[0]
    return [
        f"interface {name}: {key}: {_short(before.get(key))} -> {_short(value)}"
        for key, value in iface.items()
        if key != "name" and not (key in before and matches(value, before[key]))
    ]


def _route_verb(route: Mapping[str, Any]) -> str:
    return "remove" if route.get("state") == "absent" else "add"


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, sort_keys=True, separators=(", ", ": ")) if value is not None else "(none)"
    return text if len(text) <= limit else text[: limit - 3] + "..."

"""The fleet's gate: a node whose wave does not let it go yet waits before its first cluster write (issue 33).

A fleet owner ships in waves: the hub's controller writes, on each Site of a wave, `status.gate` (`{state: Open |
Held, wave, batch, cause, since}`; names and bounds in `snoreloc.engine.hubreport`). Once the site network is
committed and the API answers (the `api` step), and before the first step that writes to the cluster (`csr`
approves the node's CSRs), a node whose medium carries a reporting kubeconfig reads its own Site's status with that
kubeconfig's token (it may read nothing else) and:

- no gate (the Site is in no wave) or Open: goes;
- Held (or a state this agent does not know): waits, asking every `POLL` seconds, bounded by the site's
  `timeouts.fleetHold`, shown as "held by the fleet: <cause>" on the console banner, systemd's status line, the
  progress page and `snoreloc status`; goes as soon as the gate opens; at the bound stops with exit 75, having
  changed nothing on the cluster;
- no answer (unreachable through a minute of retries, a revoked token's 401/403, no such Site, any refusal): the
  site's offline policy, the kubeconfig extension's `offline`: `proceed` (the default) goes with a warning, `hold`
  waits as for Held. Once the hub has said Held, losing it keeps the hold: the fleet's last word stands.

A node whose journal shows a cluster step started is never held: a halted wave never strands a node mid-relocation.
The hold is not counted in the whole run's deadline (the wait is added to its deadline), and while
it lasts systemd's start timeout is pushed out (`systemd.extend_timeout`). The cause comes from the hub: it is shown
redacted, its control characters as escapes, cut to `hubreport.MAX_GATE_CAUSE` characters.
"""

from __future__ import annotations

import logging
import pathlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NoReturn

from snoreloc import errors, redact, sanitize, waits
from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.engine import hubreport, journal, view
from snoreloc.siteconfig.settings import timeouts as timeouts_setting
from snoreloc.steps import base, context

LOG = logging.getLogger(__name__)

STEP = view.FLEET_GATE_STEP
POLL = 60.0  # seconds between two questions while held: 2,000 held nodes ask their hub ~33 times a second
HELD_BY = "held by the fleet"
WAITED_FOR = "the fleet to let this node go"
HINT = (
    "Nothing on the cluster was changed. The fleet owner opens this site's batch or resumes its wave on the hub "
    "(`snoreloc fleet status`, the Site's status.gate); then reboot the node or run `snoreloc run`: it asks again."
)
OFFLINE_HINT = (
    "Nothing on the cluster was changed. Restore the site's network path to the fleet hub (or have the fleet owner "
    "reissue the stick if its token was revoked); then reboot the node or run `snoreloc run`: it asks again."
)

Show = Callable[[str], None]
KeepAlive = Callable[[], object]
ClientFactory = Callable[[hubreport.Target], kube.Client]
# One question rides out a hub that blinks (the site network just committed, a hub's API server restarting) for up
# to a minute of retries before the offline policy applies; a refused token (401/403) is an answer at once.
ASKING = kube.Policy(
    attempts=6, total=60.0, backoff_initial=2.0, backoff_max=20.0, connect_timeout=5.0, read_timeout=10.0, pool_size=1
)


def shown(value: object, limit: int = hubreport.MAX_GATE_CAUSE) -> str:
    """Text from the hub, fit for a console, a page and a log line: secrets masked, controls as escapes, bounded."""
    return sanitize.visible(redact.redact(str(value)), keep_lines=False)[:limit]


@dataclass(frozen=True)
class Gate:
    """What the hub wrote on this node's Site (`status.gate`), already made fit to show."""

    state: str = ""  # "": the Site is in no wave
    wave: str = ""
    batch: int | None = None
    cause: str = ""
    since: str = ""

    @property
    def holds(self) -> bool:
        """Only Open (or no gate at all) lets the node go: a state this agent does not know holds it."""
        return self.state not in ("", hubreport.GATE_OPEN)

    @property
    def line(self) -> str:
        """What people see while it holds: "held by the fleet: <cause>"."""
        if self.cause:
            return f"{HELD_BY}: {self.cause}"
        where = f"wave {self.wave}" if self.wave else "its wave"
        where += f", batch {self.batch}," if self.batch is not None else ""
        known = "" if self.state == hubreport.GATE_HELD else f" (gate state {self.state})"
        return f"{HELD_BY}: {where} does not let this node go yet{known}"


def gate_of(status: Mapping[str, Any]) -> Gate:
    """The gate in a Site's `status`, whatever shape the hub served (no gate: `Gate()`)."""
    raw = status.get(hubreport.GATE_FIELD)
    if not isinstance(raw, Mapping):
        return Gate()
    batch = raw.get("batch")
    fits = isinstance(batch, int) and not isinstance(batch, bool) and 0 <= batch <= hubreport.MAX_BATCH
    return Gate(
        state=shown(raw.get("state") or "unknown", 32),  # a gate without a state is not an open one
        wave=shown(raw.get("wave") or "", hubreport.MAX_WAVE_NAME),
        batch=batch if fits else None,
        cause=shown(raw.get("cause") or ""),
        since=shown(raw.get("since") or "", 40),
    )


def ask(client: kube.Client, target: hubreport.Target) -> Gate:
    """One question to the hub: this Site's status (`GET .../sites/NAME/status`, the only read its token has)."""
    obj = client.request("GET", target.path)
    status = obj.get("status") if isinstance(obj, Mapping) else None
    return gate_of(status if isinstance(status, Mapping) else {})


def started(doc: journal.Document, cluster_steps: Sequence[str]) -> str:
    """The first cluster step this node's journal shows started ("" when none): such a node is never held."""
    for name in cluster_steps:
        record = doc.steps.get(name)
        if record is not None and (record.state is not journal.StepState.PENDING or record.started is not None):
            return name
    return ""


def _unanswered(exc: Exception) -> str:
    """Why the hub gave no answer, in a few words (the details go to the log only, redacted)."""
    LOG.info("the fleet hub did not answer the gate's question: %s", shown(exc, 300))
    if isinstance(exc, kube.Forbidden):
        return "the hub refused this site's token (401/403: revoked or expired)"
    if isinstance(exc, kube.NotFound):
        return "the hub has no such Site"
    if isinstance(exc, kube.ApiError):
        return "the hub refused the question"
    return "the hub does not answer"


@dataclass(frozen=True)
class Verdict:
    """Why the node goes: `how` is open, no-wave, started or offline; `warning` for the run's report."""

    how: str
    gate: Gate = Gate()
    warning: str = ""
    waited: float = 0.0
    note: str = ""


class _Question:
    """One check of the wait: ask the hub; go, hold (a TemporaryError: not yet) or follow the offline policy."""

    def __init__(self, client: kube.Client, target: hubreport.Target, show: Show, keepalive: KeepAlive) -> None:
        self.client = client
        self.target = target
        self.show = show
        self.keepalive = keepalive
        self.last_held: Gate | None = None
        self.line = ""  # what people see while it holds

    def __call__(self) -> Verdict | None:
        try:
            gate = ask(self.client, self.target)
        except (errors.SnorelocError, OSError) as exc:
            return self._unanswered(_unanswered(exc))
        if gate.holds:
            self.last_held = gate
            self._hold(gate.line)
        if self.line:
            self.show(f"the fleet let this node go ({gate.state or 'no wave'})")
        return Verdict("open" if gate.state else "no-wave", gate)

    def _unanswered(self, reason: str) -> Verdict:
        if self.last_held is not None:  # the fleet's last word stands
            self._hold(self.last_held.line)
        if self.target.offline == hubreport.OFFLINE_PROCEED:
            warning = f"the fleet hub could not be asked whether this node may go ({reason}); this site's offline "
            warning += f"policy is {hubreport.OFFLINE_PROCEED}: it went on"
            return Verdict("offline", warning=warning)
        self._hold(f"{HELD_BY}: {reason}, and this site's offline policy is {hubreport.OFFLINE_HOLD}")

    def _hold(self, line: str) -> NoReturn:
        self.keepalive()
        if line != self.line:
            self.line = line
            self.show(line)
        raise errors.TemporaryError(line)


def _factory(clock: clock_mod.Clock) -> ClientFactory:
    return lambda target: kube.Client.from_kubeconfig(str(target.kubeconfig), clock=clock, policy=ASKING)


@dataclass
class FleetGate:
    """The step `fleet-gate` (placed by `engine.order.node_steps` when the medium names a hub)."""

    target: hubreport.Target
    status: pathlib.Path  # the journal, read for the cluster steps already started
    cluster_steps: Sequence[str]
    show: Show = lambda line: None
    keepalive: KeepAlive = lambda: None
    client_factory: ClientFactory | None = None
    poll: float = POLL

    name = STEP
    description = "asking the fleet hub whether this node may go"

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {}  # once the gate let the node go, a re-run does not ask again

    def plan(self, ctx: context.Context) -> base.Plan:
        hold = ctx.site.get(timeouts_setting.SETTING).fleet_hold
        return base.Plan(self.name, notes=(f"ask the fleet hub; while held, wait up to {waits.duration(hold)}",))

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
        verdict = self.decide(ctx.clock, float(ctx.site.get(timeouts_setting.SETTING).fleet_hold))
        if ctx.deadline is not None:
            ctx.deadline += verdict.waited  # the hold is not the relocation's time
        details = {"verdict": verdict.how, "gate": verdict.gate.state, "waitedSeconds": round(verdict.waited, 1)}
        if verdict.note:
            LOG.info("%s: %s", self.name, verdict.note)
        return base.StepOutcome(warnings=(verdict.warning,) if verdict.warning else (), details=details)

    def verify(self, ctx: context.Context) -> None:
        return None

    def decide(self, clock: clock_mod.Clock, budget: float) -> Verdict:
        """Go (a Verdict) or stop with exit 75 once held for `budget` seconds."""
        first = started(journal.read(self.status), self.cluster_steps)
        if first:
            return Verdict("started", note=f"this node has started (step {first}): the fleet's gate does not hold it")
        client = (self.client_factory or _factory(clock))(self.target)
        question = _Question(client, self.target, self.show, self.keepalive)
        began = clock.monotonic()
        try:
            verdict = waits.until(question, waits.Wait(self.name, WAITED_FOR, budget, self.poll), clock)
        except errors.WaitTimeout:
            offline = question.last_held is None
            raise errors.TemporaryError(
                f"{question.line} for {waits.duration(budget)} (timeouts.fleetHold): the node stops here",
                hint=OFFLINE_HINT if offline else HINT,
            ) from None
        finally:
            client.close()
        return replace(verdict, waited=clock.monotonic() - began)


def preview(
    target: hubreport.Target, status: pathlib.Path, cluster_steps: Sequence[str], *, hold: int,
    clock: clock_mod.Clock, client_factory: ClientFactory | None = None,
) -> base.Plan:  # fmt: skip
    """What the gate would do now, for `snoreloc plan`: asks the hub once, waits for nothing, changes nothing."""
    first = started(journal.read(status), cluster_steps)
    if first:
        return base.Plan(STEP, notes=(f"this node has started (step {first}): the fleet's gate would not hold it",))
    client = (client_factory or _factory(clock))(target)
    try:
        gate = ask(client, target)
    except (errors.SnorelocError, OSError) as exc:
        reason = _unanswered(exc)
        then = (
            "go on, with a warning"
            if target.offline == hubreport.OFFLINE_PROCEED
            else f"wait for the hub up to {waits.duration(hold)}, then stop (exit 75)"
        )
        return base.Plan(STEP, notes=(f"{reason}: this site's offline policy is {target.offline}: it would {then}",))
    finally:
        client.close()
    if gate.holds:
        note = f"would be {gate.line} (it waits up to {waits.duration(hold)}, then stops with exit 75)"
    else:
        note = f"the fleet lets this node go ({f'wave {gate.wave}: Open' if gate.state else 'in no wave'})"
    return base.Plan(STEP, notes=(note, f"offline policy: {target.offline}"))

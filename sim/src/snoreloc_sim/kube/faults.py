"""Deterministic misbehaviour of the simulated API server, so the agent's retries and timeouts meet the real thing.

A field cluster drops connections, throttles, answers 5xx during rollouts and loses races with operators that
write the same objects. A fault spec reproduces that from a seed: the same spec and the same sequence of requests
give the same faults, so a failing scenario can be replayed.

Spec grammar (the CLI's `--faults` and the fixture's `faults=` take the same string)::

    spec     = item ("," item)*
    item     = "seed=" INT                 random seed (default 0)
             | "latency=" DURATION         added to every API request before it is handled
             | "500=" RATE | "503=" RATE | "429=" RATE
                                           answer with that code and a Status (429 and 503 carry Retry-After)
             | "retry-after=" INT          the Retry-After seconds (default 1)
             | "reset=" RATE               close the connection without a response (TCP reset)
             | "hang=" RATE                hold the request for `hang-for`, then close without a response
             | "hang-for=" DURATION        default 30s: longer than any sane client timeout, still bounded
             | "conflict=" RATE            on PUT/PATCH, another writer bumps the target's resourceVersion first
             | "outage=" DURATION "@" DURATION [":" MODE]
                                           an API outage of that length starting that long after start-up;
                                           MODE is "refuse" (default: connections closed) or "503"; repeatable
             | "health=" ("0" | "1")       also inject into /readyz, /livez, /healthz, /version (default 0)
    RATE     = a float in [0, 1]: the probability per request
    DURATION = a number with unit "ms", "s" or "m" (bare number: seconds)

Example: `seed=7,latency=2ms,500=0.05,503=0.05,429=0.05,reset=0.02,hang=0.01,conflict=0.1,outage=30s@10s`.

Every request draws exactly two random numbers (one for the response fault, one for the conflict), whatever its
kind, so the sequence of faults depends only on the seed and the order of requests.
"""

from __future__ import annotations

import enum
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from snoreloc_sim.kube import model


class Action(enum.Enum):
    """What the server does with a request instead of (or before) handling it."""

    NONE = "none"
    ERROR_500 = "500"
    ERROR_503 = "503"
    ERROR_429 = "429"
    RESET = "reset"
    HANG = "hang"


@dataclass(frozen=True)
class Outage:
    """A scripted API outage: `duration` wall seconds starting `start` wall seconds after the server starts."""

    duration: float
    start: float
    mode: str = "refuse"


@dataclass(frozen=True)
class FaultSpec:
    seed: int = 0
    latency: float = 0.0
    rates: dict[Action, float] = field(default_factory=dict)
    retry_after: int = 1
    hang_for: float = 30.0
    conflict: float = 0.0
    outages: tuple[Outage, ...] = ()
    health: bool = False


@dataclass(frozen=True)
class Decision:
    """The faults drawn for one request."""

    latency: float
    action: Action
    conflict: bool


_RATE_KEYS = {"500": Action.ERROR_500, "503": Action.ERROR_503, "429": Action.ERROR_429}
_RATE_KEYS |= {"reset": Action.RESET, "hang": Action.HANG}
_ACTION_ORDER = (Action.ERROR_500, Action.ERROR_503, Action.ERROR_429, Action.RESET, Action.HANG)
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0}


def duration(text: str) -> float:
    """Seconds from `250ms`, `2s`, `1.5m` or a bare number of seconds."""
    for unit in sorted(_UNITS, key=len, reverse=True):
        if text.endswith(unit) and text[: -len(unit)]:
            return float(text[: -len(unit)]) * _UNITS[unit]
    return float(text)


def rate(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"rate {text} is not between 0 and 1")
    return value


def _outage(text: str) -> Outage:
    length, _, rest = text.partition("@")
    start, _, mode = rest.partition(":")
    if mode not in ("", "refuse", "503"):
        raise ValueError(f"outage mode {mode!r} is neither refuse nor 503")
    return Outage(duration(length), duration(start or "0"), mode or "refuse")


_PARSERS: dict[str, Callable[[str], Any]] = {
    "seed": int,
    "latency": duration,
    "retry-after": int,
    "hang-for": duration,
    "conflict": rate,
    "health": lambda text: text.lower() in ("1", "true", "yes"),
}


def parse(spec: str) -> FaultSpec:
    """A FaultSpec from the grammar in the module docstring; ValueError names the bad item."""
    fields: dict[str, Any] = {}
    rates: dict[Action, float] = {}
    outages: list[Outage] = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        key, sep, text = (part.strip() for part in item.partition("="))
        try:
            if not sep:
                raise ValueError("not key=value")
            if key in _RATE_KEYS:
                rates[_RATE_KEYS[key]] = rate(text)
            elif key == "outage":
                outages.append(_outage(text))
            elif key in _PARSERS:
                fields[key.replace("-", "_")] = _PARSERS[key](text)
            else:
                raise ValueError("unknown fault")
        except ValueError as exc:
            raise ValueError(f"fault item {item!r}: {exc}") from None
    return FaultSpec(rates=rates, outages=tuple(outages), **fields)


class Injector:
    """Draws each request's faults from the seeded generator; thread-safe, and interruptible on stop."""

    def __init__(self, spec: FaultSpec) -> None:
        self.spec = spec
        self._random = random.Random(spec.seed)  # noqa: S311 (reproducible faults, not secrets)
        self._lock = threading.Lock()
        self.stopped = threading.Event()
        self.counts: dict[str, int] = {}

    def decide(self, *, write: bool) -> Decision:
        with self._lock:
            draw, conflict_draw = self._random.random(), self._random.random()
        action = _pick(self.spec.rates, draw)
        conflict = write and conflict_draw < self.spec.conflict
        self._count(action.value if action is not Action.NONE else "", conflict)
        return Decision(self.spec.latency, action, conflict)

    def _count(self, action: str, conflict: bool) -> None:
        with self._lock:
            for name in filter(None, (action, "conflict" if conflict else "")):
                self.counts[name] = self.counts.get(name, 0) + 1

    def schedule_outages(self, availability: model.Availability) -> None:
        for outage in self.spec.outages:
            availability.outage(outage.duration, outage.mode, start_in=outage.start)

    def hang(self) -> None:
        """Hold a request for the spec's bounded hang time, or until the server stops."""
        self.stopped.wait(self.spec.hang_for)


def _pick(rates: dict[Action, float], draw: float) -> Action:
    threshold = 0.0
    for action in _ACTION_ORDER:
        threshold += rates.get(action, 0.0)
        if draw < threshold:
            return action
    return Action.NONE

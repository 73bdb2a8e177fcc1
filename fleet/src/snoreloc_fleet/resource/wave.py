"""The `Wave` resource (`waves.fleet.snoreloc.io`): a rollout of Sites in batches, with a brake.

A Wave selects Sites of its namespace by label (`spec.selector`, a metav1.LabelSelector) and lets them go batch by
batch: a canary batch (`spec.canary` Sites), then `spec.batches` (each a count or a percentage of the wave's Sites;
the Sites left after the last go in one more batch, as Flight Control's implicit last batch). A batch opens when
the one before it is done (every Site relocated or failed, or its `batchTimeoutSeconds` passed) with at least
`successThreshold` percent relocated, and, with `manualApproval`, once the owner has set `spec.approvedBatches` to
its index or more. At most `maxConcurrency` Sites of the wave relocate at once. The brake: the wave halts itself
when a batch's failures pass what the threshold allows, or when `sameCause` Sites fail with one cause (the node's
exit class, the step, the agent version, the template digest `fleet render` annotates), and names that cause. A halt
stays until the owner approves past the halted batch (`approvedBatches` above it): failures in batches below
`approvedBatches` count as reviewed.

The controller writes each member Site's `status.gate` (`site.gate_schema`, the wave contract) and the Wave's status
(each batch's counts and state, the halt's cause). What the node does with the gate is the agent's. `spec.offline`
(`proceed` or `hold`) travels in the site's reporting kubeconfig: what its node does when it cannot reach the hub.

`python -m snoreloc_fleet.resource.wave` prints the CRD (`deploy/wave-crd.yaml` is that output; a test keeps them
equal).
"""

from __future__ import annotations

import enum
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from snoreloc_fleet.resource import site

KIND = "Wave"
PLURAL = "waves"
SINGULAR = "wave"
CRD_NAME = f"{PLURAL}.{site.GROUP}"
OFFLINE_PROCEED = "proceed"
OFFLINE_HOLD = "hold"
DEFAULT_CANARY = 1
DEFAULT_THRESHOLD = 90
DEFAULT_SAME_CAUSE = 3
DEFAULT_TIMEOUT = 86400
MAX_CAUSE = site.MAX_GATE_CAUSE
BATCH_SIZE = r"^[1-9][0-9]{0,5}%?$"  # `20` Sites or `25%` of the wave's


class Phase(enum.StrEnum):
    """`status.phase` of a Wave."""

    PROGRESSING = "Progressing"  # a batch is open
    WAITING = "WaitingApproval"  # the next batch waits for `spec.approvedBatches`
    HALTED = "Halted"  # the brake: see `status.halt`
    COMPLETED = "Completed"  # every batch done
    EMPTY = "Empty"  # the selector matches no Site


class BatchState(enum.StrEnum):
    """`status.batches[].state`."""

    PENDING = "Pending"  # waits for the batch before it
    WAITING = "WaitingApproval"
    OPEN = "Open"
    DONE = "Done"
    HALTED = "Halted"  # the brake stopped the wave in this batch


# status keys
STATUS_PHASE = "phase"
STATUS_BATCHES = "batches"
STATUS_HALT = "halt"  # {batch, cause, since}
STATUS_CURRENT = "currentBatch"
STATUS_SITES = "sites"
STATUS_RELOCATED = "relocated"
STATUS_FAILED = "failed"
STATUS_OBSERVED = "observedGeneration"
COUNTS = ("pending", "running", "relocated", "failed", "held")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _int(value: Any, default: int, low: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= low else default


@dataclass(frozen=True)
class View:
    """A Wave as the controller and the readers see it, parsed once (a missing or misshapen field reads as its
    default; the schema refuses them at admission)."""

    obj: Mapping[str, Any]
    namespace: str
    name: str
    generation: int
    selector: Mapping[str, Any]
    canary: int
    batches: tuple[str, ...]
    success_threshold: int
    same_cause: int
    manual_approval: bool
    approved: int  # spec.approvedBatches
    max_concurrency: int  # 0: no limit
    batch_timeout: int
    offline: str
    status: Mapping[str, Any]

    def sizes(self, total: int) -> list[int]:
        """Each batch's size for a wave of `total` Sites: the canary, the listed ones (a percentage of `total`,
        rounded up), one more for the Sites left; none empty but the canary of an empty wave."""
        left, sizes = total, [min(self.canary, total)]
        left -= sizes[0]
        for entry in self.batches[: site.MAX_BATCHES - 2]:
            if left <= 0:
                break
            size = math.ceil(total * int(entry[:-1]) / 100) if entry.endswith("%") else int(entry)
            sizes.append(min(max(size, 1), left))
            left -= sizes[-1]
        if left > 0:
            sizes.append(left)
        return sizes

    @property
    def halt(self) -> Mapping[str, Any]:
        return _mapping(self.status.get(STATUS_HALT))


def view(obj: Mapping[str, Any]) -> View:
    meta, spec = _mapping(obj.get("metadata")), _mapping(obj.get("spec"))
    batches = spec.get("batches")
    offline = spec.get("offline")
    return View(
        obj=obj,
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        generation=_int(meta.get("generation"), 0),
        selector=_mapping(spec.get("selector")),
        canary=_int(spec.get("canary"), DEFAULT_CANARY),
        batches=tuple(str(b) for b in batches) if isinstance(batches, list) else (),
        success_threshold=min(_int(spec.get("successThreshold"), DEFAULT_THRESHOLD), 100),
        same_cause=_int(spec.get("sameCause"), DEFAULT_SAME_CAUSE, 1),
        manual_approval=spec.get("manualApproval") is True,
        approved=_int(spec.get("approvedBatches"), 0),
        max_concurrency=_int(spec.get("maxConcurrency"), 0, 1),
        batch_timeout=_int(spec.get("batchTimeoutSeconds"), DEFAULT_TIMEOUT, 1),
        offline=offline if offline in (OFFLINE_PROCEED, OFFLINE_HOLD) else OFFLINE_PROCEED,
        status=_mapping(obj.get("status")),
    )


def label_selector(selector: Mapping[str, Any]) -> str:
    """A metav1.LabelSelector as the `labelSelector` query of a list (apimachinery's
    `metav1.LabelSelectorAsSelector`: matchLabels as `k=v`, expressions as `k in (a,b)`, `k notin (a)`, `k`, `!k`)."""
    parts = [f"{key}={value}" for key, value in sorted(_mapping(selector.get("matchLabels")).items())]
    expressions = selector.get("matchExpressions")
    for expression in expressions if isinstance(expressions, list) else []:
        item = _mapping(expression)
        key, operator, values = str(item.get("key", "")), item.get("operator"), item.get("values") or []
        listed = ",".join(sorted(str(v) for v in values))
        parts.append(
            {"In": f"{key} in ({listed})", "NotIn": f"{key} notin ({listed})", "Exists": key}.get(
                str(operator), f"!{key}"
            )
        )
    return ",".join(parts)


def selects(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """Whether a metav1.LabelSelector selects an object with `labels`, as the list `label_selector` makes would
    (apimachinery `labels.Selector.Matches`: every requirement holds; an empty selector selects everything)."""
    if any(labels.get(key) != value for key, value in _mapping(selector.get("matchLabels")).items()):
        return False
    expressions = selector.get("matchExpressions")
    for expression in expressions if isinstance(expressions, list) else []:
        item = _mapping(expression)
        key, operator = str(item.get("key", "")), str(item.get("operator"))
        values = {str(v) for v in item.get("values") or []}
        present = key in labels
        holds = {
            "In": present and str(labels.get(key)) in values,
            "NotIn": not present or str(labels.get(key)) not in values,
            "Exists": present,
        }.get(operator, not present)
        if not holds:
            return False
    return True


# --- the CRD -------------------------------------------------------------------------------------------------------


def _text(limit: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": limit, "pattern": site.NO_CONTROLS}


def _count(maximum: int = 1_000_000) -> dict[str, Any]:
    return {"type": "integer", "minimum": 0, "maximum": maximum}


def _selector() -> dict[str, Any]:
    expression = {
        "type": "object",
        "required": ["key", "operator"],
        "properties": {
            "key": _text(317),
            "operator": {"type": "string", "enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
            "values": {"type": "array", "maxItems": 64, "items": _text(63)},
        },
    }
    return {
        "type": "object",
        "description": "Which Sites of this namespace the wave relocates (a label selector, as a Deployment's).",
        "properties": {
            "matchLabels": {"type": "object", "maxProperties": 32, "additionalProperties": _text(63)},
            "matchExpressions": {"type": "array", "maxItems": 32, "items": expression},
        },
    }


def _spec() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["selector"],
        "properties": {
            "selector": _selector(),
            "canary": {
                **_count(10000),
                "default": DEFAULT_CANARY,
                "description": "Sites in the first batch (0: no canary batch).",
            },
            "batches": {
                "type": "array",
                "maxItems": site.MAX_BATCHES - 2,
                "items": {"type": "string", "pattern": BATCH_SIZE},
                "description": "The batches after the canary: each a count (`20`) or a percentage of the wave's "
                "Sites (`25%`); the Sites left after the last go in one more batch.",
            },
            "successThreshold": {
                **_count(100),
                "default": DEFAULT_THRESHOLD,
                "description": "Percent of a batch's Sites that must relocate: more failures halt the wave, fewer "
                "successes keep the next batch closed.",
            },
            "sameCause": {
                "type": "integer",
                "minimum": 1,
                "maximum": 10000,
                "default": DEFAULT_SAME_CAUSE,
                "description": "This many Sites failing with one cause (step, exit class, agent version, template "
                "digest) halt the wave.",
            },
            "manualApproval": {
                "type": "boolean",
                "default": False,
                "description": "true: batch N (N >= 1) opens only once spec.approvedBatches is N or more.",
            },
            "approvedBatches": {
                **_count(site.MAX_BATCHES),
                "default": 0,
                "description": "The owner's approval: batches up to this index may open; a halt in a batch below "
                "it is lifted (its failures count as reviewed).",
            },
            "maxConcurrency": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100000,
                "description": "Sites of the wave relocating at once (none: no limit).",
            },
            "batchTimeoutSeconds": {
                "type": "integer",
                "minimum": 60,
                "maximum": 31536000,
                "default": DEFAULT_TIMEOUT,
                "description": "A batch still running this long after it opened is judged as it stands: its "
                "unfinished Sites count as not relocated.",
            },
            "offline": {
                "type": "string",
                "enum": [OFFLINE_PROCEED, OFFLINE_HOLD],
                "default": OFFLINE_PROCEED,
                "description": "What a node does when it cannot reach the hub to ask whether its wave lets it go.",
            },
        },
    }


def _status() -> dict[str, Any]:
    batch = {
        "type": "object",
        "properties": {
            "index": _count(site.MAX_BATCHES),
            "size": _count(),
            "state": {"type": "string", "enum": [s.value for s in BatchState]},
            **{name: _count() for name in COUNTS},
            "openedAt": {"type": "string", "format": "date-time"},
        },
    }
    return {
        "type": "object",
        "properties": {
            STATUS_OBSERVED: {"type": "integer", "format": "int64", "minimum": 0},
            STATUS_PHASE: {"type": "string", "enum": [p.value for p in Phase]},
            STATUS_SITES: _count(),
            STATUS_RELOCATED: _count(),
            STATUS_FAILED: _count(),
            STATUS_CURRENT: _count(site.MAX_BATCHES),
            STATUS_BATCHES: {"type": "array", "maxItems": site.MAX_BATCHES, "items": batch},
            STATUS_HALT: {
                "type": "object",
                "properties": {
                    "batch": _count(site.MAX_BATCHES),
                    "cause": _text(MAX_CAUSE),
                    "since": {"type": "string", "format": "date-time"},
                },
            },
        },
    }


PRINTER_COLUMNS: tuple[dict[str, Any], ...] = (
    {"name": "Phase", "type": "string", "jsonPath": f".status.{STATUS_PHASE}"},
    {"name": "Batch", "type": "integer", "jsonPath": f".status.{STATUS_CURRENT}"},
    {"name": "Sites", "type": "integer", "jsonPath": f".status.{STATUS_SITES}"},
    {"name": "Relocated", "type": "integer", "jsonPath": f".status.{STATUS_RELOCATED}"},
    {"name": "Failed", "type": "integer", "jsonPath": f".status.{STATUS_FAILED}"},
    {"name": "Cause", "type": "string", "jsonPath": f".status.{STATUS_HALT}.cause", "priority": 0},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)


def crd() -> dict[str, Any]:
    """The CustomResourceDefinition of the Wave."""
    return site.definition(KIND, (PLURAL, SINGULAR), {"type": "object"}, _spec(), _status(), columns=PRINTER_COLUMNS)


def crd_yaml() -> str:
    header = "# The Wave CRD. Generated by `python -m snoreloc_fleet.resource.wave`; do not edit by hand.\n"
    return header + yaml.safe_dump(crd(), sort_keys=False)


def batch_rows(status: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """The Wave's batches as its status holds them (readers: `fleet status --wave`, the HTML page)."""
    listed = status.get(STATUS_BATCHES)
    return [b for b in listed if isinstance(b, Mapping)] if isinstance(listed, list) else []


if __name__ == "__main__":
    sys.stdout.write(crd_yaml())

"""A benchmark result as the product's timeline picture (`snoreloc.engine.timeline`, the one drawer).

The benchmarks know more than a run's journal does (the simulator's own record of every rollout, the critical
chain computed from its model), so they build the `Timeline` themselves; the drawing is the product's.
"""

from __future__ import annotations

from typing import Any

from snoreloc.engine import timeline as drawer
from snoreloc.engine.timeline import chain_text

__all__ = ["chain_text", "gantt", "of", "svg"]


def of(result: dict[str, Any], title: str = "") -> drawer.Timeline:
    """Steps, then rollouts by start time, in seconds after the agent started; the agent's exit as the end."""
    bars = [drawer.Bar(s["step"], s["start"], s["end"]) for s in result["steps"]]
    critical = set(result.get("critical_chain", ()))
    for rollout in sorted(result["rollouts"], key=lambda r: r["start"]):
        bars.append(
            drawer.Bar(
                f"rollout: {rollout['operator']}",
                rollout["start"],
                rollout["end"],
                drawer.Kind.ROLLOUT,
                critical=rollout["operator"] in critical,
            )
        )
    return drawer.Timeline(title, tuple(bars), end=result["actual_wall_s"])


def svg(result: dict[str, Any], title: str) -> str:
    return drawer.svg(of(result, title))


def gantt(result: dict[str, Any], width: int = 60) -> str:
    return drawer.gantt(of(result), width)

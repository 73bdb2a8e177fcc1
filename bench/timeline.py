"""Draw a relocation's timeline, step bars above the rollouts they set off, as SVG and as a text Gantt chart.

The point of the picture is the overlap: one look shows whether the rollouts ran side by side (wall time close to
the longest one) or one after another. Written by hand from a relocation result (`bench/relocation.py`) so the
docs need no plotting library; the text form fits in Markdown and in a terminal.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

ROW = 22
LABEL = 190
WIDTH = 960
STEP_COLOUR = "#4c78a8"
ROLLOUT_COLOUR = "#f58518"
CRITICAL_COLOUR = "#e45756"


def _rows(result: dict[str, Any]) -> list[tuple[str, float, float, str]]:
    """(label, start, end, kind) for every step, then every rollout, in seconds after the agent started."""
    rows = [(s["step"], s["start"], s["end"], "step") for s in result["steps"]]
    critical = set(result.get("critical_chain", ()))
    for rollout in sorted(result["rollouts"], key=lambda r: r["start"]):
        kind = "critical" if rollout["operator"] in critical else "rollout"
        rows.append((f"rollout: {rollout['operator']}", rollout["start"], rollout["end"], kind))
    return rows


def _span(result: dict[str, Any]) -> float:
    ends = [result["actual_wall_s"], *(r["end"] for r in result["rollouts"]), *(s["end"] for s in result["steps"])]
    return max(ends) or 1.0


def _ticks(span: float) -> list[float]:
    step = next(s for s in (0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1e9) if span / s <= 12)
    return [i * step for i in range(int(span // step) + 1)]


def svg(result: dict[str, Any], title: str) -> str:
    """A standalone SVG: one bar per step and per rollout against wall seconds, the run's end as a line."""
    rows = _rows(result)
    span = _span(result)
    plot = WIDTH - LABEL - 20
    top = 40
    height = top + ROW * len(rows) + 50

    def x(seconds: float) -> float:
        return LABEL + plot * max(seconds, 0.0) / span

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
        f'<text x="10" y="20" font-size="14" font-weight="bold">{html.escape(title)}</text>',
    ]
    parts += _grid(span, top, top + ROW * len(rows), x)
    for index, (label, start, end, kind) in enumerate(rows):
        parts += _bar(index, label, start, end, kind, top, x)
    end_x = x(result["actual_wall_s"])
    parts.append(f'<line x1="{end_x:.1f}" y1="{top - 6}" x2="{end_x:.1f}" y2="{top + ROW * len(rows)}" '
                 f'stroke="black" stroke-dasharray="4 3"/>')  # fmt: skip
    parts.append(_legend(top + ROW * len(rows) + 38))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _grid(span: float, top: int, bottom: int, x: Any) -> list[str]:
    parts = []
    for tick in _ticks(span):
        position = x(tick)
        parts.append(f'<line x1="{position:.1f}" y1="{top - 6}" x2="{position:.1f}" y2="{bottom}" stroke="#ddd"/>')
        parts.append(f'<text x="{position:.1f}" y="{bottom + 14}" text-anchor="middle">{tick:g} s</text>')
    return parts


def _bar(index: int, label: str, start: float, end: float, kind: str, top: int, x: Any) -> list[str]:
    y = top + index * ROW
    colour = {"step": STEP_COLOUR, "rollout": ROLLOUT_COLOUR, "critical": CRITICAL_COLOUR}[kind]
    width = max(x(end) - x(start), 1.5)
    return [
        f'<text x="{LABEL - 8}" y="{y + 14}" text-anchor="end">{html.escape(label)}</text>',
        f'<rect x="{x(start):.1f}" y="{y + 3}" width="{width:.1f}" height="{ROW - 6}" fill="{colour}">'
        f"<title>{html.escape(label)}: {start:.2f}-{end:.2f} s ({end - start:.2f} s)</title></rect>",
    ]


def _legend(y: int) -> str:
    items = (
        ("agent step", STEP_COLOUR),
        ("rollout", ROLLOUT_COLOUR),
        ("rollout on the critical path", CRITICAL_COLOUR),
    )
    parts, x = [], LABEL
    for text, colour in items:
        parts.append(f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{colour}"/>')
        parts.append(f'<text x="{x + 16}" y="{y}">{html.escape(text)}</text>')
        x += 30 + 7 * len(text)
    parts.append(f'<text x="{x}" y="{y}">dashed line: the agent exits</text>')
    return "\n".join(parts)


def gantt(result: dict[str, Any], width: int = 60) -> str:
    """The same chart as fixed-width text: `#` steps, `=` rollouts, `*` rollouts on the critical path."""
    span = _span(result)
    marks = {"step": "#", "rollout": "=", "critical": "*"}
    lines = [f"{'':<30} 0 s{'':<{width - 12}}{span:>6.1f} s"]
    for label, start, end, kind in _rows(result):
        lines.append(f"{label[:30]:<30}|{_cells(start, end, span, width, marks[kind])}| {end - start:6.2f} s")
    return "\n".join(lines)


def _cells(start: float, end: float, span: float, width: int, mark: str) -> str:
    first = min(int(width * max(start, 0.0) / span), width - 1)
    last = max(min(int(width * end / span), width), first + 1)
    return " " * first + mark * (last - first) + " " * (width - last)


def chain_text(chain: Sequence[str]) -> str:
    return " -> ".join(chain)

"""The timeline picture: agent steps above the operator rollouts they set off, on one time axis, as SVG or text.

The point of the picture is the overlap: one look shows whether the rollouts ran side by side (the run lasting
about as long as the longest one) or one after another, which rollout was the long pole (the critical chain, in
red), and where the agent only waited (hatched). It is drawn by hand from a plain `Timeline`, so `analyze --svg`,
the progress page, the collect-logs bundle and the benchmarks share this one drawer and need no plotting library;
the text form fits in Markdown and in a terminal.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from snoreloc import sanitize

__all__ = ["Bar", "Kind", "Timeline", "WaitMark", "chain_text", "gantt", "svg"]

ROW = 22
LABEL = 190
WIDTH = 960
COLOURS = {"step": "#4c78a8", "failed": "#9d1c1c", "rollout": "#f58518", "critical": "#e45756"}
WAIT_FILL = "url(#waiting)"
# What the axis counts, said under the legend: the node's picture is drawn from its steps' timestamps, which are
# wall time (a run against a simulator counts its steps' durations in faster, simulated seconds: the table says so)
WALL_AXIS = "time axis: wall-clock seconds after the run started"


class Kind(enum.Enum):
    STEP = "step"
    ROLLOUT = "rollout"


@dataclass(frozen=True)
class Bar:
    """One row: a step or a rollout, in seconds after the picture's origin."""

    label: str
    start: float
    end: float
    kind: Kind = Kind.STEP
    critical: bool = False
    failed: bool = False

    @property
    def colour(self) -> str:
        if self.kind is Kind.ROLLOUT:
            return COLOURS["critical" if self.critical else "rollout"]
        return COLOURS["failed" if self.failed else "step"]


@dataclass(frozen=True)
class WaitMark:
    """A bounded wait inside a step: drawn hatched over the step's bar."""

    step: str
    what: str
    start: float
    end: float


@dataclass(frozen=True)
class Timeline:
    """What to draw. `end` (seconds) is where the agent stopped: a dashed line; None while it runs."""

    title: str
    bars: tuple[Bar, ...]
    waits: tuple[WaitMark, ...] = ()
    end: float | None = None
    axis: str = WALL_AXIS

    @property
    def span(self) -> float:
        ends = [self.end or 0.0, *(b.end for b in self.bars), *(w.end for w in self.waits)]
        return max(ends) or 1.0

    @property
    def critical_chain(self) -> list[str]:
        return [b.label for b in sorted(self.bars, key=lambda b: b.start) if b.critical]


def _ticks(span: float) -> list[float]:
    step = next(s for s in (0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600, 1e9) if span / s <= 12)
    return [i * step for i in range(int(span // step) + 1)]


def svg(timeline: Timeline) -> str:
    """A standalone SVG: one bar per step and per rollout against seconds, waits hatched, the end as a line."""
    rows = timeline.bars
    plot = WIDTH - LABEL - 20
    top, bottom = 40, 40 + ROW * len(rows)
    height = bottom + 68  # the legend's two lines
    span = timeline.span

    def x(seconds: float) -> float:
        return LABEL + plot * max(seconds, 0.0) / span

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12" role="img">',
        _pattern(),
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
        f'<text x="10" y="20" font-size="14" font-weight="bold">{sanitize.html(timeline.title)}</text>',
    ]
    parts += _grid(span, top, bottom, x)
    index = {bar.label: number for number, bar in enumerate(rows)}
    for number, bar in enumerate(rows):
        parts += _bar(number, bar, top, x)
    parts += [_wait(index[w.step], w, top, x) for w in timeline.waits if w.step in index]
    if timeline.end is not None:
        end_x = x(timeline.end)
        parts.append(
            f'<line x1="{end_x:.1f}" y1="{top - 6}" x2="{end_x:.1f}" y2="{bottom}" '
            'stroke="black" stroke-dasharray="4 3"/>'
        )
    parts += [_legend(bottom + 38, timeline.axis), "</svg>"]
    return "\n".join(parts) + "\n"


def _pattern() -> str:
    return (
        '<defs><pattern id="waiting" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#c9d8ea"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#4c78a8" stroke-width="2"/></pattern></defs>'
    )


def _grid(span: float, top: int, bottom: int, x: Callable[[float], float]) -> list[str]:
    parts = []
    for tick in _ticks(span):
        position = x(tick)
        parts.append(f'<line x1="{position:.1f}" y1="{top - 6}" x2="{position:.1f}" y2="{bottom}" stroke="#ddd"/>')
        parts.append(f'<text x="{position:.1f}" y="{bottom + 14}" text-anchor="middle">{tick:g} s</text>')
    return parts


def _bar(index: int, bar: Bar, top: int, x: Callable[[float], float]) -> list[str]:
    y = top + index * ROW
    width = max(x(bar.end) - x(bar.start), 1.5)
    label = sanitize.html(bar.label)
    return [
        f'<text x="{LABEL - 8}" y="{y + 14}" text-anchor="end">{label}</text>',
        f'<rect class="{bar.kind.value}" x="{x(bar.start):.1f}" y="{y + 3}" width="{width:.1f}" height="{ROW - 6}" '
        f'fill="{bar.colour}"><title>{label}: {bar.start:.2f}-{bar.end:.2f} s ({bar.end - bar.start:.2f} s)'
        "</title></rect>",
    ]


def _wait(index: int, wait: WaitMark, top: int, x: Callable[[float], float]) -> str:
    y = top + index * ROW
    width = max(x(wait.end) - x(wait.start), 1.5)
    return (
        f'<rect class="wait" x="{x(wait.start):.1f}" y="{y + 3}" width="{width:.1f}" height="{ROW - 6}" '
        f'fill="{WAIT_FILL}"><title>{sanitize.html(wait.step)} waits for {sanitize.html(wait.what)}: '
        f"{wait.end - wait.start:.2f} s</title></rect>"
    )


def _legend(y: int, axis: str) -> str:
    items = (
        ("agent step", COLOURS["step"]),
        ("waiting", WAIT_FILL),
        ("rollout", COLOURS["rollout"]),
        ("rollout on the critical chain", COLOURS["critical"]),
    )
    parts, x = [], LABEL
    for text, colour in items:
        parts.append(f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{colour}"/>')
        parts.append(f'<text x="{x + 16}" y="{y}">{sanitize.html(text)}</text>')
        x += 30 + 7 * len(text)
    parts.append(f'<text x="{x}" y="{y}">dashed line: the agent ends</text>')
    parts.append(f'<text x="{LABEL}" y="{y + 18}">{sanitize.html(axis)}</text>')
    return "\n".join(parts)


def gantt(timeline: Timeline, width: int = 60) -> str:
    """The same chart as fixed-width text: `#` steps, `=` rollouts, `*` rollouts on the critical chain."""
    span = timeline.span
    lines = [f"{'':<30} 0 s{'':<{width - 12}}{span:>6.1f} s"]
    for bar in timeline.bars:
        mark = "#" if bar.kind is Kind.STEP else "*" if bar.critical else "="
        cells = _cells(bar.start, bar.end, span, width, mark)
        lines.append(f"{bar.label[:30]:<30}|{cells}| {bar.end - bar.start:6.2f} s")
    return "\n".join(lines)


def _cells(start: float, end: float, span: float, width: int, mark: str) -> str:
    first = min(int(width * max(start, 0.0) / span), width - 1)
    last = max(min(int(width * end / span), width), first + 1)
    return " " * first + mark * (last - first) + " " * (width - last)


def chain_text(chain: Sequence[str]) -> str:
    return " -> ".join(chain)

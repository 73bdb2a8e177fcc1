"""The fleet on one page: `snoreloc fleet report --html FILE`, self-contained (no external file, font or script).

What the page shows, top to bottom: the sites by phase (a bar and the counts), a histogram of relocation durations
against the 20-minute budget, the slowest steps across the fleet (median, 90th percentile and worst, by step), the
failure reasons ranked (with the first sites of each), then every site in a table; a site's name opens its
timeline picture, drawn by the agent's own drawer (`snoreloc analyze --svg`) from the node's last report. The
pictures are embedded for the sites that need someone first, then the slowest, up to `--timelines` (a 10,000-site
page with a picture for each would weigh some 40 MB). Every text passes `snoreloc.sanitize.html` (controls shown,
markup escaped); nodes' messages arrive redacted; the reports' numbers are read by `fleetstate.report`, so an
implausible one is unknown (the page lists those sites) and never reaches a figure.
"""

from __future__ import annotations

import collections
import datetime as dt
import math
import statistics
from collections.abc import Iterable, Sequence

from snoreloc.siblings import sanitize
from snoreloc_fleet import agent
from snoreloc_fleet.resource import site
from snoreloc_fleet.state import fleetstate, wavestate

PHASE_COLOURS = {
    "Pending": "#bab0ac",
    "Invalid": "#b279a2",
    "Ready": "#72b7b2",
    "InProgress": "#4c78a8",
    "Relocated": "#54a24b",
    "Failed": "#e45756",
    "Stale": "#f58518",
}
WIDTH = 900
STYLE = """
body{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px}td,th{padding:3px 8px;border-bottom:1px solid #eee;text-align:left}
th{background:#f4f4f4}td.n{text-align:right}td:first-child{white-space:nowrap}.muted{color:#777}
details{margin:6px 0}summary{cursor:pointer;font-weight:bold}
.phase{display:inline-block;padding:0 6px;border-radius:3px;color:white;font-size:12px}
td.soon{color:#b00;font-weight:bold}
"""
# Opens a site's timeline when its link is followed (the page's only script; it loads nothing).
SCRIPT = """
function openTarget(){var e=document.getElementById(decodeURIComponent(location.hash.slice(1)));
if(e&&e.tagName==='DETAILS'){e.open=true;e.scrollIntoView();}}
window.addEventListener('hashchange',openTarget);window.addEventListener('load',openTarget);
"""


_e = sanitize.html  # every text of the page and its pictures, as element text or a quoted attribute
SHOWN_IMPLAUSIBLE = 20  # sites named in the note on implausible reports
TOKEN_SOON = 14 * 86400.0  # a site's reporting token expiring within this is before the owner (a stick to remake)
CLOCK_NOTE = (  # the page's durations, minutes and step seconds, labelled (issue 35: times mixed without labels)
    "Durations and step seconds are as each node's clock counted them: wall-clock time at a site; a node of the demo "
    "or the tests runs against a simulated cluster and counts its simulated seconds (its run's report says which)."
)
FOLD_AT = 5  # more uneventful sites alike than this are folded into one line of the sites table
SHOWN_PER_NEED = 50  # sites listed under each heading of "Needs you" (the rest counted)


def _anchor(item: fleetstate.Row) -> str:
    return f"t-{item.namespace}-{item.name}"


def _phase_badge(phase: str) -> str:
    return f'<span class="phase" style="background:{PHASE_COLOURS.get(phase, "#888")}">{_e(phase)}</span>'


def phase_bar(by_phase: dict[str, int]) -> str:
    total = sum(by_phase.values()) or 1
    parts, x = [], 0.0
    for phase, count in by_phase.items():
        if not count:
            continue
        width = WIDTH * count / total
        colour = PHASE_COLOURS.get(phase, "#888")
        parts.append(
            f'<rect x="{x:.1f}" y="0" width="{width:.1f}" height="28" fill="{colour}">'
            f"<title>{_e(phase)}: {count}</title></rect>"
        )
        if width > 60:
            parts.append(f'<text x="{x + 4:.1f}" y="19" fill="white" font-size="12">{_e(phase)} {count}</text>')
        x += width
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="28" role="img" aria-label="sites by phase">'
    )
    return head + "".join(parts) + "</svg>"


def _bins(durations: Sequence[float]) -> tuple[float, list[int]]:
    """Bin width (minutes, rounded to a readable step) and counts, from 0 to the longest relocation."""
    longest = max(durations) / 60
    width = next(w for w in (1, 2, 5, 10, 15, 30, 60, 120, 1e9) if longest / w <= 30)
    counts = [0] * (int(longest // width) + 1)
    for seconds in durations:
        counts[int(seconds / 60 // width)] += 1
    return width, counts


def histogram(durations: Sequence[float], budget: float = fleetstate.BUDGET_SECONDS) -> str:
    """An SVG histogram of relocation durations in minutes, the budget as a dashed red line."""
    if not durations:
        return '<p class="muted">No relocation has finished yet.</p>'
    width, counts = _bins(durations)
    span = max(len(counts) * width, budget / 60 * 1.25)  # room for the budget's label right of its line
    plot_w, plot_h, left, top = WIDTH - 60, 180, 50, 10
    tallest = max(counts) or 1

    def x(minutes: float) -> float:
        return left + plot_w * minutes / span

    parts = []
    for index, count in enumerate(counts):
        height = plot_h * count / tallest
        parts.append(
            f'<rect x="{x(index * width):.1f}" y="{top + plot_h - height:.1f}" '
            f'width="{max(1.0, x(width) - left - 1):.1f}" height="{height:.1f}" fill="#4c78a8">'
            f"<title>{index * width:g}-{(index + 1) * width:g} min: {count}</title></rect>"
        )
    budget_x = x(budget / 60)
    parts.append(
        f'<line x1="{budget_x:.1f}" y1="{top}" x2="{budget_x:.1f}" y2="{top + plot_h}" '
        'stroke="#e45756" stroke-dasharray="5 3"/>'
    )
    parts.append(
        f'<text x="{budget_x + 4:.1f}" y="{top + 12}" fill="#e45756" font-size="12">budget {budget / 60:g} min</text>'
    )
    for tick in range(0, int(span) + 1, max(1, int(span // 10) or 1)):
        parts.append(
            f'<text x="{x(tick):.1f}" y="{top + plot_h + 16}" font-size="11" text-anchor="middle">{tick}</text>'
        )
    parts.append(
        f'<text x="{left}" y="{top + plot_h + 32}" font-size="12">minutes (bars: sites; tallest {tallest})</text>'
    )
    height = top + plot_h + 40
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" role="img" '
        f'aria-label="relocation durations">{"".join(parts)}</svg>'
    )


def _percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1)]


def slowest_steps(rows: Iterable[fleetstate.Row], limit: int = 15) -> list[tuple[str, int, float, float, float]]:
    """(step, runs, median, p90, max) seconds over every report, slowest 90th percentile first."""
    by_step: dict[str, list[float]] = collections.defaultdict(list)
    for item in rows:
        for step in item.steps:
            if step.seconds is not None and step.state in ("done", "failed"):
                by_step[step.name].append(step.seconds)
    table = [(name, len(v), statistics.median(v), _percentile(v, 0.9), max(v)) for name, v in by_step.items() if v]
    return sorted(table, key=lambda r: (-r[3], r[0]))[:limit]


def _timeline(item: fleetstate.Row) -> str:
    steps = [(s.name, s.seconds or 0.0, s.state == "failed") for s in item.steps if s.state != "pending"]
    wait = item.waiting.what if item.waiting else None
    finished = item.run_state in (*site.RUN_DONE, *site.RUN_FAILED)
    title = f"{item.name}: {item.run_state or item.phase}"
    rollouts = [(r.name, r.start, r.end) for r in item.rollouts]
    waits = [(w.name, w.what, w.start, w.end) for w in item.waits]
    return agent.timeline_svg(title, steps, finished=finished, wait=wait, rollouts=rollouts, waits=waits)


def _pictured(rows: Sequence[fleetstate.Row], limit: int) -> list[fleetstate.Row]:
    """The sites whose timeline the page embeds: those needing someone, in progress, then the slowest."""
    with_steps = [r for r in rows if r.steps]
    wanted = fleetstate.NEEDS_SOMEONE | fleetstate.RUNNING
    urgent = [r for r in with_steps if r.phase in wanted]
    rest = sorted((r for r in with_steps if r.phase not in wanted), key=lambda r: -(r.duration or 0.0))
    return (urgent + rest)[:limit]


def _table(headers: Sequence[str], body: Iterable[str]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _reasons(summary: fleetstate.Summary, rows: Sequence[fleetstate.Row], pictured: set[str]) -> str:
    if not summary.reasons:
        return '<p class="muted">No site needs anyone.</p>'
    examples: dict[str, list[fleetstate.Row]] = collections.defaultdict(list)
    for item in rows:
        if item.failure and len(examples[item.failure]) < 5:
            examples[item.failure].append(item)
    body = []
    for reason, count in summary.reasons:
        sites = ", ".join(_site_link(r, pictured) for r in examples[reason])
        body.append(f'<tr><td class="n">{count}</td><td>{_e(reason)}</td><td>{sites}</td></tr>')
    return _table(("sites", "reason", "first sites"), body)


def _site_link(item: fleetstate.Row, pictured: set[str]) -> str:
    anchor = _anchor(item)
    return f'<a href="#{_e(anchor)}">{_e(item.name)}</a>' if anchor in pictured else _e(item.name)


def _site_row(item: fleetstate.Row, now: dt.datetime, pictured: set[str]) -> str:
    duration = f"{item.duration / 60:.1f}" if item.duration is not None else ""
    return (
        f"<tr><td>{_site_link(item, pictured)}</td><td>{_e(item.namespace)}</td><td>{_phase_badge(item.phase)}</td>"
        f"<td>{_e(_reason_text(item))}</td><td>{_e(item.step)}</td>"
        f'<td class="n">{_e(item.report_age(now))}</td><td class="n">{duration}</td>'
        f"<td>{_e(item.todo)}</td></tr>"
    )


def _reason_text(item: fleetstate.Row) -> str:
    """The table's reason: the failure reason or the controller's, and a finished run's warnings (a Done with
    warnings is not a clean Done)."""
    text = item.failure or item.reason
    if item.warnings:
        count = len(item.warnings)
        text += f"; {count} warning{'s' if count != 1 else ''}: {item.warnings[0]}"
    return text


def _uneventful(item: fleetstate.Row) -> bool:
    """A site with nothing to say: relocated cleanly, ready or pending, no warning, nothing implausible."""
    quiet = (site.Phase.RELOCATED, site.Phase.READY, site.Phase.PENDING)
    return item.phase in quiet and not (item.failure or item.warnings or item.implausible)


def fold(rows: Sequence[fleetstate.Row]) -> tuple[list[fleetstate.Row], list[tuple[str, str, list[fleetstate.Row]]]]:
    """(rows shown one a line, groups folded): uneventful sites alike (phase and reason) are folded when more than
    `FOLD_AT`, so 46 identical Ready rows do not push the 3 relocated ones down."""
    groups: dict[tuple[str, str], list[fleetstate.Row]] = collections.defaultdict(list)
    for item in rows:
        if _uneventful(item):
            groups[(item.phase, item.reason)].append(item)
    folded = {key for key, members in groups.items() if len(members) > FOLD_AT}
    shown = [r for r in rows if not (_uneventful(r) and (r.phase, r.reason) in folded)]
    return shown, [(phase, reason, groups[(phase, reason)]) for phase, reason in sorted(folded)]


def _sites(rows: Sequence[fleetstate.Row], now: dt.datetime, pictured: set[str]) -> str:
    order = {p: i for i, p in enumerate(("Failed", "Stale", "Invalid", "InProgress", "Relocated", "Ready", "Pending"))}
    shown, folded = fold(sorted(rows, key=lambda r: (order.get(r.phase, 9), r.namespace, r.name)))
    headers = ("site", "namespace", "phase", "reason", "step", "last report", "minutes", "to do")
    parts = [_table(headers, (_site_row(item, now, pictured) for item in shown))]
    for phase, reason, members in folded:
        names = ", ".join(_site_link(r, pictured) for r in members)
        parts.append(
            f"<details><summary>{len(members)} sites {_phase_badge(phase)} {_e(reason)}, nothing to do"
            f"</summary><p>{names}</p></details>"
        )
    return "".join(parts)


# --- what needs the owner, first -------------------------------------------------------------------------------


def _days(seconds: float) -> str:
    if seconds < 0:
        return f"expired {fleetstate.ago(-seconds)} ago"
    return f"in {fleetstate.ago(seconds)}"


def _expiring(rows: Sequence[fleetstate.Row], now: dt.datetime) -> list[fleetstate.Row]:
    """Sites not relocated yet whose reporting token expires within `TOKEN_SOON` (or has): their stick must be made
    again (`fleet make-media`) or the node's reports will be refused."""
    soon = [
        r
        for r in rows
        if r.token_expires is not None
        and r.phase != site.Phase.RELOCATED
        and (r.token_expires - now).total_seconds() < TOKEN_SOON
    ]
    return sorted(soon, key=lambda r: (r.token_expires or now, r.namespace, r.name))


def _need(heading: str, headers: Sequence[str], cells: Sequence[Sequence[str]]) -> str:
    """One heading of "Needs you": a table of at most `SHOWN_PER_NEED` sites (cells already escaped)."""
    body = ["<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in cells[:SHOWN_PER_NEED]]
    more = len(cells) - SHOWN_PER_NEED
    tail = f'<p class="muted">and {more} more (the sites table lists them).</p>' if more > 0 else ""
    return f"<h3>{_e(heading)} ({len(cells)})</h3>{_table(headers, body)}{tail}"


def _failed_cells(rows: Sequence[fleetstate.Row], now: dt.datetime, pictured: set[str]) -> list[list[str]]:
    return [
        [
            _site_link(r, pictured),
            _e(r.detail.step if r.detail else r.step),
            _e(r.detail.message if r.detail else r.failure),
            _e(r.todo or (r.detail.hint if r.detail else "")),
            _e(r.report_age(now)),
        ]
        for r in rows
        if r.phase == site.Phase.FAILED
    ]


def _stale_cells(rows: Sequence[fleetstate.Row], now: dt.datetime, pictured: set[str]) -> list[list[str]]:
    return [
        [_site_link(r, pictured), _e(r.step), _e(r.report_age(now)), _e(r.waiting.what if r.waiting else "")]
        for r in rows
        if r.phase == site.Phase.STALE
    ]


def _invalid_cells(rows: Sequence[fleetstate.Row]) -> list[list[str]]:
    cells = []
    for r in rows:
        if r.phase != site.Phase.INVALID:
            continue
        for f in r.findings or (fleetstate.Finding(r.failure, r.reason),):
            line = "" if f.line is None else str(f.line)
            cells.append([_e(r.name), _e(f.path), _e(line), _e(f.message), _e(f.cell or "(not from an inventory)")])
    return cells


def _warning_cells(rows: Sequence[fleetstate.Row], pictured: set[str]) -> list[list[str]]:
    return [
        [_site_link(r, pictured), _phase_badge(r.phase), "<br>".join(_e(w) for w in r.warnings)]
        for r in rows
        if r.warnings
    ]


def _token_cells(rows: Sequence[fleetstate.Row], now: dt.datetime) -> list[list[str]]:
    return [
        [
            _e(r.name),
            _phase_badge(r.phase),
            _e(f"{r.token_expires:%Y-%m-%d %H:%M} UTC"),
            _e(_days((r.token_expires - now).total_seconds())),
        ]
        for r in _expiring(rows, now)
        if r.token_expires is not None
    ]


def needs_owner(rows: Sequence[fleetstate.Row], now: dt.datetime, pictured: set[str]) -> str:
    """The page's opening section: the failed sites (step, message, what to do), the silent ones, the invalid ones
    (field, line, message and the inventory cell to fix), the warnings of finished runs, and the reporting tokens
    expiring within `TOKEN_SOON` of sites not relocated yet; one line saying so when nothing needs anyone."""
    parts = []
    failed = _failed_cells(rows, now, pictured)
    if failed:
        parts.append(_need("Failed", ("site", "step", "message", "to do", "last report"), failed))
    stale = _stale_cells(rows, now, pictured)
    if stale:
        parts.append(_need("Stale: no report for too long", ("site", "step", "last report", "waiting for"), stale))
    invalid = _invalid_cells(rows)
    if invalid:
        parts.append(_need("Invalid", ("site", "field", "line", "message", "inventory cell"), invalid))
    warned = _warning_cells(rows, pictured)
    if warned:
        parts.append(_need("Warnings", ("site", "phase", "warnings"), warned))
    tokens = _token_cells(rows, now)
    if tokens:
        days = TOKEN_SOON / 86400
        heading = f"Reporting tokens expiring within {days:g} days: make the stick again (fleet make-media)"
        parts.append(_need(heading, ("site", "phase", "token expires", "when"), tokens))
    calm = "Nothing needs you: no site failed, is silent, invalid or warned, and no token expires soon."
    body = "".join(parts) or f'<p class="muted">{calm}</p>'
    return f'<h2 id="needs">Needs you</h2>{body}'


def sticks(rows: Sequence[fleetstate.Row], now: dt.datetime) -> str:
    """The Ready sites: which have a stick (`fleet make-media` asked for it) and when each one's reporting token
    expires, soonest first."""
    ready = [r for r in rows if r.phase == site.Phase.READY]
    if not ready:
        return ""
    made = sorted((r for r in ready if r.stick), key=lambda r: (r.token_expires or now, r.namespace, r.name))
    body = [
        f"<tr><td>{_e(r.name)}</td><td>{_e(r.namespace)}</td><td>{_e(r.stick)}</td>"
        f"<td>{_e(f'{r.token_expires:%Y-%m-%d %H:%M} UTC' if r.token_expires else 'no token issued')}</td>"
        f"<td>{_e(_days((r.token_expires - now).total_seconds()) if r.token_expires else '')}</td></tr>"
        for r in made
    ]
    without = len(ready) - len(made)
    note = f"{len(made)} of {len(ready)} Ready sites have a stick; {without} have none yet (fleet make-media)."
    table = _table(("site", "namespace", "stick asked for", "token expires", "when"), body) if body else ""
    return f'<h2 id="sticks">Ready sites: sticks and tokens</h2><p>{_e(note)}</p>{table}'


SHOWN_SHELF = 100  # sites of the shelf section (`fleet status --shelf -o csv` lists all)
SHELF_SOON = 14  # days: a must-boot-by date this close is marked (the alert's warning, SnorelocShelfHorizonNear)


def shelf(rows: Sequence[fleetstate.Row], now: dt.datetime) -> str:
    """The sites not yet relocated whose must-boot-by date is known, soonest first (issue 37): what must be shipped
    first; "" when no such site."""
    ordered = fleetstate.shelf_order(rows)
    if not ordered:
        return ""
    body = []
    for r in ordered[:SHOWN_SHELF]:
        horizon, left = r.horizon, fleetstate.days_left(r, now)
        if horizon is None or left is None:
            continue
        days = f"{left} days left" if left >= 0 else f"past by {-left} days"
        mark = ' class="soon"' if left < SHELF_SOON else ""
        body.append(
            f"<tr><td>{_e(r.name)}</td><td>{_e(r.namespace)}</td><td>{_phase_badge(r.phase)}</td>"
            f"<td>{horizon.must_boot_by:%Y-%m-%d %H:%M} UTC</td><td{mark}>{_e(days)}</td><td>{_e(horizon.set_by)}</td>"
            f"<td>{_e(horizon.source)}</td><td>{_e(r.wave)}</td></tr>"
        )
    soon = sum(1 for r in ordered if (d := fleetstate.days_left(r, now)) is not None and d < SHELF_SOON)
    note = (
        f"{len(ordered)} sites not yet relocated have a known must-boot-by date; {soon} within {SHELF_SOON} days or "
        "past it. A node past its date stops at the site before any change and goes back to the depot."
    )
    more = len(ordered) - SHOWN_SHELF
    tail = f'<p class="muted">and {more} more (snoreloc fleet status --shelf -o csv).</p>' if more > 0 else ""
    headers = ("site", "namespace", "phase", "must boot by", "days left", "set by", "from", "wave")
    return f'<h2 id="shelf">Shelf life: ship first</h2><p>{_e(note)}</p>{_table(headers, body)}{tail}'


def _implausible(summary: fleetstate.Summary) -> str:
    """A note naming the sites whose report held an implausible value (shown as unknown); "" when none did."""
    if not summary.implausible:
        return ""
    names = ", ".join(_e(r.name) for r in summary.implausible[:SHOWN_IMPLAUSIBLE])
    more = len(summary.implausible) - SHOWN_IMPLAUSIBLE
    tail = f" and {more} more" if more > 0 else ""
    return (
        f'<p class="muted">{len(summary.implausible)} sites reported implausible values, shown as unknown: '
        f"{names}{tail} (<code>snoreloc fleet why SITE</code> names the fields).</p>"
    )


def _waves(waves: Sequence[wavestate.Wave]) -> str:
    """Each Wave: its phase, the cause of a halt, its batches' counts ("" when there is no Wave)."""
    if not waves:
        return ""
    parts = ['<h2 id="waves">Waves</h2>']
    for item in waves:
        halt = f"<p><b>Halted in batch {item.halt_batch}:</b> {_e(item.halt)}</p>" if item.halt else ""
        body = [
            "<tr>" + "".join(f'<td class="n">{_e("?" if b.get(c) is None else str(b.get(c)))}</td>'
                             for c in wavestate.BATCH_COLUMNS) + "</tr>"
            for b in item.batches
        ]  # fmt: skip
        parts.append(
            f"<h3>{_e(item.name)} ({_e(item.namespace)}): {_e(item.phase)}</h3>{halt}"
            + _table(wavestate.BATCH_COLUMNS, body)
        )
    return "".join(parts)


def render(
    rows: Sequence[fleetstate.Row],
    now: dt.datetime,
    *,
    title: str,
    timelines: int = 300,
    waves: Sequence[wavestate.Wave] = (),
) -> str:
    """The whole page (with a section for each Wave in `waves`)."""
    summary = fleetstate.summarize(rows, now, silent_after=900.0)
    durations = [d for r in rows if (d := r.duration) is not None]
    pictured_rows = _pictured(rows, timelines)
    pictured = {_anchor(r) for r in pictured_rows}
    counts = "".join(f'<tr><td>{_phase_badge(p)}</td><td class="n">{n}</td></tr>' for p, n in summary.by_phase.items())
    over = sum(1 for d in durations if d > fleetstate.BUDGET_SECONDS)
    steps = "".join(
        f"<tr><td>{_e(n)}</td>" + "".join(f'<td class="n">{v:.0f}</td>' for v in (c, m, p, x)) + "</tr>"
        for n, c, m, p, x in slowest_steps(rows)
    )
    steps_table = (
        _table(("step", "runs", "median s", "90th percentile s", "worst s"), [steps])
        if steps
        else '<p class="muted">No step reported yet.</p>'
    )
    embedded = f"{len(pictured_rows)} embedded: those needing someone first, then the slowest"
    pictures = "".join(
        f'<details id="{_e(_anchor(r))}"><summary>{_e(r.name)} ({_e(r.phase)})</summary>{_timeline(r)}</details>'
        for r in pictured_rows
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title><style>{STYLE}</style></head><body>
<h1>{_e(title)}</h1>
<p class="muted">{summary.total} sites; generated {now:%Y-%m-%d %H:%M} UTC by snoreloc fleet report.</p>
{needs_owner(rows, now, pictured)}
{_waves(waves)}
{shelf(rows, now)}
<h2 id="phases">Phases</h2>{phase_bar(dict(summary.by_phase))}
<table>{counts}</table>
<h2 id="durations">Relocation durations</h2>
<p>{len(durations)} relocations finished; {over} over the {fleetstate.BUDGET_SECONDS // 60}-minute budget.</p>
<p class="muted">{CLOCK_NOTE}</p>
{histogram(durations)}
<h2 id="steps">Slowest steps across the fleet</h2>
{steps_table}
<h2 id="reasons">Failure reasons, ranked</h2>{_reasons(summary, rows, pictured)}
<h2 id="sites">Sites</h2>
<p class="muted">A site's name opens its timeline ({embedded}).</p>{_implausible(summary)}
{_sites(rows, now, pictured)}
{sticks(rows, now)}
<h2 id="timelines">Timelines</h2>{pictures or '<p class="muted">No site has reported steps yet.</p>'}
<script>{SCRIPT}</script>
</body></html>
"""

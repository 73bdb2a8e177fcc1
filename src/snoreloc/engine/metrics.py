"""The run's own metrics in the Prometheus text format, served by the progress page at `/metrics`.

A site's monitoring (or a technician's laptop) can scrape where the relocation is without parsing the page: steps
done of total, the step running, how long the current wait has lasted against its budget, the run's duration and
its warnings. Every value comes from what the page itself shows (`view.Progress`, `timeline.Timeline`), read
afresh at each scrape, so the two never disagree. Only counts, seconds and step names go out: no text of the
journal, so nothing a redaction could miss. The step names and the state come from the journal, which anyone who
could write status.json shapes: every label value passes through `sanitize.visible` first (`label`), so a control
character shows as an escape and a lone surrogate, which prometheus_client cannot encode (a 500 for the scrape),
as `\\ud800` (issue 30).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector

from snoreloc import sanitize
from snoreloc.engine import timeline, view

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
STATES = ("new", "running", "done", "done-with-warnings", "failed", "interrupted", "partial")
Content = Callable[[], tuple[view.Progress, timeline.Timeline]]


def label(text: object) -> str:
    """A label value as the exposition may carry it: controls and lone surrogates shown as escapes, on one line."""
    return sanitize.visible(text, keep_lines=False)


def _gauge(name: str, doc: str, value: float, unit: str = "") -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value, unit=unit)


def duration(picture: timeline.Timeline) -> float:
    """Seconds since the run started: to its end once it ended, else to the latest bar (drawn up to now)."""
    if picture.end is not None:
        return picture.end
    return max([0.0, *(bar.end for bar in picture.bars), *(mark.end for mark in picture.waits)])


def current_step(progress: view.Progress) -> str:
    """The step in progress: the one waiting, else the one running, else ""."""
    if progress.current is not None:
        return progress.current.step
    return next((row.name for row in progress.steps if row.state == "running"), "")


class RunCollector(Collector):
    """Reads the page's content at every scrape and describes it as gauges."""

    def __init__(self, content: Content) -> None:
        self.content = content

    def collect(self) -> Iterator[Metric]:
        progress, picture = self.content()
        done = sum(1 for row in progress.steps if row.state == "done")
        yield _gauge("snoreloc_run_steps_done", "Steps of the run done (skipped as unchanged included).", done)
        yield _gauge("snoreloc_run_steps_total", "Steps of the run.", len(progress.steps))
        step = label(current_step(progress))
        yield InfoMetricFamily("snoreloc_run_step", "The step in progress.", value={"step": step})
        state = GaugeMetricFamily("snoreloc_run_state", "The run's state (1 for the current one).", labels=["state"])
        for name in (*STATES, *((progress.state,) if progress.state not in STATES else ())):
            state.add_metric([label(name)], 1.0 if name == progress.state else 0.0)
        yield state
        wait = progress.current
        yield _gauge("snoreloc_run_wait", "Time in the current wait (0: none).", wait.elapsed if wait else 0, "seconds")
        budget = wait.budget if wait else 0
        yield _gauge("snoreloc_run_wait_budget", "The current wait's bound (0: none).", budget, "seconds")
        yield _gauge("snoreloc_run_duration", "Time since the run started, to its end.", duration(picture), "seconds")
        yield _gauge("snoreloc_run_warnings", "Distinct warnings the run's steps recorded.", len(progress.warnings))


def exposition(content: Content) -> bytes:
    """The metrics text for one scrape."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RunCollector(content))
    return generate_latest(registry)

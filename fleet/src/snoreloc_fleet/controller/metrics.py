"""The hub controller's Prometheus metrics: the fleet's state as SLIs, for dashboards and symptom-based alerts.

Served with `prometheus_client` from the controller process (`serve`), in a registry of its own:

| metric | type | what |
|---|---|---|
| `snoreloc_fleet_sites{namespace,phase}` | gauge | Sites by phase (every phase, 0 included, per namespace seen) |
| `snoreloc_fleet_relocation_duration_seconds` | histogram | relocations finished, by how long their steps took |
| `snoreloc_fleet_report_age_seconds{running}` | gauge histogram | seconds since each Site's last report |
| `snoreloc_fleet_reconcile_errors_total{reason}` | counter | reconciles that raised, by exception class |
| `snoreloc_fleet_api_requests_total{verb,code}` | counter | API requests by verb and outcome |
| `snoreloc_fleet_site_crd_served` | gauge | 1 once the API serves the Site CRD, 0 while the controller waits for it |

| `snoreloc_fleet_wave_sites{namespace,wave,state}` | gauge | a Wave's Sites by state (pending, running, ...) |
| `snoreloc_fleet_wave_halted{namespace,wave}` | gauge | 1 while the Wave's brake holds it (status.halt), else 0 |
| `snoreloc_fleet_shelf_days_left{namespace,wave}` | gauge histogram | Sites to relocate by days left (issue 37) |
| `snoreloc_fleet_delivery_sites{namespace,state}` | gauge | BMC-delivered Sites by `status.delivery.state` (issue 36) |
| `snoreloc_fleet_image_downloads_total{namespace}` | counter | whole images the image server sent |
| `snoreloc_fleet_image_refusals_total{code}` | counter | image URLs it refused: 403 (not the hub's), 410 (gone) |

The shelf's days left are a gauge histogram per namespace and wave (the Site's `status.gate.wave`, "" for none), not
a gauge per Site: 10,000 Sites would be 10,000 series, and an alert needs only "how many within N days"
(`SHELF_BUCKETS`; `le="0.0"` counts those already past it).

The BMC delivery's states (`resource.delivery.State`, every one, 0 included, per namespace seen) come from each
Site's `status.delivery.state` as last seen, like the phases; a Site delivered by stick has none and counts in no
state. The image server's answers are counted as they happen (`image_answered`): a whole download by the namespace
of the Site whose signed URL was served (a transfer cut midway is not one, as in the Site's status), a refusal by
its status only, never by the namespace or Site a refused URL claims (anyone can send one: its labels would be
theirs to choose); no URL, signature or Site name in any label.

`running="true"` ages are those of runs in progress (InProgress, Stale); an outcome is `2xx`, the status of a
refusal, or `unreachable`. The state metrics are computed at scrape time from the last version of each Site the
controller saw (`observe`), so a scrape costs one pass over the index and nothing on the API; the index keeps of a
Site only what they need (its phase, run state and report time: `KEPT`), not its steps or its report's text, so
10,000 relocated Sites cost it about as little as 10,000 new ones. A node's report is data, not trust: a duration
that is not a finite number of seconds between 0 and `site.MAX_SECONDS` (the schema's bound) and the age of a
report dated more than `site.CLOCK_SKEW` ahead of the controller's clock are left out (`plausible`, `age`), never
exported; a report slightly ahead counts as age 0. A relocation's
duration is observed once, when the controller sees its Site turn done: on a transition it watched, or at first
sight when the report is fresh (`FRESH`), so a restarted controller does not count the fleet's history again.
The alerts built on these are in `snoreloc_fleet/deploy/prometheusrule.yaml`; docs/fleet.md has a runbook for each.
"""

from __future__ import annotations

import datetime as dt
import math
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import GaugeHistogramMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from snoreloc_fleet.resource import delivery, site
from snoreloc_fleet.resource import wave as wave_mod
from snoreloc_fleet.state import fleetstate

PREFIX = "snoreloc_fleet"
DURATION_BUCKETS = (300.0, 600.0, 900.0, 1200.0, 1500.0, 1800.0, 2700.0, 3600.0, 7200.0)  # 1200: the budget
AGE_BUCKETS = (60.0, 300.0, 900.0, 1800.0, 3600.0, 21600.0, 86400.0)  # 900: "silent" (fleet status' default)
FRESH = 600.0  # a done report younger than this, seen first, is counted as a relocation that just finished
SHELF_BUCKETS = (0.0, 7.0, 14.0, 30.0, 60.0, 90.0)  # days left before a node must boot (14: the alert's warning)
KEPT = ("namespace", "name", "phase", "run_state", "reported_at", "horizon", "wave")  # of a row, what the index keeps
_KeyT = tuple[str, str]
REFUSALS = ("403", "410")  # the image server's refusals counted (`hub.imageurl.Verdict`), each served from 0
DELIVERY_STATES = tuple(state.value for state in delivery.State)


def plausible(seconds: float | None) -> float | None:
    """`seconds` when it is a duration a node can have reported truthfully (finite, 0 to `site.MAX_SECONDS`); None
    (left out) otherwise: the one place the controller's metrics judge a node's numbers."""
    if seconds is None or not math.isfinite(seconds) or not 0.0 <= seconds <= site.MAX_SECONDS:
        return None
    return seconds


def age(row: fleetstate.Row, now: dt.datetime) -> float | None:
    """Seconds since the row's report by the controller's clock; None without a report or when it is dated more
    than `site.CLOCK_SKEW` ahead (implausible: left out, so it cannot hold an age at 0 for ever)."""
    if row.reported_at is None or row.reported_at.tzinfo is None:
        return None
    seconds = (now - row.reported_at).total_seconds()
    return None if seconds < -site.CLOCK_SKEW else max(0.0, seconds)


def verb(method: str, path: str, query: Mapping[str, str] | None) -> str:
    """The Kubernetes verb of a request (`list` for a GET of a collection, `watch` with ?watch)."""
    query = query or {}
    if method == "GET":
        if query.get("watch") in ("1", "true"):
            return "watch"
        return "list" if path.rstrip("/").endswith(f"/{site.PLURAL}") or "limit" in query else "get"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, method.lower())


class FleetMetrics:
    """Every metric of the controller, and the index of the last Site seen by key."""

    def __init__(self, *, now: Callable[[], dt.datetime] | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._now = now or (lambda: dt.datetime.now(dt.UTC))
        self._rows: dict[_KeyT, fleetstate.Row] = {}
        self._waves: dict[_KeyT, tuple[dict[str, int], bool]] = {}  # (counts by state, halted), from its status
        self._delivery: dict[_KeyT, str] = {}  # a BMC-delivered Site's status.delivery.state, as last seen
        self._lock = threading.Lock()
        self.durations = Histogram(
            f"{PREFIX}_relocation_duration_seconds",
            "Relocations finished, by the seconds their steps took (the node's report).",
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.reconcile_errors = Counter(
            f"{PREFIX}_reconcile_errors",
            "Reconciles that raised, by exception class.",
            ["reason"],
            registry=self.registry,
        )
        self.api_requests = Counter(
            f"{PREFIX}_api_requests",
            "The controller's API requests, by Kubernetes verb and HTTP status code.",
            ["verb", "code"],
            registry=self.registry,
        )
        self.crd_served = Gauge(
            f"{PREFIX}_site_crd_served",
            "1 once the API serves the Site CRD; 0 while the controller waits for it (controller.startup).",
            registry=self.registry,
        )
        self.image_downloads = Counter(
            f"{PREFIX}_image_downloads",
            "Whole Site images the image server sent (as the Site's status counts them), by the Site's namespace.",
            ["namespace"],
            registry=self.registry,
        )
        self.image_refusals = Counter(
            f"{PREFIX}_image_refusals",
            "Image URLs the image server refused, by HTTP status: 403 not signed by this hub, 410 expired or revoked.",
            ["code"],
            registry=self.registry,
        )
        for code in REFUSALS:
            self.image_refusals.labels(code)
        self.registry.register(_StateCollector(self))

    def observe(self, obj: Mapping[str, Any]) -> None:
        """Remember the Site as last seen (`KEPT`: not its steps nor its report's text); count its relocation when
        it has just finished."""
        item = fleetstate.row(obj)
        key = (item.namespace, item.name)
        kept = fleetstate.Row(**{name: getattr(item, name) for name in KEPT})
        state = ((obj.get("status") or {}).get(site.STATUS_DELIVERY) or {}).get("state")
        with self._lock:
            before = self._rows.get(key)
            self._rows[key] = kept
            if state in DELIVERY_STATES:
                self._delivery[key] = str(state)
            else:
                self._delivery.pop(key, None)
        duration = plausible(item.duration)
        if self._just_finished(before, item) and duration is not None:
            self.durations.observe(duration)

    def _just_finished(self, before: fleetstate.Row | None, item: fleetstate.Row) -> bool:
        if item.run_state not in site.RUN_DONE:
            return False
        if before is not None:
            return before.run_state not in site.RUN_DONE or before.reported_at != item.reported_at
        since = age(item, self._now())
        return since is not None and since <= FRESH

    def seen(self, event: Mapping[str, Any]) -> None:
        """A watch event of a Site (kopf's `event`): remember it, or forget it when deleted."""
        obj = event.get("object")
        if not isinstance(obj, Mapping):
            return
        if event.get("type") == "DELETED":
            meta = obj.get("metadata") or {}
            self.forget(str(meta.get("namespace", "")), str(meta.get("name", "")))
        else:
            self.observe(obj)

    def seen_wave(self, event: Mapping[str, Any]) -> None:
        """A watch event of a Wave: keep its counts and whether it is halted (from its status), or forget it."""
        obj = event.get("object")
        if not isinstance(obj, Mapping):
            return
        seen = wave_mod.view(obj)
        key = (seen.namespace, seen.name)
        with self._lock:
            if event.get("type") == "DELETED":
                self._waves.pop(key, None)
                return
            counts = {state: 0 for state in wave_mod.COUNTS}
            for batch in wave_mod.batch_rows(seen.status):
                for state in wave_mod.COUNTS:
                    value = batch.get(state)
                    counts[state] += value if isinstance(value, int) and 0 <= value <= site.MAX_MORE else 0
            self._waves[key] = (counts, bool(seen.halt))

    def waves(self) -> list[tuple[_KeyT, dict[str, int], bool]]:
        with self._lock:
            return [(key, dict(counts), halted) for key, (counts, halted) in sorted(self._waves.items())]

    def forget(self, namespace: str, name: str) -> None:
        with self._lock:
            self._rows.pop((namespace, name), None)
            self._delivery.pop((namespace, name), None)

    def deliveries(self) -> list[tuple[str, str]]:
        """(namespace, delivery state) of each BMC-delivered Site with a state."""
        with self._lock:
            return [(namespace, state) for (namespace, _name), state in self._delivery.items()]

    def image_answered(self, namespace: str, status: int) -> None:
        """One answer of the image server (`hub.imageserver.Answered`): a download in `namespace`, or a refusal."""
        if status == 200 and namespace:
            self.image_downloads.labels(namespace).inc()
        elif str(status) in REFUSALS:
            self.image_refusals.labels(str(status)).inc()

    def request(self, method: str, path: str, query: Mapping[str, str] | None, code: str) -> None:
        """One API request: `code` is the HTTP status of a refusal, `2xx` for success, `unreachable`."""
        self.api_requests.labels(verb(method, path, query), code).inc()

    def error(self, exc: BaseException) -> None:
        self.reconcile_errors.labels(type(exc).__name__).inc()

    def rows(self) -> list[fleetstate.Row]:
        with self._lock:
            return list(self._rows.values())

    def now(self) -> dt.datetime:
        return self._now()


class _StateCollector(Collector):
    """Sites by phase and the report-age distributions, computed from the index at each scrape."""

    def __init__(self, metrics: FleetMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[GaugeMetricFamily | GaugeHistogramMetricFamily]:
        rows = self._metrics.rows()
        now = self._metrics.now()
        yield _phases(rows)
        yield _ages(rows, now)
        yield _shelf(rows, now)
        yield _deliveries(rows, self._metrics.deliveries())
        yield from _waves(self._metrics.waves())


def _waves(
    waves: list[tuple[_KeyT, dict[str, int], bool]],
) -> Iterator[GaugeMetricFamily]:
    sites = GaugeMetricFamily(
        f"{PREFIX}_wave_sites", "Each Wave's Sites by state (its status).", labels=["namespace", "wave", "state"]
    )
    halted = GaugeMetricFamily(
        f"{PREFIX}_wave_halted",
        "1 while the Wave's brake holds it (status.halt), else 0.",
        labels=["namespace", "wave"],
    )
    for (namespace, name), counts, stopped in waves:
        for state, count in counts.items():
            sites.add_metric([namespace, name, state], count)
        halted.add_metric([namespace, name], 1.0 if stopped else 0.0)
    yield sites
    yield halted


def _phases(rows: list[fleetstate.Row]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(f"{PREFIX}_sites", "Sites by phase.", labels=["namespace", "phase"])
    counts: dict[tuple[str, str], int] = {}
    for namespace in sorted({r.namespace for r in rows}):
        counts.update({(namespace, p.value): 0 for p in site.Phase})
    for item in rows:
        counts[(item.namespace, item.phase)] = counts.get((item.namespace, item.phase), 0) + 1
    for (namespace, phase), count in sorted(counts.items()):
        family.add_metric([namespace, phase], count)
    return family


def _deliveries(rows: list[fleetstate.Row], deliveries: list[tuple[str, str]]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(
        f"{PREFIX}_delivery_sites",
        "BMC-delivered Sites by where their image is (status.delivery.state: Inserted, Ejected, TimedOut, Failed, "
        "NoImageServer).",
        labels=["namespace", "state"],
    )
    counts = {(namespace, state): 0 for namespace in {r.namespace for r in rows} for state in DELIVERY_STATES}
    for key in deliveries:
        counts[key] = counts.get(key, 0) + 1
    for (namespace, state), count in sorted(counts.items()):
        family.add_metric([namespace, state], count)
    return family


def _ages(rows: list[fleetstate.Row], now: dt.datetime) -> GaugeHistogramMetricFamily:
    family = GaugeHistogramMetricFamily(
        f"{PREFIX}_report_age_seconds",
        "Seconds since each Site's last node report; running=true: runs in progress (InProgress, Stale).",
        labels=["running"],
    )
    for running in (True, False):
        ages = [a for r in rows if (r.phase in fleetstate.RUNNING) == running and (a := age(r, now)) is not None]
        buckets = [(_le(bound), float(sum(1 for a in ages if a <= bound))) for bound in AGE_BUCKETS]
        buckets.append(("+Inf", float(len(ages))))
        family.add_metric(["true" if running else "false"], buckets, gsum_value=sum(ages))
    return family


def _shelf(rows: list[fleetstate.Row], now: dt.datetime) -> GaugeHistogramMetricFamily:
    family = GaugeHistogramMetricFamily(
        f"{PREFIX}_shelf_days_left",
        "Sites not yet relocated whose must-boot-by date is known, by days left before it (negative: past it), "
        "per namespace and wave (status.gate.wave; empty: in no wave).",
        labels=["namespace", "wave"],
    )
    groups: dict[_KeyT, list[float]] = {}
    for item in rows:
        if item.shelved and item.horizon is not None:
            groups.setdefault((item.namespace, item.wave), []).append(item.horizon.days_left(now))
    for (namespace, wave), days in sorted(groups.items()):
        buckets = [(_le(bound), float(sum(1 for d in days if d <= bound))) for bound in SHELF_BUCKETS]
        buckets.append(("+Inf", float(len(days))))
        family.add_metric([namespace, wave], buckets, gsum_value=sum(days))
    return family


def _le(bound: float) -> str:
    return f"{bound:.1f}"


@dataclass
class Served:
    """A running `/metrics` endpoint: its port (the one asked for, or the one the system chose for 0), and stop."""

    port: int
    stop: Callable[[], None]


def serve(metrics: FleetMetrics, port: int, address: str = "0.0.0.0") -> Served:  # noqa: S104
    """Serve `/metrics` on `address:port` in a thread (port 0: any free port)."""
    server, thread = start_http_server(port, addr=address, registry=metrics.registry)

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(5.0)

    return Served(int(server.server_port), stop)

"""The controller's metrics index keeps of each Site only what the metrics need (phase, run state, report time),
not its relocation's steps nor its report's text: 10,000 relocated Sites cost it no more than 10,000 new ones, and
the metrics served from it are unchanged (a finished relocation's duration is observed before its steps are
dropped)."""

from __future__ import annotations

import dataclasses
import datetime as dt

from fleetsites import NOW, report, site_obj
from snoreloc_fleet.controller import metrics
from snoreloc_fleet.resource import site
from snoreloc_fleet.state import fleetstate


def test_the_index_keeps_no_steps_and_still_counts_the_relocation() -> None:
    fleet_metrics = metrics.FleetMetrics(now=lambda: NOW)
    done = site_obj(
        "store-0001",
        site.Phase.RELOCATED,
        reason=site.Reason.DONE,
        agent=report("done", reported=NOW - dt.timedelta(minutes=1), seconds=120.0),
    )
    assert fleetstate.row(done).steps  # the Site's report has steps ...
    fleet_metrics.observe(done)
    (kept,) = fleet_metrics.rows()
    assert (kept.steps, kept.waiting, kept.todo, kept.failure) == ((), None, "", "")  # ... the index none
    kept_fields = {field.name: getattr(kept, field.name) for field in dataclasses.fields(kept)}
    assert {name: kept_fields[name] for name in metrics.KEPT} == {
        "namespace": "fleet-emea",
        "name": "store-0001",
        "phase": site.Phase.RELOCATED.value,
        "run_state": "done",
        "reported_at": NOW - dt.timedelta(minutes=1),
        "horizon": None,  # no must-boot-by date known (issue 37: the shelf metric's)
        "wave": "",
    }
    assert fleet_metrics.durations.collect()[0].samples[-1].value > 0  # _sum: the duration was observed

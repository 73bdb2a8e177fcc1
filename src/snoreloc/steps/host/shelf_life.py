"""Step `shelf`: where a node back from the depot stands, from the horizon `seal` recorded (issue 37).

Before the run changes anything (`check_host`, called by the node flow before the site network is touched) it
reads the seal marker's `shelf` entry, the kubelet's certificate files again, and the clock:

- within the horizon, nothing expired: the run goes on as ever;
- past a certificate the platform or snoreloc recovers (`pki.shelf.AtExpiry`): the run goes on, and once the API
  answers this step waits for each control-plane certificate the platform regenerates at start, each with its own
  bounded, visible wait (`REGENERATION_BUDGET`), and says which and why; the kubelet's client and serving
  certificates come back through the node's CSRs, which the `csr` step approves next (once the fleet's gate, when
  the medium names a hub, lets the node go: `engine.fleetgate`);
- past what nothing recovers unattended: `ShelfExpired` (exit 69) before any change, one verdict saying what
  expired, when the node was sealed and what to do.

A marker without a `shelf` entry (sealed by an older snoreloc, or no marker) leaves the step with nothing to judge
but the kubelet's files: it says so and goes on as before.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Mapping
from typing import Any

from snoreloc import errors, waits
from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.host import kubelet
from snoreloc.host.services import HostServices
from snoreloc.pki import shelf
from snoreloc.siteconfig import model
from snoreloc.steps import base, context

LOG = logging.getLogger(__name__)

REGENERATION_BUDGET = 600.0  # seconds per regenerated certificate (CRC allows 5 to 8 minutes per renewal)
REGENERATION_HINT = (
    "The control plane regenerates expired certificates when kube-apiserver and kube-controller-manager start. "
    "Look at `crictl ps -a` and `crictl logs` of their cert-regeneration / cert-recovery containers, then run "
    "`snoreloc run` again."
)


class ShelfExpired(errors.UnavailableError):
    """The node waited past what it can recover unattended: nothing was changed."""

    default_hint = shelf.VERDICT_HINT


class ShelfLife:
    """Judge the time on the shelf before any change; after the API answers, wait for what the platform regenerates."""

    name = "shelf"
    description = "checking the certificates' time on the shelf"

    def __init__(self, host: HostServices, clk: clock_mod.Clock | None = None) -> None:
        self.host = host
        self.clock = clk or clock_mod.SystemClock()

    def standing(self, now: dt.datetime | None = None) -> shelf.Standing | None:
        """Where the node stands now (None: the marker records no horizon and the kubelet's files say nothing)."""
        horizon = self._recorded()
        fresher = tuple(reading for reading in map(self._file_reading, shelf.WATCHED) if reading is not None)
        if horizon is None and not fresher:
            return None
        base_horizon = horizon or shelf.Horizon(dt.datetime.min.replace(tzinfo=dt.UTC), ())
        return shelf.Standing(base_horizon.with_readings(fresher), now or self.clock.now())

    def _recorded(self) -> shelf.Horizon | None:
        try:
            marker = json.loads(self.host.fs.read_text(kubelet.SEAL_MARKER))
        except (OSError, ValueError):
            return None
        record = marker.get("shelf") if isinstance(marker, Mapping) else None
        if not isinstance(record, Mapping):
            return None
        try:
            sealed = shelf.parse_stamp(str(record.get("sealedAt") or marker.get("time", "")))
        except ValueError:
            return None
        return shelf.from_record(record, sealed)

    def _file_reading(self, watched: shelf.Watched) -> shelf.Reading | None:
        if not watched.path:
            return None
        try:
            return shelf.Reading(watched.name, shelf.pem_not_after(self.host.fs.read_bytes(watched.path)))
        except (OSError, ValueError):
            return None

    # --- before any change ------------------------------------------------------------------------------------

    def check_host(self, site: model.SiteConfig) -> None:
        standing = self.standing()
        if standing is not None and standing.stuck:
            raise ShelfExpired(standing.verdict())

    # --- the step ---------------------------------------------------------------------------------------------

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {}

    def plan(self, ctx: context.Context) -> base.Plan:
        standing = self.standing(ctx.clock.now())
        note = standing.summary() if standing else "no horizon recorded at the seal: nothing to judge"
        return base.Plan(self.name, notes=(note,))

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
        standing = self.standing(ctx.clock.now())
        if standing is None:
            return base.StepOutcome(details={"summary": "no horizon recorded at the seal"})
        if standing.stuck:  # the clock moved past the horizon since the run began
            raise ShelfExpired(standing.verdict())
        regenerated = [
            self._await_regeneration(ctx, reading) for reading in standing.expired(shelf.AtExpiry.REGENERATED)
        ]
        for reading in standing.expired(shelf.AtExpiry.CSR):
            waits.PROGRESS.info(
                "shelf: %s expired on %s: %s (the csr step)", reading.name, f"{reading.not_after:%Y-%m-%d}",
                reading.watched.why,
            )  # fmt: skip
        return base.StepOutcome(details=_details(standing, regenerated))

    def _await_regeneration(self, ctx: context.Context, reading: shelf.Reading) -> dict[str, Any]:
        watched = reading.watched
        ref = kube.Ref(kube.SECRETS, watched.name, watched.namespace)
        waits.PROGRESS.info(
            "shelf: %s expired on %s: %s; waiting up to %s", watched.name, f"{reading.not_after:%Y-%m-%d}",
            watched.why, waits.duration(REGENERATION_BUDGET),
        )  # fmt: skip
        start = ctx.clock.monotonic()
        wait = waits.Wait(
            self.name,
            f"the platform to regenerate {watched.namespace}/{watched.name}",
            REGENERATION_BUDGET,
            interval=ctx.settings.poll_interval,
            hint=REGENERATION_HINT,
        )

        def renewed() -> dt.datetime | None:
            found = shelf.secret_not_after(ctx.kube.find(ref))
            return found if found is not None and found > ctx.clock.now() else None

        until = waits.until(renewed, wait, ctx.clock)
        return {"name": watched.name, "notAfter": shelf.stamp(until), "waited": round(ctx.clock.monotonic() - start, 1)}

    def verify(self, ctx: context.Context) -> None:
        return None


def _details(standing: shelf.Standing, regenerated: list[dict[str, Any]]) -> dict[str, Any]:
    """What the journal keeps and the node reports: the horizon, the days on the shelf, what was recovered how."""
    horizon = standing.horizon
    known = horizon.sealed_at.year > 1
    return {
        "summary": standing.summary(),
        "sealedAt": shelf.stamp(horizon.sealed_at) if known else None,
        "shelfDays": standing.shelf_days if known else None,
        "mustBootBy": shelf.stamp(horizon.must_boot_by) if horizon.must_boot_by else None,
        "setBy": horizon.limit.name if horizon.limit else None,
        "regenerated": regenerated,
        "csr": [reading.name for reading in standing.expired(shelf.AtExpiry.CSR)],
    }

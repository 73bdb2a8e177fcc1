"""Fake steps and a context wired to a FakeClock, for engine tests that need no cluster."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from snoreloc import errors
from snoreloc.adapters import clock as clock_mod
from snoreloc.adapters import kube
from snoreloc.engine import backups, journal, paths
from snoreloc.siteconfig import model
from snoreloc.steps import base, context


@dataclass
class FakeStep:
    """Records calls; inputs come from a shared dict so a test can 'change the site-config'."""

    name: str
    inputs_source: dict[str, Any]
    calls: list[str] = field(default_factory=list)
    verify_ok: bool = True
    fail_with: errors.SnorelocError | None = None
    sleep: float = 0.0
    description: str = "fake"

    def inputs(self, ctx: context.Context) -> Mapping[str, Any]:
        return {"value": self.inputs_source.get(self.name)}

    def plan(self, ctx: context.Context) -> base.Plan:
        self.calls.append("plan")
        return base.Plan(self.name, notes=(f"would do {self.name}",))

    def apply(self, ctx: context.Context, plan: base.Plan) -> base.StepOutcome:
        self.calls.append("apply")
        ctx.clock.sleep(self.sleep)
        if self.fail_with is not None:
            raise self.fail_with
        return base.StepOutcome(changed=(f"update thing {self.name}",))

    def verify(self, ctx: context.Context) -> None:
        self.calls.append("verify")
        if not self.verify_ok:
            raise errors.TemporaryError(f"{self.name} not verified")


@dataclass
class Harness:
    root: Path
    clock: clock_mod.FakeClock
    paths: paths.Paths
    inputs: dict[str, Any]
    steps: list[FakeStep]

    def context(self, total: int = 3600) -> tuple[context.Context, journal.Journal]:
        jour = journal.Journal(self.paths.status, self.clock)
        site = model.SiteConfig(name="site1", domain="edge.example.net", timeouts=model.Timeouts(total=total))
        client = kube.Client(None, clock=self.clock)  # never called by fake steps
        ctx = context.Context(
            site=site,
            kube=client,
            clock=self.clock,
            backups=backups.Store(self.paths.backups, self.clock),
            rollouts=jour,
            deadline=self.clock.monotonic() + total,
        )
        return ctx, jour


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    inputs = {"alpha": 1, "beta": 1, "gamma": 1}
    the_paths = paths.Paths.under(tmp_path)
    the_paths.ensure()
    steps = [FakeStep(name, inputs) for name in inputs]
    return Harness(tmp_path, clock_mod.FakeClock(), the_paths, inputs, steps)

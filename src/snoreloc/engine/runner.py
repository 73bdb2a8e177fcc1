"""The ordered runner: plan, apply and verify each step, journal every transition, and resume where it stopped.

A step runs again only when it must: if the journal says it finished with the same input fingerprint and its
`verify` still passes, it is skipped and makes no API call beyond that check. `--step` runs one step,
`--from` starts at one, `--force` ignores fingerprints. A whole-run deadline bounds everything; each wait
inside a step is bounded by its own timeout and by what is left of the deadline.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from snoreloc import errors, waits
from snoreloc.engine import fingerprint, journal
from snoreloc.siteconfig.settings import timeouts as timeouts_setting
from snoreloc.steps import base, context

LOG = logging.getLogger(__name__)


class Selection(enum.Enum):
    ALL = "all"
    ONLY = "only"
    FROM = "from"


@dataclass(frozen=True)
class Options:
    force: bool = False
    step: str | None = None
    start_from: str | None = None
    dry_run: bool = False
    mode: str = "cluster-only"


@dataclass
class Result:
    """What one run did: per step "ran", "skipped", "planned" or "failed"; the plans when dry-running."""

    actions: dict[str, str] = field(default_factory=dict)
    plans: list[base.Plan] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    state: journal.RunState = journal.RunState.NEW


Progress = Callable[[str, str], None]


@dataclass(frozen=True)
class Admission:
    """A check of the site-config against the cluster, made once, just before the first selected step of `before`
    (the cluster steps: on a node the host steps run first, and the API answers only after them). What it raises is
    the run's error, not a step's: a step blamed for it would send the technician to the wrong place (issue 35).
    `label` is what the progress and a node's banner name while it checks (and if it refuses)."""

    check: Callable[[context.Context], None]
    before: frozenset[str]
    label: str


def _selected(steps: Sequence[base.Step], options: Options) -> list[base.Step]:
    names = [s.name for s in steps]
    for wanted in (options.step, options.start_from):
        if wanted is not None and wanted not in names:
            raise errors.UsageError(f"no step named {wanted!r}; the steps are: {', '.join(names)}")
    if options.step is not None:
        return [s for s in steps if s.name == options.step]
    if options.start_from is not None:
        return list(steps[names.index(options.start_from) :])
    return list(steps)


class Runner:
    """Runs `steps` in order against `ctx`, journalling to `journal_`."""

    def __init__(
        self,
        steps: Sequence[base.Step],
        ctx: context.Context,
        journal_: journal.Journal,
        options: Options = Options(),
        progress: Progress | None = None,
        *,
        admission: Admission | None = None,
    ) -> None:
        names = [s.name for s in steps]
        if len(set(names)) != len(names):
            raise errors.InternalError(f"duplicate step names in {names}")
        self.steps = list(steps)
        self.ctx = ctx
        self.journal = journal_
        self.options = options
        self._progress = progress or (lambda step, what: None)
        self._admission = admission

    def _check_deadline(self, step: str) -> None:
        remaining = self.ctx.remaining()
        if remaining is not None and remaining <= 0:
            raise errors.WaitTimeout(
                step, "the whole-run deadline", float(self.ctx.site.get(timeouts_setting.SETTING).total)
            )

    def _unchanged(self, step: base.Step, digest: str) -> bool:
        if self.options.force or not self.journal.is_done(step.name, digest):
            return False
        try:
            step.verify(self.ctx)
        except errors.SnorelocError as exc:
            LOG.info("%s: inputs unchanged but verify failed (%s): running it again", step.name, exc.message)
            return False
        return True

    def _run_step(self, step: base.Step, result: Result) -> None:
        self._check_deadline(step.name)
        digest = fingerprint.of(step.inputs(self.ctx))
        if not self.options.dry_run and self._unchanged(step, digest):
            self.journal.skip_step(step.name)
            result.actions[step.name] = "skipped"
            self._progress(step.name, "unchanged, skipped")
            return
        self._progress(step.name, "planning")
        plan = step.plan(self.ctx)
        if self.options.dry_run:
            result.plans.append(plan)
            result.actions[step.name] = "planned"
            return
        self.journal.start_step(step.name, digest)
        self._progress(step.name, step.description)
        outcome = step.apply(self.ctx, plan)
        step.verify(self.ctx)
        self.journal.finish_step(step.name, outcome)
        result.warnings += list(outcome.warnings)
        result.actions[step.name] = "ran"
        self._progress(step.name, "done")

    def run(self) -> Result:
        """Run the selected steps; on the first failure journal it and raise it."""
        selected = _selected(self.steps, self.options)
        if self.options.dry_run:
            return self._run_selected(selected)
        _refuse_after_unfinished_rollback(self.journal.doc.state)
        self.journal.begin_run(
            site_name=self.ctx.site.name,
            site_fingerprint=fingerprint.of(self.ctx.site),
            site_path=self.ctx.site.source_path and str(Path(self.ctx.site.source_path).resolve()),
            order=[s.name for s in self.steps],
            mode=self.options.mode,
        )
        unsubscribe = waits.subscribe(self.journal.on_wait)  # `snoreloc status` shows the wait in progress
        try:
            return self._run_selected(selected)
        finally:
            unsubscribe()

    def _admit(self, step: base.Step) -> None:
        """The admission's check, once, before the first step it guards (see `Admission`)."""
        admission = self._admission
        if admission is None or step.name not in admission.before:
            return
        self._admission = None
        self._progress(admission.label, "checking it against what this cluster can take")
        try:
            admission.check(self.ctx)
        except errors.SnorelocError as exc:
            if not self.options.dry_run:
                self.journal.end_run(journal.RunState.FAILED, exc)
            raise

    def _run_selected(self, selected: list[base.Step]) -> Result:
        result = Result()
        for step in selected:
            self._admit(step)
            try:
                self._run_step(step, result)
            except errors.SnorelocError as exc:
                result.actions[step.name] = "failed"
                if not self.options.dry_run:
                    exc.extend(journal.what_changed(self.journal.doc, step.name))
                    self.journal.fail_step(step.name, exc)
                    self.journal.end_run(journal.RunState.FAILED, exc)
                raise
        result.state = self._final_state(result)
        if not self.options.dry_run:
            self.journal.end_run(result.state)
        return result

    def _final_state(self, result: Result) -> journal.RunState:
        if self.options.dry_run:
            return journal.RunState.NEW
        recorded = [self.journal.step(s.name) for s in self.steps]
        if any(r.state is not journal.StepState.DONE for r in recorded):
            return journal.RunState.PARTIAL
        warned = any(r.warnings for r in recorded) or result.warnings
        return journal.RunState.DONE_WITH_WARNINGS if warned else journal.RunState.DONE


def _refuse_after_unfinished_rollback(state: journal.RunState) -> None:
    """A run over a rollback that did not finish would save the half-restored objects as the originals."""
    if state in (journal.RunState.ROLLING_BACK, journal.RunState.ROLLBACK_FAILED):
        raise errors.UnavailableError(
            f"the last rollback did not finish (journal state {state.value}); a run now would take the half-restored "
            "objects for the originals",
            hint="Run `snoreloc rollback` again to finish it; then `snoreloc run` relocates afresh.",
        )

"""The controller's queueing against the hub simulator over HTTPS: kopf's handler only queues the Site's key, so a
burst of events for one Site coalesces (it is reconciled at most twice, never twice at once), Sites waiting behind
a slow reconcile are held as keys (kopf's per-Site tasks, each with its last event's body, end meanwhile), the
watch events of the controller's own writes wake no second reconcile, a controller stopped with Sites still queued
leaves them to the next one, the sweep queues every known Site without writing, and no workers is refused."""

from __future__ import annotations

import argparse
import asyncio
import collections
import threading
from collections.abc import Callable

import pytest
from snoreloc_fleet.controller import bmccycle, operator
from snoreloc_fleet.resource import site
from snoreloc_fleet.verbs import controller as command

from snoreloc import errors
from snoreloc.adapters import kube

from .conftest import NS, SITES, Running, phase_of, site_object, wait_for, wait_phase

Start = Callable[..., Running]
Key = tuple[str, str]
NO_SWEEP = 3600.0  # these tests count reconciles: none from the sweep unless asked


class Gate:
    """Holds every reconcile of a controller until `open` (or makes it fail after `abort`); counts reconciles per
    key and the most of one key ever running at once."""

    def __init__(self, controller: operator.Controller, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started: collections.Counter[Key] = collections.Counter()
        self._running: collections.Counter[Key] = collections.Counter()
        self.most_at_once = 0
        self._opened, self._aborted = threading.Event(), False
        self._lock = threading.Lock()
        original = controller.reconcile

        def reconcile(namespace: str, name: str) -> object:
            key = (namespace, name)
            with self._lock:
                self.started[key] += 1
                self._running[key] += 1
                self.most_at_once = max(self.most_at_once, self._running[key])
            try:
                if not self._opened.wait(120.0) or self._aborted:
                    raise RuntimeError("held by the test")
                return original(namespace, name)
            finally:
                with self._lock:
                    self._running[key] -= 1

        monkeypatch.setattr(controller, "reconcile", reconcile)

    def open(self) -> None:
        self._opened.set()

    def abort(self) -> None:
        self._aborted = True
        self._opened.set()


class Seen:
    """The resourceVersions of the Site events the controller's handler was given."""

    def __init__(self, controller: operator.Controller, monkeypatch: pytest.MonkeyPatch) -> None:
        self.versions: set[str] = set()
        original = controller.on_event

        def on_event(event: dict[str, object], namespace: str, name: str) -> None:
            obj = event.get("object")
            if isinstance(obj, dict):
                self.versions.add(str(obj.get("metadata", {}).get("resourceVersion")))
            original(event, namespace, name)

        monkeypatch.setattr(controller, "on_event", on_event)


def _idle(controller: operator.Controller) -> bool:
    queue = controller.queue
    return not queue.queued() and not queue.processing() and not queue.delayed()


def _touch(admin: kube.Client, name: str, value: int) -> str:
    """A change of the Site that is not the controller's (an annotation); its new resourceVersion."""
    obj = admin.patch(kube.Ref(SITES, name, NS), {"metadata": {"annotations": {"touched": str(value)}}})
    return str(obj["metadata"]["resourceVersion"])


def _kopf_object_tasks(controller: operator.Controller) -> list[str]:
    """kopf's per-object worker tasks still alive (each holds the last event it was given)."""
    assert controller.loop is not None
    return [task.get_name() for task in asyncio.all_tasks(controller.loop) if "worker for" in task.get_name()]


def test_a_burst_of_events_for_one_site_is_reconciled_at_most_twice_never_at_once(
    admin: kube.Client, start_controller: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    controller = start_controller(sweep=NO_SWEEP, workers=4).controller
    gate, seen = Gate(controller, monkeypatch), Seen(controller, monkeypatch)
    key = (NS, "store-1")
    admin.create(SITES, site_object("store-1"))
    wait_for("the first reconcile, held", lambda: gate.started[key] == 1)
    versions = [_touch(admin, "store-1", value) for value in range(20)]
    wait_for("the whole burst seen by the controller", lambda: versions[-1] in seen.versions, timeout=60)
    assert gate.started[key] == 1  # 20 events while it was held: no second reconcile beside it
    gate.open()
    wait_phase(admin, "store-1", site.Phase.READY, timeout=60)
    wait_for("the queue drained", lambda: _idle(controller), timeout=60)
    assert gate.started[key] == 2  # the held one, then one for everything the burst changed
    assert gate.most_at_once == 1


def test_sites_waiting_behind_a_slow_reconcile_are_held_as_keys_only(
    admin: kube.Client, start_controller: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    controller = start_controller(sweep=NO_SWEEP, workers=1).controller
    gate = Gate(controller, monkeypatch)
    names = [f"store-{index:02d}" for index in range(30)]
    for name in names:
        admin.create(SITES, site_object(name))
    wait_for("every Site queued behind the held one", lambda: len(controller.queue) == len(names) - 1, timeout=60)
    queued = controller.queue.queued()
    assert sorted(queued + tuple(controller.queue.processing())) == sorted((NS, name) for name in names)
    assert all(isinstance(part, str) for key in queued for part in key)  # (namespace, name): no bodies, no events
    wait_for("kopf's per-Site tasks ended", lambda: not _kopf_object_tasks(controller), timeout=60)
    assert sum(gate.started.values()) == 1  # and still only the one held reconcile
    gate.open()
    for name in names:
        wait_phase(admin, name, site.Phase.READY, timeout=120)


def test_the_controllers_own_writes_wake_no_second_reconcile(admin: kube.Client, start_controller: Start) -> None:
    controller = start_controller(sweep=NO_SWEEP).controller
    names = [f"store-{index}" for index in range(5)]
    for name in names:
        admin.create(SITES, site_object(name))
    for name in names:
        wait_phase(admin, name, site.Phase.READY)
    wait_for("the queue drained", lambda: _idle(controller) and controller.echoes.skipped >= len(names))
    assert controller.counters.reconciles == len(names)  # label and status written, their events skipped
    _touch(admin, "store-0", 1)  # someone else's write is reconciled
    wait_for("the edit reconciled", lambda: controller.counters.reconciles == len(names) + 1)


def test_a_controller_stopped_with_sites_queued_leaves_them_to_the_next(
    admin: kube.Client, start_controller: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = start_controller(sweep=NO_SWEEP, workers=1)
    gate = Gate(first.controller, monkeypatch)
    names = [f"store-{index}" for index in range(8)]
    for name in names:
        admin.create(SITES, site_object(name))
    wait_for("every Site queued", lambda: len(first.controller.queue) == len(names) - 1, timeout=60)
    gate.abort()  # every reconcile of this controller fails from now on
    first.stop()
    assert [phase_of(admin, name) for name in names] == [""] * len(names)
    second = start_controller(sweep=NO_SWEEP)
    for name in names:
        wait_phase(admin, name, site.Phase.READY, timeout=120)
    wait_for("the queue drained", lambda: _idle(second.controller))
    assert second.controller.counters.reconciles == len(names)


def test_the_sweep_queues_every_known_site_and_writes_nothing_when_nothing_changed(
    admin: kube.Client, start_controller: Start
) -> None:
    controller = start_controller(sweep=0.3).controller
    for name in ("store-1", "store-2"):
        admin.create(SITES, site_object(name))
    for name in ("store-1", "store-2"):
        wait_phase(admin, name, site.Phase.READY)
    counters = controller.counters
    wait_for("the first reconciles finished", lambda: _idle(controller))
    reconciles, writes = counters.reconciles, (counters.status_writes, counters.label_writes, counters.events)
    wait_for("three sweeps over both Sites", lambda: counters.reconciles >= reconciles + 6, timeout=60)
    assert (counters.status_writes, counters.label_writes, counters.events) == writes


def test_no_workers_is_refused_before_anything_runs() -> None:
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    with pytest.raises(errors.UsageError, match="--workers must be at least 1"):
        command.run(parser.parse_args(["--workers", "0", "--kubeconfig", "/nonexistent"]))
    with pytest.raises(errors.UsageError, match="--bmc-workers must be at least 1"):
        command.run(parser.parse_args(["--bmc-workers", "0", "--kubeconfig", "/nonexistent"]))


def test_the_flags_defaults_are_the_controllers_own() -> None:
    """One fact each: the verb's defaults are the controller's constants (the verb does not import the controller
    until it runs)."""
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    defaults = parser.parse_args([])
    assert (defaults.workers, defaults.bmc_workers) == (operator.WORKERS, operator.BMC_WORKERS)
    assert defaults.bmc_read_timeout == bmccycle.READ_TIMEOUT

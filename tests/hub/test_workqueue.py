"""The controller's workqueue (client-go's semantics): a key is queued once however often it is added, a key added
while a worker holds it comes back once after `done`, delayed keys wait their turn (the earlier of two delays
wins), failures back off exponentially up to a cap, and shutting down frees every waiting worker."""

from __future__ import annotations

import threading

from snoreloc_fleet.controller import workqueue


class Ticks:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_key_added_many_times_is_queued_once() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    for _ in range(50):
        queue.add("a")
    queue.add("b")
    assert queue.queued() == ("a", "b")
    assert queue.get(0.1) == "a"
    assert queue.get(0.1) == "b"
    assert queue.get(0.01) is None  # nothing left: the timeout ends the wait


def test_a_key_added_while_held_is_handed_out_again_once_after_done_and_never_twice_at_once() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    queue.add("a")
    assert queue.get(0.1) == "a"
    for _ in range(10):
        queue.add("a")  # a burst while a worker holds it
    assert queue.queued() == ()  # not handed to a second worker meanwhile
    assert queue.get(0.01) is None
    queue.done("a")
    assert queue.queued() == ("a",)  # once more, for everything the burst changed
    assert queue.get(0.1) == "a"
    queue.done("a")
    assert queue.queued() == ()
    assert queue.processing() == frozenset()


def test_a_delayed_key_waits_and_the_earlier_of_two_delays_wins() -> None:
    ticks = Ticks()
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(monotonic=ticks)
    queue.add_after("a", 10.0)
    queue.add_after("a", 3.0)
    queue.add_after("a", 20.0)
    assert queue.delayed() == ("a",)
    assert queue.get(0.0) is None
    ticks.now += 3.0
    assert queue.get(0.0) == "a"
    queue.done("a")
    ticks.now += 30.0  # the later delays were dropped, not queued again
    assert queue.get(0.0) is None


def test_a_key_added_at_once_overrides_its_delay() -> None:
    ticks = Ticks()
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(monotonic=ticks)
    queue.add_after("a", 10.0)
    queue.add("a")
    assert queue.get(0.0) == "a"
    queue.done("a")
    ticks.now += 10.0
    assert queue.get(0.0) is None


def test_failures_back_off_exponentially_up_to_the_cap_and_forget_resets() -> None:
    ticks = Ticks()
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(base_delay=1.0, max_delay=5.0, monotonic=ticks)
    delays = []
    for _ in range(5):
        delays.append(queue.retry("a"))
        ticks.now += delays[-1]
        assert queue.get(0.0) == "a"
        queue.done("a")
    assert delays == [1.0, 2.0, 4.0, 5.0, 5.0]
    queue.forget("a")
    assert queue.retry("a") == 1.0


def test_shutting_down_frees_a_waiting_worker_and_drops_what_is_queued() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    got: list[str | None] = []
    worker = threading.Thread(target=lambda: got.append(queue.get()))
    worker.start()
    queue.shutdown()
    worker.join(30.0)
    assert not worker.is_alive()
    assert got == [None]
    queue.add("a")
    assert queue.get(0.0) is None

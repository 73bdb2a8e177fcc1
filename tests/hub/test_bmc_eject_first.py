"""An eject is not queued behind a burst of inserts (issue 36's performance figures: 200 BMC Sites at once left each
read medium inserted 20-40 s more, its eject waiting behind every insert queued before it). The BMC cycle's queue
takes a Site whose node reported the inserted medium's digest ahead of the others (`WorkQueue.add_first`), once."""

from __future__ import annotations

from typing import Any

from snoreloc_fleet.controller import operator, workqueue
from snoreloc_fleet.resource import site


def test_a_key_added_first_goes_ahead_of_the_queued_ones_and_is_queued_once() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    for key in ("a", "b", "c"):
        queue.add(key)
    queue.add_first("c")  # already queued: moves
    queue.add_first("d")  # new: first
    assert queue.queued() == ("d", "c", "a", "b")
    queue.add("c")  # a later plain add does not move it back
    assert queue.queued() == ("d", "c", "a", "b")
    assert [queue.get(0.1) for _ in range(4)] == ["d", "c", "a", "b"]


def test_a_key_added_first_while_held_comes_back_first_after_done() -> None:
    queue: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    queue.add("a")
    assert queue.get(0.1) == "a"
    queue.add("b")
    queue.add_first("a")  # held: not handed out twice at once
    assert queue.queued() == ("b",)
    queue.done("a")
    assert queue.queued() == ("a", "b")
    assert queue.get(0.1) == "a"
    queue.done("a")
    queue.add("a")  # handed out: no longer urgent, back of the queue
    assert queue.queued() == ("b", "a")


def _event(state: str, digest: str, reported: str) -> dict[str, Any]:
    record = {"state": state, "digest": digest}
    status = {site.STATUS_DELIVERY: record, site.STATUS_AGENT: {"siteConfigDigest": reported}}
    return {"type": "MODIFIED", "object": {"spec": {"delivery": {"method": "bmc"}}, "status": status}}


def test_only_a_read_medium_still_inserted_is_urgent() -> None:
    read = operator._read_while_inserted
    assert read(_event("Inserted", "sha256:aa", "sha256:aa")["object"])
    assert not read(_event("Inserted", "sha256:aa", "sha256:bb")["object"]), "an older medium's report"
    assert not read(_event("Ejected", "sha256:aa", "sha256:aa")["object"]), "already ejected"
    assert not read({"status": {site.STATUS_DELIVERY: "junk", site.STATUS_AGENT: {}}})
    assert not read({})

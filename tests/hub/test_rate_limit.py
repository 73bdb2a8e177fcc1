"""The controller's write rate limit: a token bucket lets `burst` writes through at once, then `qps` a second."""

from __future__ import annotations

from snoreloc_fleet.controller import operator


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_goes_through_then_writes_wait_their_turn() -> None:
    ticks = Ticks()
    bucket = operator.TokenBucket(qps=1000.0, burst=3, monotonic=ticks)
    assert [bucket.take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert 0.0009 <= bucket.take() <= 0.0011  # the fourth waits one token's time
    ticks.now += 1.0  # a second later the bucket is full again, never fuller
    assert [bucket.take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take() > 0.0

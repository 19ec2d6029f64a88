"""BusyMeter (lrreal/scheduler/engine_load.py): the time-averaged count of requests an engine ran
over a step's life, which lr-adaptive tells its Estimator as the step's batch size."""
from __future__ import annotations

import asyncio

import pytest

from lrreal.scheduler.engine_load import (HISTORY, BusyMeter, CountedEngine, in_flight, mean_batch,
                                           meter)


def test_mean_is_the_area_under_the_count_over_the_interval():
    m = BusyMeter()
    m.enter(0.0)            # the step itself, 0..10
    m.enter(2.0)            # a speculative step beside it, 2..6
    m.enter(3.0)            # and another, 3..5
    m.leave(5.0)
    m.leave(6.0)
    assert m.count_at(9.9) == 1                          # as it ends it runs alone ...
    m.leave(10.0)
    # ... but it ran beside 1 or 2 others for 5 of its 10 s: (10 + 4 + 2) / 10
    assert m.mean(0.0, 10.0) == pytest.approx(1.6)
    assert m.mean(2.0, 6.0) == pytest.approx((4 * 2 + 2 * 1) / 4)
    assert m.mean(10.0, 12.0) == 0.0 and m.count_at(11.0) == 0
    assert m.mean(4.0, 4.0) == 3.0                       # an empty interval: the count there


def test_old_history_is_dropped_and_an_older_interval_starts_where_it_does():
    m = BusyMeter()
    for i in range(HISTORY + 10):           # alternately 1 and 0 in flight, a second each
        (m.enter if i % 2 == 0 else m.leave)(float(i))
    assert len(m.points) == HISTORY
    t0 = m.points[0][0]
    assert m.mean(0.0, t0 + 2.0) == pytest.approx(m.mean(t0, t0 + 2.0)) == pytest.approx(0.5)


def test_counted_engine_counts_its_requests_while_they_run():
    class Slow:
        async def generate(self, req, progress=None):
            await asyncio.sleep(0.05)
            return req

    eng = Slow()
    counted = [CountedEngine(eng), CountedEngine(eng)]     # two problems, one engine

    async def go():
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        task = asyncio.gather(*(c.generate(i) for i, c in enumerate(counted)))
        await asyncio.sleep(0.01)
        assert in_flight(eng) == 2 and in_flight(counted[0]) == 2
        await task
        return t0, loop.time()

    start, end = asyncio.run(go())
    assert in_flight(eng) == 0
    assert mean_batch(eng, start + 0.01, start + 0.04) == pytest.approx(2.0)
    assert mean_batch(eng, end + 1.0, end + 2.0) == 1.0      # at least 1: the step itself


def test_a_new_engine_never_inherits_a_dead_ones_count():
    """The meter lives on the engine: one left with a request counted (a task abandoned without
    cancelling) and freed cannot pass its count to a new engine that CPython gives the same id."""
    class Engine:
        pass

    e = Engine()
    meter(e).enter(0.0)
    del e
    for _ in range(20):
        f = Engine()
        assert meter(f).n == 0
        meter(f).enter(0.0)
        del f

"""The simulator's SimPy environment: simpy.Environment with cancellable timers and an inlined
run loop, processing the same events in the same order (time, priority, id) as SimPy would.

Why: an engine's fluid chunk ends at a timer that a batch change often supersedes (a job
submitted at the chunk's first instant, or mid-chunk from another engine). With plain SimPy the
superseded timer stays queued and fires later to do nothing (in a profiled run: 2.3 of 16.4
events per simulated lr-async step). Here such timers live in a small side queue (one entry per
engine at most) and an engine's `dispatch.place` replaces them; events due at the present
instant go on a FIFO now-queue (dispatch.schedule_now: sorted as the heap would pop them); `run`
pops the first of the three queues' heads by SimPy's order (time, priority, id), so every other
event is processed exactly when and in the order it was before.
A cancelled timer still takes its event id when scheduled. `Engine` works with a plain
simpy.Environment too (it then leaves stale timers, as before, and plans no prefill through:
every chunk end is an event). With this environment an engine plans a prefill iteration
through (engine.py, `_plan_decode`: one timer where there were two), so it takes fewer event
ids, and the planned timer takes its id at the prefill's start: events keep their order except
one due at exactly the decode chunk's end (not planned with the theory's unit costs, where such
ties are routine); tests/sim/test_sim_fast_paths.py runs both environments and compares every
output.
"""
from __future__ import annotations

from heapq import heappush

import simpy

from . import dispatch


class Environment(simpy.Environment):
    def __init__(self, initial_time=0):
        super().__init__(initial_time)
        self._eid = dispatch.EventIds()  # SimPy's id counter, one the compiled modules advance
        self._timers: list = []          # cancellable entries, sorted (few: one per engine)
        self._nowq: list = []            # entries due now, FIFO (dispatch.schedule_now)

    def _side_head(self):
        """The first of the timers' and the now-queue's heads (SimPy's order), or None."""
        t, n = self._timers, self._nowq
        if t and (not n or t[0] < n[0]):
            return t
        return n if n else None

    def peek(self):
        side = self._side_head()
        if side is not None and (not self._queue or side[0] < self._queue[0]):
            return side[0][0]
        return super().peek()

    def step(self) -> None:
        side = self._side_head()
        if side is not None and (not self._queue or side[0] < self._queue[0]):
            # a timer or a now-queue entry is next: process it through SimPy's own step (same
            # semantics)
            heappush(self._queue, side.pop(0))
        super().step()

    def run(self, until=None):
        if until is not None:
            return super().run(until)     # through step() above
        dispatch.drain(self)              # the loop itself, compiled where built
        return None

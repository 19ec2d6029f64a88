"""How many requests each engine ran, over time: the batch size lr-adaptive's Estimator is told.

A step's cost depends on the batch it ran in for its whole life, not on the batch as it ends:
on the CPU engines a target step of ~40 tokens runs beside 0-2 speculative steps that start and
end inside it, so the count at its end is mostly 1 whatever it shared. `BusyMeter` keeps the
integral of the engine's in-flight count (a piecewise-constant function of time), so the mean
over any recent interval is a difference of two areas over its length. (A regressor read with
that much error pulls the fitted cost per extra position towards 0: docs/adaptive.md.)
"""
from __future__ import annotations

import bisect
from collections import deque

from ..engine import monotonic

HISTORY = 4096      # breakpoints kept per engine (one per request start or end): far more than
#                     one step's lifetime spans at 8 requests in flight; older ones are dropped


class BusyMeter:
    """Requests in flight on one engine, and the area under that count since the first."""

    def __init__(self):
        self.n = 0
        self.points: deque[tuple[float, float, int]] = deque(maxlen=HISTORY)  # (t, area, n after)

    def _change(self, delta: int, now: float) -> None:
        area = 0.0
        if self.points:
            t, a, n = self.points[-1]
            area = a + n * (now - t)
        self.n += delta
        self.points.append((now, area, self.n))

    def enter(self, now: float | None = None) -> None:
        self._change(+1, monotonic() if now is None else now)

    def leave(self, now: float | None = None) -> None:
        self._change(-1, monotonic() if now is None else now)

    def _point(self, t: float) -> tuple[float, float, int] | None:
        """The last breakpoint at or before `t` (None: before the oldest kept, or none)."""
        i = bisect.bisect_right(self.points, t, key=lambda p: p[0]) - 1
        return self.points[i] if i >= 0 else None

    def area(self, t: float) -> float:
        """The integral of the in-flight count up to `t` (from the oldest breakpoint kept)."""
        if not self.points:
            return 0.0
        p = self._point(t)
        if p is None:
            return self.points[0][1]
        t0, a, n = p
        return a + n * (t - t0)

    def mean(self, start: float, end: float) -> float:
        """The time-averaged count of requests in flight over [start, end] (the count at `end`
        for an empty interval; an interval older than the history kept starts where it does)."""
        if self.points:
            start = max(start, self.points[0][0])
        if end <= start:
            return float(self.count_at(end))
        return (self.area(end) - self.area(start)) / (end - start)

    def count_at(self, t: float) -> int:
        p = self._point(t)
        return p[2] if p is not None else 0


def meter(engine) -> BusyMeter:
    """The BusyMeter of `engine` (a CountedEngine or the engine it wraps), kept on the engine
    itself: shared by every problem on it, and gone with it (a table keyed by id() handed a new
    engine the count of a dead one that had been given the same id)."""
    engine = getattr(engine, "engine", engine)
    m = getattr(engine, "_busy_meter", None)
    if m is None:
        m = engine._busy_meter = BusyMeter()
    return m


def in_flight(engine) -> int:
    """Requests running on `engine` now."""
    return meter(engine).n


def mean_batch(engine, start: float, end: float) -> float:
    """Requests `engine` ran, on average, over [start, end] (a step's life), at least 1."""
    return max(1.0, meter(engine).mean(start, end))


class CountedEngine:
    """An engine whose generate() calls are counted on its BusyMeter while they run."""

    def __init__(self, engine):
        self.engine = engine

    def __getattr__(self, name):
        return getattr(self.engine, name)

    async def generate(self, req, progress=None):
        m = meter(self.engine)
        m.enter()
        try:
            return await self.engine.generate(req, progress)
        finally:
            m.leave()

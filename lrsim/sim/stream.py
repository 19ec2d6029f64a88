"""Streaming summaries: a run's per-request metrics folded into fixed-size accumulators as each
request finishes, so that a simulation of a million requests keeps no per-request record.

What is exact and what is not (docs/metrics.md, "Streaming runs"):
- counters (requests, tokens, steps, steps from draft or target) and everything summarised from
  the world (acceptance, cycles, cancelled work, SD, utilisation, engines, KV) are exact: the same
  numbers as a full run of the same configuration;
- means are compensated running sums (Neumaier), equal to numpy's pairwise means to ~1e-15;
- percentiles (p50, p90, p99 of latency, TTFT, TPOT) come from a DDSketch (the `ddsketch`
  package, Datadog's reference implementation): the value returned for quantile q is within a
  relative error of RELATIVE_ACCURACY of the sample at rank floor(q (n - 1)); numpy's percentile
  interpolates between that sample and the next, so a streamed percentile lies in
  [(1 - a) x_floor, (1 + a) x_ceil]. Memory: one bucket per factor (1 + a) / (1 - a) between the
  smallest and the largest value (~1,400 buckets from 1 ms to 1,000 s at a = 0.5%);
- the paired latency speedup over AR and its delta-method standard error: the AR baseline's
  latencies are kept as one float64 per request (indexed by request id: 8 MB for a million), and
  each finished policy request is paired with its AR latency into running co-moments, so the
  ratio and its standard error are the full run's up to floating-point rounding.

ddsketch is imported when a streaming run starts, not when this module is.
"""
from __future__ import annotations

import math

from .metrics import PERCENTILES, times

RELATIVE_ACCURACY = 0.005          # the sketches' relative-error guarantee (0.5%)


class Sum:
    """A running sum with Neumaier's compensation (error independent of the count)."""

    __slots__ = ("s", "c")

    def __init__(self):
        self.s = 0.0
        self.c = 0.0

    def add(self, x: float) -> None:
        s = self.s
        t = s + x
        if abs(s) >= abs(x):
            self.c += (s - t) + x
        else:
            self.c += (x - t) + s
        self.s = t

    @property
    def value(self) -> float:
        return self.s + self.c

    def merge(self, other: "Sum") -> None:
        """Add another running sum (a fleet's replicas, fleet.py)."""
        self.add(other.s)
        self.add(other.c)


class Quantiles:
    """p50/p90/p99 from a DDSketch and the exact mean: metrics._pct's fields, streamed."""

    __slots__ = ("sketch", "stores", "total", "n")

    def __init__(self, relative_accuracy: float = RELATIVE_ACCURACY):
        from ddsketch import LogarithmicMapping
        from ddsketch.ddsketch import BaseDDSketch
        from ddsketch.store import DenseStore

        # ddsketch.DDSketch(relative_accuracy) as that class builds it, with the two stores kept
        # here so that buckets() reads their public length() (the sketch keeps them private)
        self.stores = (DenseStore(), DenseStore())
        self.sketch = BaseDDSketch(mapping=LogarithmicMapping(relative_accuracy), store=self.stores[0],
                                   negative_store=self.stores[1], zero_count=0.0)
        self.total = Sum()
        self.n = 0

    def add(self, x: float) -> None:
        self.sketch.add(x)
        self.total.add(x)
        self.n += 1

    def merge(self, other: "Quantiles") -> None:
        """Fold in another sketch of the same accuracy: DDSketch adds bucket counts, so the
        merged sketch is the one the two samples would have built together."""
        self.sketch.merge(other.sketch)
        self.total.merge(other.total)
        self.n += other.n

    def summary(self) -> dict:
        if not self.n:
            return {f"p{p}": None for p in PERCENTILES}
        q = self.sketch.get_quantile_value
        return {f"p{p}": float(q(p / 100)) for p in PERCENTILES} | {"mean": self.total.value / self.n}

    def buckets(self) -> int:
        """Bins the sketch holds (positive and negative values): its memory, which a stream keeps
        bounded whatever the requests."""
        return sum(st.length() for st in self.stores)


class Requests:
    """The per-request half of metrics.summarise, folded one finished request at a time."""

    def __init__(self, relative_accuracy: float = RELATIVE_ACCURACY):
        self.relative_accuracy = relative_accuracy
        self.requests = self.tokens = self.steps = self.from_draft = 0
        self.first_arrival = math.inf
        self.last_finish = -math.inf
        self.latency = Quantiles(relative_accuracy)
        self.ttft = Quantiles(relative_accuracy)
        self.tpot = Quantiles(relative_accuracy)

    def add(self, rec) -> None:
        """rec: a finished world.RequestRecord (then dropped by the caller)."""
        self.requests += 1
        self.tokens += rec.tokens
        steps = rec.steps
        self.steps += len(steps)
        self.from_draft += steps.count("draft")
        if rec.arrival < self.first_arrival:
            self.first_arrival = rec.arrival
        if rec.finish > self.last_finish:
            self.last_finish = rec.finish
        lat, ttft, tpot = times(rec)
        self.latency.add(lat)
        self.ttft.add(ttft)
        self.tpot.add(tpot)

    def merge(self, other: "Requests") -> None:
        """Fold in another run's requests (a fleet's replicas, fleet.py)."""
        self.requests += other.requests
        self.tokens += other.tokens
        self.steps += other.steps
        self.from_draft += other.from_draft
        self.first_arrival = min(self.first_arrival, other.first_arrival)
        self.last_finish = max(self.last_finish, other.last_finish)
        for mine, theirs in ((self.latency, other.latency), (self.ttft, other.ttft),
                             (self.tpot, other.tpot)):
            mine.merge(theirs)

    def fields(self) -> dict:
        """metrics.summarise's per-request fields (metrics.per_request's keys)."""
        return {"requests": self.requests, "output_tokens": self.tokens, "steps": self.steps,
                "steps_from_draft": self.from_draft,
                "latency_s": self.latency.summary(), "ttft_s": self.ttft.summary(),
                "tpot_s": self.tpot.summary()}


class Paired:
    """Running sums and co-moments of paired (AR latency x, policy latency y) of the same
    requests: R = sum x / sum y and its delta-method standard error,
    sd(x - R y) / (sqrt(n) mean y), as theory.montecarlo.ratio_estimate computes them from the
    full arrays (Welford's updates: no cancellation from raw sums of squares)."""

    __slots__ = ("n", "sx", "sy", "mx", "my", "cxx", "cyy", "cxy")

    def __init__(self):
        self.n = 0
        self.sx, self.sy = Sum(), Sum()
        self.mx = self.my = self.cxx = self.cyy = self.cxy = 0.0

    def add(self, x: float, y: float) -> None:
        self.n += 1
        self.sx.add(x)
        self.sy.add(y)
        dx = x - self.mx
        self.mx += dx / self.n
        dy = y - self.my
        self.my += dy / self.n
        self.cxx += dx * (x - self.mx)
        self.cyy += dy * (y - self.my)
        self.cxy += dx * (y - self.my)

    def merge(self, other: "Paired") -> None:
        """Fold in another run's pairs: Chan, Golub and LeVeque's update of the means and
        co-moments of two samples, as if every pair had been added to one."""
        if not other.n:
            return
        if not self.n:                # (the other's moments as they are, not rescaled by n / n)
            self.mx, self.my, self.cxx, self.cyy, self.cxy = other.mx, other.my, other.cxx, other.cyy, other.cxy
            self.n = other.n
            self.sx.merge(other.sx)
            self.sy.merge(other.sy)
            return
        n = self.n + other.n
        dx, dy = other.mx - self.mx, other.my - self.my
        w = self.n * other.n / n
        self.cxx += other.cxx + dx * dx * w
        self.cyy += other.cyy + dy * dy * w
        self.cxy += other.cxy + dx * dy * w
        self.mx += dx * other.n / n
        self.my += dy * other.n / n
        self.n = n
        self.sx.merge(other.sx)
        self.sy.merge(other.sy)

    def ratio(self) -> float:
        return self.sx.value / self.sy.value

    def stderr(self) -> float | None:
        if self.n < 2:
            return None
        r = self.ratio()
        var = (self.cxx - 2.0 * r * self.cxy + r * r * self.cyy) / (self.n - 1)
        return math.sqrt(max(var, 0.0)) / (math.sqrt(self.n) * (self.sy.value / self.n))

"""Confidence intervals for simulated speedups (scipy.stats; no hand-rolled formulas).

A plan or the Table 1 comparison simulates each configuration on several workload seeds; a
"seed block" is one whole workload instance (its requests, step lengths and acceptance draws).
Blocks are independent and paired across configurations (seed k gives every configuration the
same step lengths), so a speedup is estimated per block - reference latency / configuration
latency on the same seed - and summarised by the mean over blocks with a Student-t interval
(`scipy.stats.t.interval`, standard error `scipy.stats.sem`). `blocks_needed` says how many blocks
an interval of a given relative half-width needs (from the spread of the blocks so far).
"""
from __future__ import annotations

import math

import numpy as np

CONFIDENCE = 0.95


def mean_ci(x, confidence: float = CONFIDENCE) -> tuple[float, float | None, float | None]:
    """(mean, low, high) of the mean of `x` with a Student-t interval; no interval for n < 2."""
    from scipy import stats

    a = np.asarray(x, float)
    m = float(a.mean())
    if len(a) < 2:
        return m, None, None
    se = float(stats.sem(a))
    if not se > 0:                       # identical blocks (a deterministic configuration)
        return m, m, m
    lo, hi = stats.t.interval(confidence, len(a) - 1, loc=m, scale=se)
    return m, float(lo), float(hi)


def rel_halfwidth(m: float, lo: float | None, hi: float | None) -> float:
    if lo is None or hi is None or m == 0:
        return math.inf
    return (hi - lo) / 2 / abs(m)


def blocks_needed(n: int, rel_hw: float, target: float, cap: int,
                  confidence: float = CONFIDENCE) -> int:
    """Blocks for a relative half-width `target`, from `n` blocks whose t-interval had `rel_hw`:
    the spread those blocks showed (half-width / t quantile x sqrt(n)) and the t quantile of
    the larger sample (scipy.stats.t.ppf), 10% margin, at least one more block, at most `cap`."""
    from scipy import stats

    if rel_hw <= target:
        return n
    if not math.isfinite(rel_hw) or n < 2:
        return min(cap, max(n + 1, 2 * n))
    q = 0.5 + confidence / 2
    spread = rel_hw * math.sqrt(n) / float(stats.t.ppf(q, n - 1))     # relative SD of one block
    need = n + 1
    for _ in range(20):           # fixed point of need = (t(need - 1) spread / target)^2
        nxt = math.ceil((float(stats.t.ppf(q, max(need - 1, 1))) * spread / target) ** 2 * 1.1)
        if nxt == need:
            break
        need = max(n + 1, nxt)
    return min(cap, max(n + 1, need))

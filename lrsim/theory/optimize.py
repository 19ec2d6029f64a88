"""Exact optimiser of the hybrid speedup h(k1, k2) = f(k1) g(k2) over integer splits of a budget M.

Constraint (paper Sec. 3.3; App. B eqs. 4-5):  ParallelDim_f(k1) * k2 <= M with
ParallelDim = k1 (sync) or min(ceil(1/c1), k1) (async).

Every feasible split is considered, without enumerating the M x M grid: for each k1 the best k2 is
the best g over 1..floor(M / ParallelDim(k1)), i.e. a prefix maximum of g, so the search is O(M).
In async mode every k1 >= ceil(1/c1) has the same f (S1) and the same ParallelDim, so those k1
all tie; the smallest one, ceil(1/c1), represents them and `k1_plateau` says so.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .formulas import depth_limit, f_step, sd_speedup
from .params import MAX_BUDGET, HybridParams, check_count

# Two splits whose speedups differ by less than this relative amount are reported as a tie.
# 1e-12 is far above float64 rounding in these closed forms (~1e-15) and far below any
# difference a user could measure.
TIE_RTOL = 1e-12
# Ties listed at most (flat optima, e.g. alpha -> 1 with a tiny c, can tie millions of splits).
MAX_TIES = 1000


@dataclass(frozen=True)
class Split:
    k1: int
    k2: int
    speedup: float

    def as_dict(self) -> dict:
        return {"k1": self.k1, "k2": self.k2, "speedup": self.speedup}


@dataclass
class Optimum:
    params: HybridParams
    budget: int
    best: Split                 # overall optimum; ties broken by smallest k1, then smallest k2
    pure_sd: Split              # best with k1 = 1 (token-level SD only)
    pure_lr: Split              # best with k2 = 1 (Lookahead Reasoning only)
    best_hybrid: Split | None   # best with k1 >= 2 and k2 >= 2 (None when M < 4... or infeasible)
    ties: list[tuple[int, int]] = field(default_factory=list)  # splits within TIE_RTOL of best (<= MAX_TIES)
    k1_plateau: bool = False    # async: every k1 >= ceil(1/c1) ties with the reported k1
    n_ties: int | None = None   # how many splits tie in all (ties lists only the first MAX_TIES)

    def __post_init__(self):
        if self.n_ties is None:
            self.n_ties = len(self.ties)

    @property
    def winner(self) -> str:
        """'hybrid', 'pure_sd', 'pure_lr' or 'ar' (k1 = k2 = 1), from the tie-broken optimum."""
        if self.best.k1 == 1 and self.best.k2 == 1:
            return "ar"
        if self.best.k1 == 1:
            return "pure_sd"
        if self.best.k2 == 1:
            return "pure_lr"
        return "hybrid"

    @property
    def hybrid_strictly_best(self) -> bool:
        """True when some split with k1, k2 >= 2 beats both pure strategies by more than a tie."""
        if self.best_hybrid is None:
            return False
        pure = max(self.pure_sd.speedup, self.pure_lr.speedup)
        return self.best_hybrid.speedup > pure * (1 + TIE_RTOL)


def _prefix_argmax(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Running maximum of values and the smallest index reaching it."""
    running = np.maximum.accumulate(values)
    idx = np.arange(len(values))
    # the first index where the running maximum is attained: it changes only at new strict maxima
    is_new = np.concatenate(([True], values[1:] > running[:-1]))
    arg = np.maximum.accumulate(np.where(is_new, idx, 0))
    return running, arg


def _k1_range(p: HybridParams, budget: int) -> np.ndarray:
    """Candidate k1 values: 1..M (sync); 1..min(M, ceil(1/c1)) (async, larger k1 only tie)."""
    top = budget
    if p.mode == "async":
        top = int(min(budget, depth_limit(p.c1)))
    return np.arange(1, top + 1)


def _best_over(k1s, f, g, budget, k2_min=1) -> Split | None:
    """Best split with k1 in k1s (ParallelDim(k1) = k1 there) and k2 >= k2_min, or None."""
    g_best, g_arg = _prefix_argmax(g[k2_min - 1:])
    cap = np.minimum(budget // k1s, len(g))  # g covers k2 = 1..len(g)
    ok = cap >= k2_min
    if not ok.any():
        return None
    k1s, f, cap = k1s[ok], f[ok], cap[ok]
    h = f * g_best[cap - k2_min]
    i = int(np.argmax(h >= h.max() * (1 - TIE_RTOL)))  # smallest k1 within the tie tolerance
    return Split(int(k1s[i]), int(g_arg[cap[i] - k2_min]) + k2_min, float(h[i]))


def optimize(p: HybridParams, budget: int) -> Optimum:
    """Exact maximiser of h over integer (k1, k2) with ParallelDim(k1) * k2 <= budget."""
    if isinstance(budget, np.integer):
        budget = int(budget)
    check_count("budget", budget, MAX_BUDGET)
    g = sd_speedup(p.alpha2, p.c2, np.arange(1, budget + 1))
    k1s = _k1_range(p, budget)
    f = f_step(p.alpha1, p.c1, k1s, p.mode)

    best = _best_over(k1s, f, g, budget)
    pure_sd = _best_over(k1s[:1], f[:1], g, budget)
    pure_lr = _best_over(k1s, f, g[:1], budget)
    hybrid = k1s >= 2
    best_hybrid = _best_over(k1s[hybrid], f[hybrid], g, budget, k2_min=2) if hybrid.any() else None

    ties, n_ties = _ties(k1s, f, g, budget, best.speedup)
    plateau = p.mode == "async" and best.k1 == depth_limit(p.c1)
    return Optimum(p, budget, best, pure_sd, pure_lr, best_hybrid, ties, bool(plateau), n_ties)


def _ties(k1s, f, g, budget, best) -> tuple[list[tuple[int, int]], int]:
    """Feasible (k1, k2) on the candidate range with h within TIE_RTOL of the optimum: the first
    MAX_TIES of them (in k1, then k2 order) and how many there are in all."""
    floor = best * (1 - TIE_RTOL)
    out, total = [], 0
    g_max = np.maximum.accumulate(g)
    for k1, fk in zip(k1s, f):
        cap = budget // int(k1)
        if cap < 1 or fk * g_max[cap - 1] < floor:
            continue
        hits = np.nonzero(fk * g[:cap] >= floor)[0]
        total += len(hits)
        out.extend((int(k1), int(j) + 1) for j in hits[:MAX_TIES - len(out)])
    return out, total


def speedup_grid(p: HybridParams, budget: int):
    """h on the full feasible grid (k1, k2 in 1..M, NaN where infeasible), for heatmaps."""
    k = np.arange(1, budget + 1)
    pd = np.minimum(k, depth_limit(p.c1)) if p.mode == "async" else k
    h = np.outer(f_step(p.alpha1, p.c1, k, p.mode), sd_speedup(p.alpha2, p.c2, k))
    feasible = np.outer(pd, k) <= budget
    return np.where(feasible, h, np.nan)

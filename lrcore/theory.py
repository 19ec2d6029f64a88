"""Closed-form speedups of Lookahead Reasoning (step level), speculative decoding (token level)
and their product.

Source: Fu et al., "Scaling Speculative Decoding with Lookahead Reasoning" (arXiv 2506.19830,
NeurIPS 2025), Sec. 2, Sec. 3.3 and Appendices B-C, written in one consistent indexing (k1, k2 =
drafts + 1) and checked against the paper's identities and Monte Carlo of its cycle and stage
models (tests/theory/test_identities.py, tests/theory/test_montecarlo.py). Every function
accepts scalars or numpy arrays (broadcasting).

Constants and symbols
    alpha1  probability that a drafted *step* is accepted (i.i.d. across steps)
    alpha2  per-token acceptance probability of token-level SD (i.i.d.)
    c1      draft time for one step / target time for one step
    c2      draft time per token / target time per token (0 for n-gram prompt lookup)
    k1      step-level parallel dimension = target steps generated in parallel = drafted steps + 1
    k2      token-level parallel dimension = positions verified per target pass = drafted tokens + 1
    gamma   drafted tokens per SD round (Sec. 2 form; gamma = k2 - 1)

Speedups are ratios of emitted output per unit of wall time against the target alone (AR).

Part of lrcore: the simulator (lrsim: its theory commands, optimiser, planner and policies, through
lrsim/theory/formulas.py, which re-exports this module) and the adaptive lookahead policy
(lrcore/adaptive/, imported by both the simulator and the real backend) use the same closed
forms; this module imports neither side.
"""
from __future__ import annotations

import numpy as np


def geometric_sum(alpha, k):
    """sum_{i=0}^{k-1} alpha^i = (1 - alpha^k) / (1 - alpha), with its limit k at alpha = 1.

    Computed as expm1(k log a) / expm1(log a), which stays accurate as alpha -> 1 (the naive
    quotient loses ~log10(1/(1-alpha)) digits there). Real-valued k is allowed (the blog figure
    evaluates gamma on a linspace).
    """
    a = np.asarray(alpha, dtype=float)
    k = np.asarray(k, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_a = np.log(a)  # -inf at alpha = 0: expm1(-inf) = -1 gives the right value 1
        out = np.expm1(k * log_a) / np.expm1(log_a)
    out = np.where(a == 1.0, k, out)
    out = np.where((a == 0.0) & (k > 0), 1.0, out)
    out = np.where(k == 0, 0.0, out)
    return out[()] if out.ndim == 0 else out


# --- Token level -------------------------------------------------------------------------------

def sd_speedup_gamma(alpha, c, gamma):
    """Token-level SD speedup in the Sec. 2 form (Leviathan et al. 2023, Thm. 3.8):

        g(gamma) = (1 - alpha^(gamma+1)) / ((1 - alpha)(1 + c gamma))
    """
    gamma = np.asarray(gamma, dtype=float)
    return geometric_sum(alpha, gamma + 1.0) / (1.0 + np.asarray(c, dtype=float) * gamma)


def sd_speedup(alpha2, c2, k2):
    """Token-level SD speedup indexed by k2 = drafted tokens + 1 (Sec. 3.3; App. B eq. 2):

        g(k2) = (1 - alpha2^k2) / ((1 - alpha2)(1 - c2 + c2 k2)),   g(1) = 1
    """
    k2 = np.asarray(k2, dtype=float)
    c2 = np.asarray(c2, dtype=float)
    return geometric_sum(alpha2, k2) / (1.0 - c2 + c2 * k2)


def sd_ceiling(alpha):
    """Upper bound of token-level SD for any gamma and c >= 0 (Sec. 2): 1 / (1 - alpha)."""
    a = np.asarray(alpha, dtype=float)
    with np.errstate(divide="ignore"):
        out = np.where(a < 1.0, 1.0 / (1.0 - a), np.inf)
    return out[()] if out.ndim == 0 else out


# --- Step level, synchronous (Algorithm 1) --------------------------------------------------------

def f_sync(alpha1, c1, k1):
    """Synchronous LR speedup (App. B Theorem 1):

        f_sync(k1) = (1 - alpha1^k1) / ((1 - alpha1)(1 - c1 + c1 k1)),   f_sync(1) = 1

    One cycle drafts k1-1 steps ((k1-1) c1 T), runs k1 target steps in one parallel pass (T) and
    emits min(X, k1-1) + 1 steps with X ~ Geometric(alpha1), P(X = k) = alpha1^k (1 - alpha1).
    """
    k1 = np.asarray(k1, dtype=float)
    c1 = np.asarray(c1, dtype=float)
    return geometric_sum(alpha1, k1) / (1.0 - c1 + c1 * k1)


# --- Step level, asynchronous (App. B Theorem 2, App. C) ------------------------------------------

def depth_limit(c1):
    """ceil(1/c1): the drafter can keep at most this many target steps busy (App. B Thm. 2).

    Infinite for c1 = 0 (a free drafter never limits the pipeline).
    """
    c1 = np.asarray(c1, dtype=float)
    with np.errstate(divide="ignore", over="ignore"):  # subnormal c1: 1/c1 overflows to inf
        out = np.where(c1 > 0, np.ceil(1.0 / np.where(c1 > 0, c1, 1.0) - 1e-12), np.inf)
    return out[()] if out.ndim == 0 else out


def async_s1(alpha1, c1):
    """Async speedup when k1 >= ceil(1/c1), the drafter-bound case (App. B Thm. 2, case S1):

        S1 = 1 / (c1 + (1 - c1)(1 - alpha1))

    A stage emits X+1 steps in (1 + c1 X) T. This is the async ceiling; -> 1/(1-alpha1) as c1 -> 0.
    """
    a = np.asarray(alpha1, dtype=float)
    c1 = np.asarray(c1, dtype=float)
    with np.errstate(divide="ignore", over="ignore"):  # inf at alpha1 = 1 with c1 = 0 (or subnormal)
        return 1.0 / (c1 + (1.0 - c1) * (1.0 - a))


def async_s2(alpha1, c1, k1):
    """Async speedup when k1 < ceil(1/c1), the depth-bound case (App. B Thm. 2, case S2):

        S2 = (1 - alpha1^k1) / [(1 - alpha1) + c1 (alpha1 - alpha1^(k1+1) - k1 (1 - alpha1) alpha1^k1)]

    A stage takes ceil((X+1)/k1) T + c1 T (X mod k1) and emits X+1 steps. Written here, after
    dividing by (1 - alpha1), as geometric_sum(alpha1, k1) / (1 + c1 B) with
    B = alpha1 geometric_sum(alpha1, k1) - k1 alpha1^k1, which is exact and stable at alpha1 = 1
    (where S2 -> k1).
    """
    a = np.asarray(alpha1, dtype=float)
    k1 = np.asarray(k1, dtype=float)
    geo = geometric_sum(a, k1)
    b = a * geo - k1 * np.power(a, k1)
    return geo / (1.0 + np.asarray(c1, dtype=float) * b)


def f_async(alpha1, c1, k1):
    """Asynchronous LR speedup: S2(k1) below the depth limit ceil(1/c1), S1 from it on
    (App. B Thm. 2). Non-decreasing on 1 <= k1 <= ceil(1/c1) and constant afterwards."""
    k1 = np.asarray(k1, dtype=float)
    out = np.where(k1 >= depth_limit(c1), async_s1(alpha1, c1), async_s2(alpha1, c1, k1))
    return out[()] if out.ndim == 0 else out


def f_step(alpha1, c1, k1, mode: str):
    """Step-level speedup for mode 'sync' (Algorithm 1) or 'async' (the pipelined variant)."""
    if mode == "sync":
        return f_sync(alpha1, c1, k1)
    if mode == "async":
        return f_async(alpha1, c1, k1)
    raise ValueError(f"unknown mode {mode!r} (expected 'sync' or 'async')")


def parallel_dim(c1, k1, mode: str):
    """Target-side degree of step-level parallelism that counts against the budget M
    (App. B eqs. 4-5): k1 for sync, min(ceil(1/c1), k1) for async."""
    if mode == "sync":
        return np.asarray(k1, dtype=float)
    if mode == "async":
        return np.minimum(depth_limit(c1), np.asarray(k1, dtype=float))
    raise ValueError(f"unknown mode {mode!r} (expected 'sync' or 'async')")


# --- Ceilings and limits --------------------------------------------------------------------------

def step_ceiling(alpha1, c1, mode: str):
    """Supremum of the step-level speedup over k1.

    sync: f_sync(k1) -> 0 as k1 -> inf for c1 > 0, so the ceiling is the maximum over finite k1;
    for c1 = 0 it is 1/(1-alpha1). async: S1 (reached from k1 = ceil(1/c1) on)."""
    if mode == "async":
        return async_s1(alpha1, c1)
    if mode != "sync":
        raise ValueError(f"unknown mode {mode!r} (expected 'sync' or 'async')")
    if float(c1) == 0.0:
        return float(sd_ceiling(alpha1))
    if float(alpha1) >= 1.0:
        return 1.0 / float(c1)  # f_sync = k1 / (1 - c1 + c1 k1) rises towards 1/c1 for ever
    return _max_unimodal(lambda k: float(f_sync(alpha1, c1, k)))


def _max_unimodal(f, k_max: int = 2**62) -> float:
    """max over integers k >= 1 of f, unimodal in k (f_sync: a log-concave numerator over a
    linear denominator) and eventually not increasing. Bracketing by doubling, then a ternary
    search: O(log k*) evaluations, where a plain scan needs k* (millions as alpha1 -> 1)."""
    k = 1
    while 2 * k <= k_max and f(2 * k) > f(k):
        k *= 2
    lo, hi = max(1, k // 2), min(2 * k, k_max)  # the maximum lies in [k/2, 2k]
    while hi - lo > 2:
        m1, m2 = lo + (hi - lo) // 3, hi - (hi - lo) // 3
        if f(m1) < f(m2):
            lo = m1 + 1
        else:
            hi = m2
    return max(f(j) for j in range(lo, hi + 1))


def hybrid(alpha1, c1, k1, alpha2, c2, k2, mode: str):
    """Combined speedup h(k1, k2) = f(k1) * g(k2) (Sec. 3.3 eq. 1). The product assumes the two
    levels are independent and batching is free up to M; measured LR+SD is 0.88-0.99 of it."""
    return f_step(alpha1, c1, k1, mode) * sd_speedup(alpha2, c2, k2)


def alpha_one_limits(c1, k1, c2, k2):
    """Closed forms at alpha1 = alpha2 = 1 (every draft accepted), for checking the limits:
    f_sync = k1 / (1 - c1 + c1 k1); S2 = k1; S1 = 1/c1; g = k2 / (1 - c2 + c2 k2)."""
    return {
        "f_sync": k1 / (1 - c1 + c1 * k1),
        "async_s2": float(k1),
        "async_s1": (1.0 / c1) if c1 > 0 else float("inf"),
        "g": k2 / (1 - c2 + c2 * k2),
    }

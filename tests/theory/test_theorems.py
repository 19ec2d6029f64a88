"""The paper's optimal-split theorems, checked by brute force against the exact optimiser.

Result of the search (documented here, kept as a test so a change that breaks it is noticed):
no counterexample to App. B Theorem 3 (sync, conditions (7)/(8)) or Theorem 4 (async) was found
on the grids below or on 60,000 random points inside the theorems' ranges (explored while
writing this module). Every branch of Theorem 3 (hybrid, token-only, step-only) is exercised.
"""
import collections
import itertools

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from lrsim.theory import HybridParams, f_sync, optimize, sd_speedup
from lrsim.theory.theorems import (LEMMA6_MAX, SYNC_THRESHOLD, async_theorem, check_theorem,
                                   sync_d, sync_theorem)


def _search(mode, alphas, cs, budgets):
    outcomes, counterexamples = collections.Counter(), []
    for a1, a2, c1, c2, m in itertools.product(alphas, alphas, cs, cs, budgets):
        opt = optimize(HybridParams(float(a1), c1, float(a2), c2, mode), m)
        th = check_theorem(opt)
        outcomes[(th.applies, th.prediction)] += 1
        if th.agrees is False:
            counterexamples.append(dict(a1=a1, c1=c1, a2=a2, c2=c2, M=m, prediction=th.prediction,
                                        best=opt.best, pure_sd=opt.pure_sd, pure_lr=opt.pure_lr))
    return outcomes, counterexamples


def test_sync_theorem_has_no_counterexample_on_grid():
    alphas = np.round(np.linspace(0.05, 0.95, 10), 2)
    outcomes, bad = _search("sync", alphas, [0.0, 0.02, 0.1, 0.25, 0.5], [4, 6, 8, 16, 64])
    assert bad == [], f"counterexamples to App. B Theorem 3: {bad[:5]}"
    for prediction in ("hybrid", "pure_sd", "pure_lr"):  # every branch is exercised
        assert outcomes[(True, prediction)] > 0, outcomes


def test_async_theorem_has_no_counterexample_in_its_range():
    alphas = np.round(np.linspace(0.53, 0.79, 6), 3)
    outcomes, bad = _search("async", alphas, [0.0, 0.05, 0.19, 0.33], [16, 18, 32, 128])
    # c1 = 0.33 < 1/3 and c2 = 0.19 < 1/5 qualify; c2 = 0.33 does not.
    assert bad == [], f"counterexamples to App. B Theorem 4: {bad[:5]}"
    assert outcomes[(True, "hybrid")] > 0


def test_async_theorem_conditions():
    inside = HybridParams(0.63, 0.05, 0.6, 0.0, "async")
    assert async_theorem(inside, 16).applies
    assert not async_theorem(inside, 14).applies          # M < 16
    assert not async_theorem(inside, 17).applies          # M odd
    assert not async_theorem(HybridParams(0.5, 0.05, 0.6, 0.0, "async"), 16).applies
    assert not async_theorem(HybridParams(0.63, 0.4, 0.6, 0.0, "async"), 16).applies
    assert not async_theorem(HybridParams(0.63, 0.05, 0.6, 0.2, "async"), 16).applies  # c2 < 1/5


def test_condition_7_is_h2_vs_h1():
    """(1+a1)/(1+c1) >= D2(M)  <=>  h(2, M/2) >= h(1, M)  (App. B Thm. 3)."""
    rng = np.random.default_rng(0)
    for _ in range(2000):
        a1, a2, c1, c2 = rng.uniform(0, 1, 4)
        m = int(rng.choice([4, 8, 16, 32]))
        lhs = (1 + a1) / (1 + c1) >= sync_d(a2, c2, m)
        h2 = f_sync(a1, c1, 2) * sd_speedup(a2, c2, m // 2)
        h1 = sd_speedup(a2, c2, m)
        if abs(h2 - h1) > 1e-12 * h1:
            assert lhs == (h2 > h1)


def test_lemma6_constant():
    res = minimize_scalar(lambda y: -(2 - y + (y - 2 + 1 / y) * np.log(1 - y)),
                          bounds=(1e-6, 1 - 1e-6), method="bounded", options={"xatol": 1e-10})
    assert -res.fun == pytest.approx(LEMMA6_MAX, abs=1e-9)
    assert res.x == pytest.approx(0.5693971, abs=1e-6)
    assert SYNC_THRESHOLD > LEMMA6_MAX


def test_sync_theorem_does_not_apply_on_odd_or_small_budget():
    p = HybridParams(0.8, 0.05, 0.8, 0.05, "sync")
    assert sync_theorem(p, 16).applies
    assert not sync_theorem(p, 15).applies and not sync_theorem(p, 2).applies
    assert not sync_theorem(HybridParams(0.1, 0.05, 0.8, 0.05, "sync"), 16).applies  # 1.048 < 1.157


def test_theorem_outside_range_makes_no_prediction():
    opt = optimize(HybridParams(0.63, 0.05, 0.3, 0.0, "async"), 16)
    th = check_theorem(opt)
    assert not th.applies and th.prediction is None and th.agrees is None

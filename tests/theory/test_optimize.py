"""The exact optimiser against brute-force enumeration of the full (k1, k2) grid."""
import itertools

import numpy as np
import pytest

from lrsim.theory import HybridParams, InvalidParameter, optimize, speedup_grid
from lrsim.theory.optimize import TIE_RTOL


def brute_force(p: HybridParams, budget: int):
    """Enumerate every feasible (k1, k2), k1 up to 2M so the async plateau is included."""
    from lrsim.theory import f_step, parallel_dim, sd_speedup

    best, ties = None, []
    for k1 in range(1, 2 * budget + 1):
        pd = float(parallel_dim(p.c1, k1, p.mode))
        for k2 in range(1, budget + 1):
            if pd * k2 > budget:
                break
            h = float(f_step(p.alpha1, p.c1, k1, p.mode) * sd_speedup(p.alpha2, p.c2, k2))
            if best is None or h > best * (1 + TIE_RTOL):
                best, ties = h, [(k1, k2)]
            elif h >= best * (1 - TIE_RTOL):
                ties.append((k1, k2))
    return best, ties


CASES = list(itertools.product([0.3, 0.63, 0.9], [0.0, 0.05, 0.3], [0.0, 0.3, 0.7], [0.0, 0.1],
                               ["sync", "async"], [1, 2, 5, 12, 16]))


@pytest.mark.parametrize("a1,c1,a2,c2,mode,budget", CASES)
def test_matches_brute_force(a1, c1, a2, c2, mode, budget):
    p = HybridParams(a1, c1, a2, c2, mode)
    opt = optimize(p, budget)
    best, ties = brute_force(p, budget)
    assert opt.best.speedup == pytest.approx(best, rel=1e-12)
    # Smallest k1, then smallest k2, among the brute-force ties (they come out in that order).
    assert (opt.best.k1, opt.best.k2) == ties[0]
    # Every reported tie is a brute-force tie; brute-force ties beyond ceil(1/c1) are the plateau.
    assert set(opt.ties) <= set(ties)
    beyond = {t for t in ties if t not in set(opt.ties)}
    if beyond:
        assert opt.k1_plateau and all(k1 > opt.best.k1 for k1, _ in beyond)
    k1s = np.arange(1, budget + 1)
    assert opt.pure_sd.k1 == 1 and opt.pure_lr.k2 == 1
    assert opt.best.speedup >= max(opt.pure_sd.speedup, opt.pure_lr.speedup) * (1 - 1e-15)
    if opt.best_hybrid:
        assert opt.best_hybrid.k1 >= 2 and opt.best_hybrid.k2 >= 2
        assert opt.best_hybrid.speedup <= opt.best.speedup
    assert len(k1s) == budget


def test_budget_one_is_autoregressive():
    opt = optimize(HybridParams(0.9, 0.01, 0.9, 0.0, "sync"), 1)
    assert (opt.best.k1, opt.best.k2, opt.best.speedup) == (1, 1, 1.0)
    assert opt.winner == "ar" and opt.best_hybrid is None


def test_async_plateau_reports_smallest_k1():
    p = HybridParams(0.8, 0.25, 0.0, 0.0, "async")  # ceil(1/c1) = 4, no token-level SD
    opt = optimize(p, 64)
    assert opt.best.k1 == 4 and opt.k1_plateau
    assert opt.winner == "pure_lr"


def test_exact_ties_are_reported():
    # alpha2 = c2 = 0: g(k2) = 1 for every k2, so k2 never matters and all k2 tie.
    opt = optimize(HybridParams(0.7, 0.1, 0.0, 0.0, "sync"), 30)
    assert opt.best.k2 == 1
    assert {(opt.best.k1, k2) for k2 in range(1, 30 // opt.best.k1 + 1)} <= set(opt.ties)
    assert len(opt.ties) > 1


def test_pure_strategies_can_win_outside_theorem_ranges():
    """Outside App. B Theorems 3-4's ranges a pure strategy can win (small M, n-gram alpha2)."""
    lr = optimize(HybridParams(0.63, 0.05, 0.3, 0.0, "async"), 4)
    assert lr.winner == "pure_lr" and (lr.best.k1, lr.best.k2) == (4, 1)
    sd = optimize(HybridParams(0.5, 0.3, 0.8, 0.02, "sync"), 8)
    assert sd.winner == "pure_sd" and (sd.best.k1, sd.best.k2) == (1, 8)


def test_grid_feasibility_mask():
    p = HybridParams(0.6, 0.2, 0.5, 0.1, "async")  # ceil(1/c1) = 5
    grid = speedup_grid(p, 20)
    assert np.isnan(grid[4, 4])       # k1 = k2 = 5: 5 * 5 > 20
    assert not np.isnan(grid[9, 3])   # k1 = 10 counts as 5: 5 * 4 <= 20
    assert np.nanmax(grid) == pytest.approx(optimize(p, 20).best.speedup)


@pytest.mark.parametrize("budget", [0, -3, 2.5])
def test_bad_budget(budget):
    with pytest.raises(ValueError):
        optimize(HybridParams(0.5, 0.1), budget)


@pytest.mark.parametrize("field,value", [("alpha1", 1.5), ("c1", -0.1), ("alpha2", float("nan")),
                                         ("c2", 2.0), ("mode", "turbo")])
def test_bad_params(field, value):
    kwargs = dict(alpha1=0.5, c1=0.1, alpha2=0.5, c2=0.1, mode="sync")
    kwargs[field] = value
    with pytest.raises(InvalidParameter, match=field):
        HybridParams(**kwargs)

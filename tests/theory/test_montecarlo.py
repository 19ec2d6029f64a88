"""Monte Carlo of the cycle/stage models agrees with the closed forms within 3 standard errors."""
import itertools

import pytest

from lrsim.theory import async_s1, async_s2, f_async, f_sync, sd_speedup
from lrsim.theory.montecarlo import mc_async_stage, mc_sd, mc_sync

GRID = list(itertools.product([0.2, 0.5, 0.63, 0.85], [0.0, 0.05, 0.1, 0.3], [2, 3, 6, 12]))
N = 100_000  # cycles per point: standard errors ~0.3% of the speedup


@pytest.mark.parametrize("alpha,c,k", GRID)
def test_sync_cycle(alpha, c, k):
    est = mc_sync(alpha, c, k, n=N, seed=k)
    assert est.within(float(f_sync(alpha, c, k))), (est, float(f_sync(alpha, c, k)))


@pytest.mark.parametrize("alpha,c,k", GRID)
def test_token_sd_round(alpha, c, k):
    est = mc_sd(alpha, c, k, n=N, seed=100 + k)
    assert est.within(float(sd_speedup(alpha, c, k)))


@pytest.mark.parametrize("alpha,c,k", GRID)
def test_async_stage_model(alpha, c, k):
    """Covers both regimes: S2 (k1 < ceil(1/c1)) and S1 (k1 >= ceil(1/c1))."""
    est = mc_async_stage(alpha, c, k, n=N, seed=200 + k)
    assert est.within(float(f_async(alpha, c, k))), (est, float(f_async(alpha, c, k)))


def test_theory_md_example():
    est = mc_async_stage(0.63, 0.1, 6, n=400_000, seed=7)
    assert est.within(float(async_s2(0.63, 0.1, 6)))
    assert est.stderr < 0.005


def test_s1_regime_is_drafter_bound():
    est = mc_async_stage(0.7, 0.25, 4, n=N, seed=3)  # ceil(1/0.25) = 4: S1 applies
    assert est.within(float(async_s1(0.7, 0.25)))


def test_seeded_is_deterministic():
    assert mc_sync(0.5, 0.1, 4, n=1000, seed=5) == mc_sync(0.5, 0.1, 4, n=1000, seed=5)


def test_alpha_one_rejected():
    with pytest.raises(ValueError, match="alpha"):
        mc_sync(1.0, 0.1, 3)

"""Closed-form identities and reference values of the paper's theory (Sec. 2, 3.3, App. B/C)."""
import math

import numpy as np
import pytest

from lrsim.theory import (async_s1, async_s2, depth_limit, f_async, f_sync, geometric_sum, hybrid,
                          sd_ceiling, sd_speedup, sd_speedup_gamma, step_ceiling)
from lrsim.theory.figure import blog_curves
from lrsim.theory.formulas import alpha_one_limits

ALPHAS = [0.0, 0.1, 0.3, 0.5, 0.63, 0.8, 0.95, 0.999]
CS = [0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0]


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("c", CS)
def test_no_speculation_is_unit_speedup(alpha, c):
    assert sd_speedup(alpha, c, 1) == pytest.approx(1.0)
    assert f_sync(alpha, c, 1) == pytest.approx(1.0)
    assert f_async(alpha, c, 1) == pytest.approx(1.0)
    assert sd_speedup_gamma(alpha, c, 0) == pytest.approx(1.0)


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("c", CS)
def test_k_equals_two_identities(alpha, c):
    assert f_sync(alpha, c, 2) == pytest.approx((1 + alpha) / (1 + c))
    if depth_limit(c) > 2:  # below the depth limit f_async is S2
        assert f_async(alpha, c, 2) == pytest.approx((1 + alpha) / (1 + c * alpha * (1 - alpha)))


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("inv_c", [1, 2, 3, 5, 10, 20, 100])
def test_s2_equals_s1_at_k_one_over_c(alpha, inv_c):
    c = 1.0 / inv_c
    assert async_s2(alpha, c, inv_c) == pytest.approx(async_s1(alpha, c), rel=1e-12)


def test_gamma_and_k2_forms_agree():
    for a in ALPHAS:
        for c in CS:
            for gamma in range(0, 12):
                assert sd_speedup_gamma(a, c, gamma) == pytest.approx(sd_speedup(a, c, gamma + 1))


def test_reference_values():
    # The async stage model (App. B Theorem 2) at alpha1 = 0.63, k1 = 6, c1 = 0.1: S2 = 2.2580.
    assert float(async_s2(0.63, 0.1, 6)) == pytest.approx(2.2580, abs=5e-5)
    # The paper's closed form, written out literally, equals the stable implementation.
    a, c, k = 0.63, 0.1, 6
    literal = (1 - a**k) / ((1 - a) + c * (a - a ** (k + 1) - k * (1 - a) * a**k))
    assert float(async_s2(a, c, k)) == pytest.approx(literal, rel=1e-13)
    assert float(async_s1(0.5, 0.0)) == pytest.approx(2.0)  # -> 1/(1 - alpha) as c1 -> 0


def test_blog_figure_peaks():
    curves = blog_curves()
    assert len(curves.gamma) == 30
    g_sd, s_sd = curves.peak("sd")
    g_c, s_c = curves.peak("combined")
    assert (round(g_sd, 2), round(s_sd, 2)) == (3.45, 1.63)
    assert (round(g_c, 2), round(s_c, 2)) == (9.66, 2.66)


@pytest.mark.parametrize("k", [1, 2, 3, 7, 40])
def test_alpha_to_one_limits(k):
    """Exact values at alpha = 1 and continuity of the implementation as alpha -> 1."""
    c1, c2 = 0.05, 0.1
    lim = alpha_one_limits(c1, k, c2, k)
    assert f_sync(1.0, c1, k) == pytest.approx(lim["f_sync"])
    assert sd_speedup(1.0, c2, k) == pytest.approx(lim["g"])
    assert async_s1(1.0, c1) == pytest.approx(lim["async_s1"])
    assert async_s2(1.0, c1, k) == pytest.approx(lim["async_s2"])
    for eps in (1e-4, 1e-7, 1e-10):
        a = 1 - eps
        assert f_sync(a, c1, k) == pytest.approx(lim["f_sync"], rel=10 * k * eps + 1e-9)
        assert async_s2(a, c1, k) == pytest.approx(lim["async_s2"], rel=10 * k * k * eps + 1e-9)


def test_geometric_sum_is_stable_near_one():
    # The naive quotient (1 - a^k)/(1 - a) loses digits here; the sum must stay exact-ish.
    a, k = 1 - 1e-12, 7
    exact = sum(a**i for i in range(k))
    assert geometric_sum(a, k) == pytest.approx(exact, rel=1e-12)
    assert geometric_sum(0.0, 5) == 1.0 and geometric_sum(0.3, 0) == 0.0


def test_ceilings():
    for a in ALPHAS[:-1]:
        ks = np.arange(1, 400)
        assert np.all(sd_speedup(a, 0.0, ks) <= sd_ceiling(a) * (1 + 1e-12))
        assert np.max(f_sync(a, 0.1, ks)) == pytest.approx(step_ceiling(a, 0.1, "sync"))
        assert np.max(f_async(a, 0.1, ks)) == pytest.approx(step_ceiling(a, 0.1, "async"))
    assert step_ceiling(0.5, 0.0, "sync") == pytest.approx(2.0)
    assert math.isinf(sd_ceiling(1.0))


def test_async_constant_past_depth_limit():
    a, c = 0.7, 0.15  # ceil(1/c) = 7
    assert depth_limit(c) == 7
    vals = f_async(a, c, np.arange(7, 50))
    assert np.allclose(vals, async_s1(a, c), rtol=1e-14)


def test_depth_limit_edge_cases():
    assert depth_limit(0.0) == math.inf
    assert depth_limit(1.0) == 1
    assert depth_limit(0.05) == 20 and depth_limit(0.1) == 10 and depth_limit(1 / 3) == 3
    assert depth_limit(0.3) == 4


def test_hybrid_is_product():
    assert hybrid(0.6, 0.1, 3, 0.5, 0.05, 4, "sync") == pytest.approx(
        f_sync(0.6, 0.1, 3) * sd_speedup(0.5, 0.05, 4))
    assert hybrid(0.6, 0.1, 3, 0.5, 0.05, 4, "async") == pytest.approx(
        f_async(0.6, 0.1, 3) * sd_speedup(0.5, 0.05, 4))


def test_unknown_mode_rejected():
    from lrsim.theory import f_step

    with pytest.raises(ValueError, match="unknown mode"):
        f_step(0.5, 0.1, 2, "turbo")

"""Property-based checks (hypothesis) of monotonicity and bounds of the closed forms."""
from hypothesis import given, settings
from hypothesis import strategies as st

from lrsim.theory import (HybridParams, async_s1, async_s2, depth_limit, f_async, f_sync,
                          optimize, sd_ceiling, sd_speedup)

RTOL = 1e-12
alpha = st.floats(0.0, 0.999)
cost = st.floats(0.001, 1.0)
k = st.integers(1, 64)
SETTINGS = settings(max_examples=300, deadline=None, derandomize=True)


@SETTINGS
@given(alpha, cost, k)
def test_async_nondecreasing_in_k1(a, c, k1):
    assert f_async(a, c, k1 + 1) >= f_async(a, c, k1) * (1 - RTOL)


@SETTINGS
@given(alpha, cost, k)
def test_async_at_least_sync(a, c, k1):
    assert f_async(a, c, k1) >= f_sync(a, c, k1) * (1 - RTOL)


@SETTINGS
@given(alpha, st.floats(0.0, 0.5), cost, k)
def test_increasing_in_alpha(a, da, c, k1):
    b = min(a + da, 0.999)
    for f in (f_sync, f_async, sd_speedup):
        assert f(b, c, k1) >= f(a, c, k1) * (1 - RTOL)


@SETTINGS
@given(alpha, cost, st.floats(0.0, 0.5), k)
def test_decreasing_in_cost(a, c, dc, k1):
    d = min(c + dc, 1.0)
    for f in (f_sync, f_async, sd_speedup):
        assert f(a, d, k1) <= f(a, c, k1) * (1 + RTOL)


@SETTINGS
@given(alpha, cost, k)
def test_bounds(a, c, k1):
    assert 1.0 - RTOL <= f_async(a, c, k1) <= async_s1(a, c) * (1 + RTOL)
    assert f_sync(a, c, k1) <= min(k1, sd_ceiling(a)) * (1 + RTOL)
    assert sd_speedup(a, 0.0, k1) <= sd_ceiling(a) * (1 + RTOL)
    if k1 < depth_limit(c):
        assert async_s2(a, c, k1) <= async_s1(a, c) * (1 + RTOL)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(alpha, st.floats(0.0, 1.0), alpha, st.floats(0.0, 1.0), st.sampled_from(["sync", "async"]),
       st.integers(1, 200))
def test_optimum_grows_with_budget(a1, c1, a2, c2, mode, m):
    p = HybridParams(a1, c1, a2, c2, mode)
    small, large = optimize(p, m), optimize(p, m + 1)
    assert large.best.speedup >= small.best.speedup * (1 - RTOL)
    assert small.best.speedup >= max(small.pure_sd.speedup, small.pure_lr.speedup) * (1 - RTOL)

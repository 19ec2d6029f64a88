import math

import pytest

from lrsim.theory import async_s1, f_async, f_sync
from lrsim.theory.inverse import implied_c1


@pytest.mark.parametrize("alpha,c,k,mode", [(0.63, 0.1, 4, "async"), (0.5, 0.3, 3, "sync"),
                                            (0.8, 0.05, 6, "async"), (0.63, 0.2, math.inf, "async")])
def test_round_trip(alpha, c, k, mode):
    f = async_s1 if math.isinf(k) else None
    s = float(f(alpha, c)) if f else float((f_async if mode == "async" else f_sync)(alpha, c, k))
    assert implied_c1(alpha, s, k, mode) == pytest.approx(c, abs=1e-9)


def test_paper_r1_gsm8k_implies_large_c1():
    # Table 1: R1-Distill 32B/1.5B on GSM8K, step acceptance 0.63, LR speedup 1.71x.
    c1 = implied_c1(0.63, 1.71)
    assert c1 == pytest.approx(0.341, abs=1e-3)   # far above the ~0.05 parameter ratio


def test_unreachable_speedup():
    assert implied_c1(0.5, 3.0) is None            # above 1/(1 - alpha1) = 2: no c1 reaches it
    assert implied_c1(0.5, 5.0, 4, "sync") is None

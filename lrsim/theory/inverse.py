"""Inverting the closed forms: which effective c1 explains a measured speedup?

Plugging the paper's measured LR speedups (arXiv 2506.19830, Table 1) into its own async formula
(App. B Theorem 2) implies an effective c1 far above the draft/target parameter ratio (~0.05): the
overheads (verifier, scheduling, batch cost) dominate. This module makes that computation exact.
"""
from __future__ import annotations

import math

from scipy.optimize import brentq

from .formulas import f_step


def implied_c1(alpha1: float, speedup: float, k1: float = math.inf, mode: str = "async") -> float | None:
    """The c1 in [0, 1] with f(alpha1, c1, k1) = speedup, or None when no c1 reaches it.

    k1 = inf (async) means the drafter-bound ceiling S1 = 1/(c1 + (1 - c1)(1 - alpha1)), whose
    inverse is c1 = (1/speedup - (1 - alpha1)) / alpha1. f decreases in c1, so a root is unique.
    """
    if mode == "async" and math.isinf(k1):
        if alpha1 <= 0:
            return None
        c1 = (1.0 / speedup - (1.0 - alpha1)) / alpha1
        return c1 if 0.0 <= c1 <= 1.0 else None

    def gap(c1: float) -> float:
        return float(f_step(alpha1, c1, k1, mode)) - speedup

    lo, hi = gap(0.0), gap(1.0)
    if lo < 0 or hi > 0:
        return None
    if hi == 0:
        return 1.0
    return float(brentq(gap, 0.0, 1.0, xtol=1e-12))

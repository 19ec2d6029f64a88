"""The paper's theorems on when the hybrid split (k1 >= 2 and k2 >= 2) is optimal, as checkable
predicates, and a comparison of their prediction with the exact optimiser.

Async: App. B Theorem 4 (the main-text theorem). Sync: App. B Theorem 3 with conditions (7)/(8).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .optimize import TIE_RTOL, Optimum
from .params import HybridParams

# Lemma 6 (App. B): max over y in (0, 1) of F(y) = 2 - y + (y - 2 + 1/y) ln(1 - y),
# reached at y = 0.5693971. Theorem 3 states its threshold rounded up to 1.157.
LEMMA6_MAX = 1.1562281731
SYNC_THRESHOLD = 1.157

# Theorem 4's ranges (App. B): 0.52 < alpha1, alpha2 < 0.8; c1 < 1/3; c2 < 1/5; M >= 16, even.
ASYNC_ALPHA_RANGE = (0.52, 0.8)
ASYNC_C1_MAX = 1.0 / 3.0
ASYNC_C2_MAX = 1.0 / 5.0
ASYNC_MIN_BUDGET = 16
SYNC_MIN_BUDGET = 4


@dataclass
class TheoremCheck:
    name: str
    applies: bool                   # all of the theorem's hypotheses hold
    prediction: str | None          # 'hybrid', 'pure_sd', 'pure_lr', 'tie' or None (does not apply)
    conditions: dict = field(default_factory=dict)  # each hypothesis: value and whether it holds
    agrees: bool | None = None      # prediction vs the exact optimiser (None when it does not apply)

    def as_dict(self) -> dict:
        return {"name": self.name, "applies": self.applies, "prediction": self.prediction,
                "agrees": self.agrees, "conditions": self.conditions}


def sync_d(alpha: float, c: float, budget: int) -> float:
    """D_i(M) = (1 + alpha_i^(M/2)) (1 - c_i + c_i M/2) / (1 - c_i + c_i M)  (App. B Thm. 3).

    (1+alpha1)/(1+c1) >= D2(M) is equivalent to h(2, M/2) >= h(1, M): condition (7)."""
    half = budget / 2
    return (1 + alpha ** half) * (1 - c + c * half) / (1 - c + c * budget)


def async_theorem(p: HybridParams, budget: int) -> TheoremCheck:
    """App. B Theorem 4: under its ranges the async optimum has k1 >= 2 and k2 >= 2, strictly."""
    lo, hi = ASYNC_ALPHA_RANGE
    cond = {
        "0.52 < alpha1 < 0.8": lo < p.alpha1 < hi,
        "0.52 < alpha2 < 0.8": lo < p.alpha2 < hi,
        "c1 < 1/3": p.c1 < ASYNC_C1_MAX,
        "c2 < 1/5": p.c2 < ASYNC_C2_MAX,
        "M >= 16 and even": budget >= ASYNC_MIN_BUDGET and budget % 2 == 0,
    }
    applies = all(cond.values())
    return TheoremCheck("async (App. B Theorem 4)", applies, "hybrid" if applies else None, cond)


def sync_theorem(p: HybridParams, budget: int) -> TheoremCheck:
    """App. B Theorem 3: with M >= 4 even and min{(1+a1)/(1+c1), (1+a2)/(1+c2)} > 1.157,
    (7) and (8) both strict -> hybrid optimal; (7) fails -> token-only (pure SD) optimal;
    (8) fails -> step-only (pure LR) optimal; equality -> the hybrid only ties."""
    r1 = (1 + p.alpha1) / (1 + p.c1)
    r2 = (1 + p.alpha2) / (1 + p.c2)
    even = budget >= SYNC_MIN_BUDGET and budget % 2 == 0
    d1 = sync_d(p.alpha1, p.c1, budget) if even else None
    d2 = sync_d(p.alpha2, p.c2, budget) if even else None
    cond = {
        "M >= 4 and even": even,
        "min((1+a1)/(1+c1), (1+a2)/(1+c2)) > 1.157": min(r1, r2) > SYNC_THRESHOLD,
        "(1+a1)/(1+c1)": r1, "(1+a2)/(1+c2)": r2, "D1(M)": d1, "D2(M)": d2,
    }
    applies = bool(cond["M >= 4 and even"] and cond["min((1+a1)/(1+c1), (1+a2)/(1+c2)) > 1.157"])
    prediction = None
    if applies:
        c7 = _compare(r1, d2)  # condition (7): (1+a1)/(1+c1) >= D2(M)
        c8 = _compare(r2, d1)  # condition (8): (1+a2)/(1+c2) >= D1(M)
        cond["(7) (1+a1)/(1+c1) >= D2(M)"] = c7 >= 0
        cond["(8) (1+a2)/(1+c2) >= D1(M)"] = c8 >= 0
        if c7 > 0 and c8 > 0:
            prediction = "hybrid"
        elif c7 < 0 and c8 < 0:
            prediction = "undetermined"  # the theorem says nothing when both fail
        elif c7 < 0:
            prediction = "pure_sd"
        elif c8 < 0:
            prediction = "pure_lr"
        else:
            prediction = "tie"
    return TheoremCheck("sync (App. B Theorem 3)", applies, prediction, cond)


def _compare(a: float, b: float) -> int:
    """Sign of a - b, with differences below TIE_RTOL counted as equality."""
    if math.isclose(a, b, rel_tol=TIE_RTOL, abs_tol=0.0):
        return 0
    return 1 if a > b else -1


def check_theorem(opt: Optimum) -> TheoremCheck:
    """The theorem for the optimiser's mode, with its prediction compared to the exact optimum.

    'hybrid' agrees when a split with k1, k2 >= 2 strictly beats both pure strategies;
    'pure_sd' / 'pure_lr' agree when that pure strategy reaches the optimum (ties allowed);
    'tie' agrees when the best hybrid and the best pure strategy tie.
    """
    p, budget = opt.params, opt.budget
    th = async_theorem(p, budget) if p.mode == "async" else sync_theorem(p, budget)
    if not th.applies or th.prediction == "undetermined":
        return th
    best = opt.best.speedup * (1 - TIE_RTOL)
    if th.prediction == "hybrid":
        th.agrees = opt.hybrid_strictly_best
    elif th.prediction == "pure_sd":
        th.agrees = opt.pure_sd.speedup >= best
    elif th.prediction == "pure_lr":
        th.agrees = opt.pure_lr.speedup >= best
    else:  # tie
        pure = max(opt.pure_sd.speedup, opt.pure_lr.speedup)
        th.agrees = opt.best_hybrid is not None and math.isclose(
            opt.best_hybrid.speedup, pure, rel_tol=TIE_RTOL)
    return th

"""Seeded Monte Carlo estimators of the cycle/stage models behind the closed forms, used to check
them (tests require agreement within 3 standard errors).

Each model is a renewal process: a cycle (or stage) emits E_i steps in time T_i (in units of the
target's step time T), so the long-run speedup is R = sum E / sum T (renewal-reward theorem).
X ~ Geometric(alpha): P(X = k) = alpha^k (1 - alpha), the number of accepted drafts before the
first rejection.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Estimate:
    mean: float
    stderr: float
    n: int

    def within(self, exact: float, n_se: float = 3.0) -> bool:
        return abs(self.mean - exact) <= n_se * self.stderr + 1e-12


def ratio_estimate(emitted: np.ndarray, time: np.ndarray) -> Estimate:
    """R = sum(emitted)/sum(time) with its delta-method standard error:
    Var(R) ~= Var(emitted - R time) / (n mean(time)^2)."""
    n = len(emitted)
    r = emitted.sum() / time.sum()
    resid = emitted - r * time
    se = resid.std(ddof=1) / (np.sqrt(n) * time.mean())
    return Estimate(float(r), float(se), n)


def _accepted_run(alpha: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """n draws of X ~ Geometric(alpha) on {0, 1, ...} (alpha < 1)."""
    if not 0.0 <= alpha < 1.0:
        raise ValueError("Monte Carlo needs alpha in [0, 1): at alpha = 1 a cycle never ends")
    return rng.geometric(1.0 - alpha, size=n) - 1


def mc_sync(alpha1: float, c1: float, k1: int, n: int = 200_000, seed: int = 0) -> Estimate:
    """Algorithm 1 cycle: (k1-1) c1 T of drafting + T for the parallel target pass;
    emits min(X, k1-1) + 1 steps (App. B Thm. 1)."""
    x = _accepted_run(alpha1, n, np.random.default_rng(seed))
    emitted = np.minimum(x, k1 - 1) + 1.0
    time = np.full(n, (k1 - 1) * c1 + 1.0)
    return ratio_estimate(emitted, time)


def mc_sd(alpha2: float, c2: float, k2: int, n: int = 200_000, seed: int = 0) -> Estimate:
    """Token-level SD round: k2-1 drafted tokens (cost c2 each) + one verification pass;
    emits min(X, k2-1) + 1 tokens. The same renewal structure as the sync step cycle."""
    return mc_sync(alpha2, c2, k2, n, seed)


def mc_async_stage(alpha1: float, c1: float, k1: int, n: int = 200_000, seed: int = 0) -> Estimate:
    """The paper's async stage model (App. B Thm. 2, App. C): a stage emits X+1 steps and takes
    ceil((X+1)/k1) T + c1 T (X mod k1) below the depth limit (S2), or (1 + c1 X) T once
    k1 >= ceil(1/c1) (S1: the drafter paces the pipeline)."""
    x = _accepted_run(alpha1, n, np.random.default_rng(seed))
    limit = np.inf if c1 == 0 else np.ceil(1.0 / c1 - 1e-12)
    if k1 >= limit:
        time = 1.0 + c1 * x
    else:
        time = np.ceil((x + 1.0) / k1) + c1 * np.mod(x, k1)
    return ratio_estimate(x + 1.0, time.astype(float))

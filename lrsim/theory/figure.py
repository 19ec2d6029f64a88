"""The blog figure: token-level SD alone vs step+token speculation under the same total
parallelism (alpha = 0.5, c = 0.05 for both levels, gamma on numpy.linspace(0, 20, 30)).

SD curve: g(gamma) in the Sec. 2 form. Combined curve: the budget gamma split evenly between the
two levels, g(sqrt(gamma))^2 (same form for both). Published peaks: SD 1.63 at gamma = 3.45,
step+token 2.66 at gamma = 9.66.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .formulas import sd_speedup_gamma

BLOG_ALPHA = 0.5   # acceptance at both levels
BLOG_C = 0.05      # draft/target cost ratio at both levels
BLOG_GAMMA = np.linspace(0, 20, 30)


@dataclass(frozen=True)
class BlogCurves:
    gamma: np.ndarray
    sd: np.ndarray
    combined: np.ndarray

    def peak(self, which: str) -> tuple[float, float]:
        """(gamma, speedup) at the maximum of 'sd' or 'combined' on the grid."""
        y = getattr(self, which)
        i = int(np.argmax(y))
        return float(self.gamma[i]), float(y[i])


def blog_curves(alpha: float = BLOG_ALPHA, c: float = BLOG_C, gamma=BLOG_GAMMA) -> BlogCurves:
    gamma = np.asarray(gamma, dtype=float)
    sd = sd_speedup_gamma(alpha, c, gamma)
    combined = sd_speedup_gamma(alpha, c, np.sqrt(gamma)) ** 2
    return BlogCurves(gamma, sd, combined)

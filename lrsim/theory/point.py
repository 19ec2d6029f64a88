"""One validated evaluation of the closed forms: f, g, h = f g and the step-level limits at
(k1, k2) for given parameters. The entry point for user input (`lr theory speedup`): every
argument is checked (InvalidParameter names it), and every number returned is finite or None.
"""
from __future__ import annotations

import math

from .formulas import depth_limit, f_step, sd_speedup, step_ceiling
from .params import MAX_DIM, HybridParams, check_count


def _finite(x: float) -> float | None:
    """None for an unbounded limit (inf), so the result stays strict JSON."""
    return float(x) if math.isfinite(x) else None


def speedup_point(p: HybridParams, k1: int, k2: int = 1) -> dict:
    """f (step level, Sec. 3.3 / App. B Thms. 1-2), g (token level) and h = f g at (k1, k2).

    step_ceiling is the supremum of f over k1 (None when unbounded: alpha1 = 1 with c1 = 0);
    depth_limit is ceil(1/c1) (None when c1 is 0 or so small that 1/c1 overflows)."""
    k1, k2 = int(check_count("k1", k1, MAX_DIM)), int(check_count("k2", k2, MAX_DIM))
    f = float(f_step(p.alpha1, p.c1, k1, p.mode))
    g = float(sd_speedup(p.alpha2, p.c2, k2))
    limit = float(depth_limit(p.c1))
    return {"mode": p.mode, "k1": k1, "k2": k2, "f": f, "g": g, "h": f * g,
            "step_ceiling": _finite(float(step_ceiling(p.alpha1, p.c1, p.mode))),
            "depth_limit": int(limit) if math.isfinite(limit) else None}

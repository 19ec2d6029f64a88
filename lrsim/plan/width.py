"""Tree width from measured acceptance per width.

The simulator's synthetic workload correlates sibling drafts (`Synthetic.sibling_hard` = h): with
probability h the target's step is one no draft can match; otherwise each of the W siblings is
accepted independently with alpha1 / (1 - h). So the marginal acceptance of one judged draft stays
alpha1 and the acceptance of a position (some sibling accepted) at width W is

    p(W) = (1 - h) (1 - (1 - alpha1 / (1 - h))^W)          p(1) = alpha1

A user who measured per-position acceptance at a few widths (the paper's width ablation,
arXiv 2506.19830, depth 2: 0.63 at W = 1, 0.83 at W = 8) gives {W: p(W)}; `fit` returns
(alpha1, h) reproducing them (exactly for one width besides W = 1, least squares for more;
scipy.optimize).
"""
from __future__ import annotations

import math

from lrcore.errors import UserError

PAPER_WIDTH_ACCEPTANCE = {1: 0.63, 8: 0.83}     # the paper's width ablation: depth 2, W = 1 -> 8


def position_acceptance(alpha1: float, h: float, width: int) -> float:
    if width <= 1 or alpha1 <= 0:
        return alpha1
    q = alpha1 / (1.0 - h)
    return (1.0 - h) * (1.0 - (1.0 - q) ** width)


def parse(text: str, flag: str = "--accept-by-width") -> dict[int, float]:
    """'1:0.63,8:0.83' -> {1: 0.63, 8: 0.83}."""
    out: dict[int, float] = {}
    try:
        for part in text.split(","):
            w, p = part.split(":")
            w, p = int(w), float(p)
            if w < 1 or w > 1024 or not (math.isfinite(p) and 0.0 < p < 1.0):
                raise ValueError
            out[w] = p
    except ValueError:
        raise UserError(f"{flag}: expected WIDTH:ACCEPTANCE pairs like '1:0.63,8:0.83' (width 1-1024, "
                        f"acceptance of a position in (0, 1)), got {text!r}") from None
    return out


def fit(by_width: dict[int, float], alpha1: float | None = None,
        flag: str = "--accept-by-width") -> tuple[float, float]:
    """(alpha1, sibling_hard) reproducing measured per-position acceptance by width."""
    from scipy.optimize import minimize, minimize_scalar

    ws = sorted(by_width)
    ps = [by_width[w] for w in ws]
    if any(b < a - 1e-12 for a, b in zip(ps, ps[1:])):
        raise UserError(f"{flag}: acceptance must not fall as width grows (more siblings can only "
                        f"match more often), got {by_width}")
    if 1 in by_width:
        alpha1 = by_width[1]
    if alpha1 is None:
        if len(ws) < 2:
            raise UserError(f"{flag}: give width 1 (or --alpha1) and at least one other width")
        # two unknowns: least squares over alpha1 and h
        def loss2(x):
            a, h = x
            if not (0 < a <= 1 - h and 0 <= h < 1):
                return 1e6
            return sum((position_acceptance(a, h, w) - p) ** 2 for w, p in zip(ws, ps))
        best = min((minimize(loss2, [a0, h0], method="Nelder-Mead",
                             options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 4000})
                    for a0 in (0.3, 0.5, 0.7) for h0 in (0.0, 0.1, 0.3)), key=lambda r: r.fun)
        return float(best.x[0]), float(max(0.0, best.x[1]))
    others = [(w, p) for w, p in zip(ws, ps) if w > 1]
    if not others:
        return float(alpha1), 0.0
    hi = 1.0 - alpha1
    if hi <= 0:
        return float(alpha1), 0.0

    def loss(h):
        return sum((position_acceptance(alpha1, h, w) - p) ** 2 for w, p in others)
    res = minimize_scalar(loss, bounds=(0.0, hi - 1e-12), method="bounded", options={"xatol": 1e-12})
    return float(alpha1), float(res.x)

"""How much of each time span another engine's spans cover: the overlap `o` of a forward pass
with the other engine's passes, which the fit's contention term multiplies (lrsim/calib/physical:
a pass takes (1 + contention * o) times its alone time), and which the side-by-side probe
(lrreal/probe.py) reads to keep only the passes that ran wholly beside the other engine."""
from __future__ import annotations


def covered_fraction(spans: list[tuple[float, float]], other: list[tuple[float, float]]) -> list[float]:
    """Fraction (0..1) of each (start, end) in `spans`, taken in time order, covered by the union
    of the `other` spans (themselves disjoint: one engine runs one pass at a time)."""
    if not other:
        return [0.0] * len(spans)
    other = sorted(other)
    out = []
    j = 0
    for s, e in spans:
        while j < len(other) and other[j][1] <= s:
            j += 1
        cov, k = 0.0, j
        while k < len(other) and other[k][0] < e:
            cov += max(0.0, min(e, other[k][1]) - max(s, other[k][0]))
            k += 1
        out.append(min(1.0, cov / (e - s)) if e > s else 0.0)
    return out

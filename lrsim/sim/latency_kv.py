"""A measured latency table as a step model with a KV term: what a GPU step of `batch` sequences,
each adding `query` positions after `context` cached tokens, costs.

    t(b, q, ctx) = W(b * q) + k * b * ctx + k' * b * q * ctx

W is the cost of the positions the step computes (the weights streamed once plus the GEMMs that
grow with tokens), piecewise linear over the token counts the table measured; k is the cost of
one cached token read by attention (decode attention streams every sequence's KV cache once,
whatever q: lrsim/sim/latency.py's Roofline has the same term), k' its arithmetic per query
position and cached token (what a verify of many positions at long context adds). All are
fitted to the table's points by least squares on relative error (scipy.optimize.lsq_linear,
bounded-variable least squares: every coefficient >= 0).

Why not interpolate the table directly (Tabulated): it keys a step by b * q and the mean context,
so (b = 32, q = 1) and (b = 4, q = 8), 32 tokens either way, share one value although the first
reads 8x the KV cache. Measured on an H100 off the table's grid (benchmarks/results/
latency_heldout.md), that collapse errs several times more than this model (large batches at
long context priced too fast, small batches with many query tokens too slow).

Tables that cannot separate the two terms (one context per token count, e.g. a CPU curve of
batch sizes at one context: `identifiable` is False) keep Tabulated (`measured_model`).
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

import numpy as np

from .latency import CACHE_MAX, LatencyModel, Tabulated, Curve


def identifiable(points) -> bool:
    """Whether (batch, query, context, seconds) points separate W from k: some token count was
    measured at two or more KV sizes (and every value is a finite measurement: batch and query
    >= 1, context >= 0, seconds > 0; anything else keeps Tabulated's semantics)."""
    seen: dict[float, set] = {}
    for b, q, ctx, t in points:
        if not (np.isfinite([b, q, ctx, t]).all() and b >= 1 and q >= 1 and ctx >= 0 and t > 0):
            return False
        seen.setdefault(b * q, set()).add(b * ctx)
    return any(len(kv) > 1 for kv in seen.values())


def _hat(x: float, knots: tuple) -> np.ndarray:
    """The piecewise-linear basis over `knots` at x (clamped below the first knot, the last
    segment extended above the last)."""
    row = np.zeros(len(knots))
    if len(knots) == 1 or x <= knots[0]:
        row[0] = 1.0
        return row
    j = min(bisect_right(knots, x) - 1, len(knots) - 2)
    w = (x - knots[j]) / (knots[j + 1] - knots[j])
    row[j], row[j + 1] = 1.0 - w, w
    return row


@dataclass
class TabulatedKV(LatencyModel):
    """t = overhead + W(tokens) + (k + k' * positions per sequence) * KV tokens read, fitted to
    measured decode steps (batch, query, context per sequence, seconds); prefill beyond the
    decode measurements from the prefill curve (tokens, seconds), as Tabulated does."""
    decode: list[tuple[float, float, float, float]]
    prefill: list[tuple[float, float]] = field(default_factory=list)
    name: str = "tabulated-kv"
    overhead_s: float = 0.0

    def __post_init__(self):
        from scipy.optimize import lsq_linear

        pts = [(float(b), float(q), float(c), float(t)) for b, q, c, t in self.decode]
        self.knots = tuple(sorted({b * q for b, q, _, _ in pts}))
        a = np.array([np.append(_hat(b * q, self.knots), (b * c, b * q * c)) for b, q, c, _ in pts])
        t = np.array([p[3] for p in pts])
        # relative error; bvls: the exact bounded solution (an active set), not an iterate
        fit = lsq_linear(a / t[:, None], np.ones(len(t)), bounds=(0.0, np.inf), method="bvls")
        self.w = Curve(np.array(self.knots), fit.x[:-2])
        self.kv_s = float(fit.x[-2])                 # seconds per cached token read
        self.attn_s = float(fit.x[-1])               # seconds per (query position x cached token)
        self.fit_max_rel_error = float(np.max(np.abs(a @ fit.x / t - 1)))
        self._max_decode = self.knots[-1]
        pp = sorted(self.prefill)
        self._fpre = Curve(np.array([p[0] for p in pp], float), np.array([p[1] for p in pp], float)) \
            if pp else None
        self._by_tokens: dict = {}

    def forward(self, decode_tokens, prefill_tokens, seqs, context):
        n = decode_tokens + prefill_tokens
        if prefill_tokens and n > self._max_decode and self._fpre is not None:
            return self.overhead_s + self._fpre(n)
        n = max(n, 1)
        w = self._by_tokens.get(n)
        if w is None:
            if len(self._by_tokens) >= CACHE_MAX:
                self._by_tokens.clear()
            w = self._by_tokens[n] = self.w(n)
        # q x KV: the positions per sequence (n / seqs) times the cache they attend to
        return self.overhead_s + w + context * (self.kv_s + self.attn_s * n / max(seqs, 1))


def measured_model(points, prefill, name: str, overhead_s: float = 0.0) -> LatencyModel:
    """The model of a measured table: TabulatedKV where its points separate the KV term, else
    Tabulated (steps keyed by batch x query tokens and context per sequence).
    points: (batch, query, context per sequence, seconds); prefill: (tokens, seconds)."""
    points = list(points)
    if identifiable(points):
        return TabulatedKV(points, list(prefill), name=name, overhead_s=overhead_s)
    return Tabulated([(b * q, c, t) for b, q, c, t in points], list(prefill), name=name,
                     overhead_s=overhead_s)

"""Forward-pass latency models: what one engine iteration costs on its device pool.

An iteration processes `decode_tokens` new positions of running sequences (1 per sequence for
plain decoding, k2 per sequence for a speculative-decoding verification pass), `prefill_tokens`
prompt/uncached-suffix positions (chunked prefill joins the same iteration, as in vLLM V1), for
`seqs` sequences whose KV caches hold `context` tokens in total.

Three models:
    Roofline   flat up to a knee (memory-bound: the weights are read once per iteration),
               then linear in batch tokens (compute-bound), plus a term linear in the KV tokens
               read (attention is memory-bound in the context length).
    Tabulated  interpolated from measurements (decode by batch and context, prefill by tokens).
    TabulatedKV  (latency_kv.py) fitted to measured steps: the positions' cost by token count
               plus the KV cache's by tokens read; the `lrsim/data/latency/*.json` tables load
               as it where their points separate the two (load_measurements).
    Ideal      the theory's assumption: an iteration costs `unit` whatever the batch, up to the
               budget M positions (then ceil(tokens / M) units); no context term.
"""
from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lrcore.errors import UserError

from .roofline_time import roofline_time

H100_HBM_BYTES_PER_S = 3.35e12      # H100 SXM HBM3 bandwidth (NVIDIA datasheet)
H100_BF16_FLOPS = 989e12            # H100 SXM dense BF16 tensor-core peak (NVIDIA datasheet)


class LatencyModel:
    """Interface: seconds for one forward iteration."""

    def forward(self, decode_tokens: float, prefill_tokens: float, seqs: int, context: float) -> float:
        raise NotImplementedError

    def per_token(self) -> float:
        """Single-sequence decode time per token at short context (for c1/c2 ratios)."""
        return self.forward(1, 0, 1, 0.0)

    def scaled(self, factor: float) -> "LatencyModel":
        return Scaled(self, factor)


@dataclass(frozen=True)
class Roofline(LatencyModel):
    base_s: float                 # iteration time while memory-bound (weights read once)
    knee_tokens: float            # batch tokens where compute time reaches base_s
    per_token_s: float | None = None   # slope past the knee; None = base_s / knee_tokens (continuous)
    per_ctx_token_s: float = 0.0  # KV-cache read time per context token in the batch
    overhead_s: float = 0.0       # fixed per-iteration scheduling / launch overhead

    def __post_init__(self):
        if self.base_s <= 0 or self.knee_tokens <= 0:
            raise UserError(f"roofline latency: base_s and knee_tokens must be > 0, got "
                            f"{self.base_s}, {self.knee_tokens}")

    @property
    def terms(self) -> tuple[float, float, float, float]:
        """(overhead_s + base_s, knee_tokens, slope past the knee, per_ctx_token_s): what
        roofline_time reads, computed at the first read and kept (not a field, so not in the
        model's dataclass fields; frozen, so kept past __setattr__)."""
        t = self.__dict__.get("_terms")
        if t is None:
            slope = self.per_token_s if self.per_token_s is not None else self.base_s / self.knee_tokens
            t = (float(self.overhead_s + self.base_s), float(self.knee_tokens), float(slope),
                 float(self.per_ctx_token_s))
            object.__setattr__(self, "_terms", t)
        return t

    def forward(self, decode_tokens, prefill_tokens, seqs, context):
        return roofline_time(self.terms, decode_tokens, prefill_tokens, context)

    @classmethod
    def from_hardware(cls, params: float, bytes_per_param: float = 2.0, tp: int = 1,
                      hbm_bytes_per_s: float = H100_HBM_BYTES_PER_S,
                      flops: float = H100_BF16_FLOPS, kv_bytes_per_token: float = 0.0,
                      bandwidth_efficiency: float = 0.8, tp_efficiency: float = 0.9,
                      overhead_s: float = 0.0) -> "Roofline":
        """Memory floor = model bytes / (tp x HBM bandwidth x efficiency); compute = 2 params
        FLOPs per token; knee where they meet. tp_efficiency^(log2 tp) models all-reduce loss."""
        eff = bandwidth_efficiency * (tp_efficiency ** math.log2(tp) if tp > 1 else 1.0)
        base = params * bytes_per_param / (tp * hbm_bytes_per_s * eff)
        per_tok_compute = 2.0 * params / (tp * flops * eff)
        return cls(base_s=base, knee_tokens=base / per_tok_compute, per_token_s=per_tok_compute,
                   per_ctx_token_s=kv_bytes_per_token / (tp * hbm_bytes_per_s * eff),
                   overhead_s=overhead_s)


@dataclass(frozen=True)
class Ideal(LatencyModel):
    """Free batching up to `budget` positions per iteration (the paper's theory, arXiv 2506.19830
    Sec. 3.3: batched steps cost the same as one)."""
    unit: float = 1.0
    budget: float = math.inf

    def forward(self, decode_tokens, prefill_tokens, seqs, context):
        tokens = decode_tokens  # prefill is free under the theory's assumptions
        return self.unit * max(1, math.ceil(tokens / self.budget)) if tokens else self.unit


@dataclass(frozen=True)
class Scaled(LatencyModel):
    """`factor` x the inner model's time, except a fixed per-iteration part (`fixed_s`, e.g. the
    engine overhead, which more tensor-parallel devices do not shorten)."""
    inner: LatencyModel
    factor: float
    fixed_s: float = 0.0

    def forward(self, decode_tokens, prefill_tokens, seqs, context):
        t = self.inner.forward(decode_tokens, prefill_tokens, seqs, context)
        return self.fixed_s + self.factor * (t - self.fixed_s)


@dataclass
class Tabulated(LatencyModel):
    """Piecewise-linear interpolation of measured iteration times (seconds).

    decode: (batch tokens, context, seconds) points; prefill: (tokens, seconds) points. Between
    measured sizes time is interpolated linearly; past the last one it is extrapolated with the
    last segment's slope (never flat: compute grows). Context is interpolated the same way
    between the measured context lengths (mean context per sequence), clamped outside them.
    An iteration of n = decode + prefill tokens costs the decode curve at n while n is within
    the decode measurements (a chunked prefill of a few tokens rides along like extra decode
    tokens: the weights are read once), and the prefill curve at n beyond (large prefills),
    plus `overhead_s` per iteration (engine scheduling/sampling not in a kernel measurement)."""
    decode: list[tuple[float, float, float]]
    prefill: list[tuple[float, float]] = field(default_factory=list)
    name: str = "tabulated"
    overhead_s: float = 0.0

    def __post_init__(self):
        if not self.decode:
            raise UserError(f"{self.name}: tabulated latency needs at least one decode point")
        ctxs = sorted({c for _, c, _ in self.decode})
        self._ctxs = np.array(ctxs, dtype=float)
        self._curves = []
        for c in ctxs:
            by_batch: dict[float, list[float]] = {}
            for b, cc, t in self.decode:
                if cc == c:
                    by_batch.setdefault(b, []).append(t)
            pts = sorted((b, sum(ts) / len(ts)) for b, ts in by_batch.items())
            self._curves.append((np.array([p[0] for p in pts], float), np.array([p[1] for p in pts], float)))
        self._max_decode = max(b for b, _, _ in self.decode)
        pp = sorted(self.prefill)
        self._pre = (np.array([p[0] for p in pp], float), np.array([p[1] for p in pp], float))
        # the hot path: the same curves as plain floats (numpy on scalars costs ~12 us a call),
        # and the decode curves' values at each batch size seen (per-context cache)
        self._fcurves = [Curve(xs, ys) for xs, ys in self._curves]
        self._fctxs = tuple(float(c) for c in self._ctxs)
        self._ctx_ok = bool(np.all(np.isfinite(self._ctxs)))   # else numpy's own semantics
        self._fpre = Curve(*self._pre) if len(self._pre[0]) else None
        self._by_tokens: dict = {}

    @staticmethod
    def _interp(x, xs, ys):
        if len(xs) == 1:
            return float(ys[0]) * (x / xs[0] if xs[0] > 0 else 1.0)
        if x <= xs[-1]:
            return float(np.interp(x, xs, ys))
        slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        return float(ys[-1] + max(slope, 0.0) * (x - xs[-1]))

    def _decode(self, tokens, ctx):
        vals = self._by_tokens.get(tokens)
        if vals is None:
            if len(self._by_tokens) >= CACHE_MAX:
                self._by_tokens.clear()
            vals = self._by_tokens[tokens] = tuple(c(tokens) for c in self._fcurves)
        if len(vals) == 1:
            return vals[0]
        if not self._ctx_ok:
            return float(np.interp(ctx, self._ctxs, vals))
        return _np_interp(ctx, self._fctxs, vals)

    def forward(self, decode_tokens, prefill_tokens, seqs, context):
        n = decode_tokens + prefill_tokens
        if prefill_tokens and n > self._max_decode and self._fpre is not None:
            return self.overhead_s + self._fpre(n)
        return self.overhead_s + self._decode(max(n, 1), context / max(seqs, 1))


CACHE_MAX = 1 << 16      # batch sizes remembered per Tabulated (cleared when full)


def _np_interp(x, xs: tuple, ys: tuple) -> float:
    """float(np.interp(x, xs, ys)) for a scalar x and len(xs) >= 2, in plain Python with the
    same floating-point operations (numpy/_core/src/multiarray/compiled_base.c, arr_interp):
    clamped to ys[0] / ys[-1] outside xs, ys[j] at a knot, else slope * (x - xs[j]) + ys[j]
    with slope = (ys[j+1] - ys[j]) / (xs[j+1] - xs[j]) on the last j with xs[j] <= x."""
    x = float(x)
    if x != x:
        return x
    j = bisect_right(xs, x) - 1
    if j < 0:
        return ys[0]
    if j >= len(xs) - 1:
        return ys[-1]
    xj = xs[j]
    if xj == x:
        return ys[j]
    slope = (ys[j + 1] - ys[j]) / (xs[j + 1] - xj)
    r = slope * (x - xj) + ys[j]
    if r != r:                            # numpy: if nan one way, try the other
        r = slope * (x - xs[j + 1]) + ys[j + 1]
        if r != r and ys[j] == ys[j + 1]:
            r = ys[j]
    return r


class Curve:
    """Tabulated._interp(x, xs, ys) with the curve held as plain floats: the same values, bit for
    bit (numpy is used only where Python float arithmetic would raise: a zero-width last segment
    or non-finite measurements)."""

    __slots__ = ("xs", "ys", "one", "last", "top", "slope", "exact")

    def __init__(self, xs, ys):
        self.exact = (np.asarray(xs, float), np.asarray(ys, float))
        self.xs = tuple(float(x) for x in xs)
        self.ys = tuple(float(y) for y in ys)
        finite = bool(np.all(np.isfinite(xs)) and np.all(np.isfinite(ys)))
        self.one = len(xs) == 1
        self.last = self.xs[-1]
        self.top = self.ys[-1]
        if not finite or (not self.one and xs[-1] == xs[-2]):
            self.slope = None             # numpy's semantics, through the original code
        elif self.one:
            self.slope = 0.0
        else:
            self.slope = float(max((ys[-1] - ys[-2]) / (xs[-1] - xs[-2]), 0.0))

    def __call__(self, x) -> float:
        if self.slope is None:
            return Tabulated._interp(x, *self.exact)
        if self.one:
            x0 = self.last
            return self.top * (x / x0 if x0 > 0 else 1.0)
        if x <= self.last:
            return _np_interp(x, self.xs, self.ys)
        return self.top + self.slope * (x - self.last)


def load_measurements(path: str | Path) -> dict[str, LatencyModel]:
    """A latency-measurement file (lrcore/latency_file.py's format) -> {model name: its model}:
    TabulatedKV where the points separate the KV cache's cost (latency_kv.py), else Tabulated."""
    from lrcore import latency_file

    from .latency_kv import measured_model

    p = Path(path)
    out = {}
    for name, m in latency_file.load(p)["models"].items():
        dec, pre = latency_file.rows(p, name, m)
        # (batch, query positions per sequence, context per sequence, seconds)
        out[name] = measured_model([(b, q, c, ms / 1e3) for b, q, c, ms in dec],
                                   [(t, ms / 1e3) for t, ms in pre], name=f"{p.name}:{name}")
    return out

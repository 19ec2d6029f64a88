"""Fits of forward-pass latency: a roofline (or a table) from measured points.

Two kinds of evidence (docs/calibration.md):

1. Forward passes (`engine_stats.<engine>.forward_passes`, one per vLLM iteration): decode
   positions, prefill positions, duration; the context is estimated from the step spans that were
   running on that engine when the pass ended (`overheads.active_context`).
       duration = base + slope * max(0, decode - knee) + prefill_slope * prefill + ctx_slope * ctx
2. Step spans only (no engine stats): every draft/target generation span of the traces, with the
   number of spans of the same engine running concurrently (time-weighted over the span) as the
   batch. A span of n tokens costs one prefill of its uncached suffix and n iterations:
       duration = prefill_slope * prefill + n * (base + slope * max(0, batch - knee) + ctx_slope * ctx)

Given the knee both are linear in the non-negative parameters, so each knee candidate is one
bounded linear least-squares problem (scipy.optimize.lsq_linear); the knee with the smallest
squared error wins (the roofline's kink makes the knee itself non-smooth to optimise). The fit's
error on its own points is reported as RMSE (seconds) and MAPE.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lrcore.errors import UserError

from .models import FittedRoofline

MIN_POINTS = 3
KNEE_CANDIDATES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)


@dataclass
class Points:
    """Measured iterations (kind "passes") or generation spans (kind "spans")."""
    kind: str
    decode: np.ndarray       # passes: decode positions; spans: concurrent sequences (batch)
    prefill: np.ndarray      # prefill positions
    ctx: np.ndarray          # context tokens in the batch (spans: time-averaged)
    seconds: np.ndarray
    tokens: np.ndarray | None = None   # spans: tokens generated (iterations)

    def __len__(self) -> int:
        return len(self.seconds)


@dataclass
class FitReport:
    points: int
    rmse_s: float
    mape: float
    source: str
    knee_tokens: float

    def as_dict(self) -> dict:
        return {"points": self.points, "rmse_s": self.rmse_s, "mape": self.mape,
                "source": self.source}


def errors(pred: np.ndarray, meas: np.ndarray) -> tuple[float, float]:
    """(RMSE, MAPE) of predictions; MAPE over points with a positive measurement."""
    pred, meas = np.asarray(pred, float), np.asarray(meas, float)
    rmse = float(np.sqrt(np.mean((pred - meas) ** 2))) if len(meas) else float("nan")
    ok = meas > 0
    mape = float(np.mean(np.abs(pred[ok] - meas[ok]) / meas[ok])) if ok.any() else float("nan")
    return rmse, mape


def _design(p: Points, knee: float, use_ctx: bool) -> np.ndarray:
    """Columns: base, slope, prefill slope, ctx slope (multiplied by iterations for spans)."""
    over = np.maximum(0.0, p.decode - knee)
    if p.kind == "passes":
        iters = np.ones(len(p))
        cols = [iters, over, p.prefill, p.ctx if use_ctx else np.zeros(len(p))]
    else:
        iters = p.tokens
        cols = [iters, iters * over, p.prefill, iters * p.ctx if use_ctx else np.zeros(len(p))]
    return np.column_stack(cols)


def fit_roofline(p: Points, source: str = "", use_ctx: bool = True,
                 knees: tuple[float, ...] | None = None) -> tuple[FittedRoofline, FitReport]:
    """Least-squares roofline through the points (all parameters >= 0, base > 0)."""
    from scipy.optimize import lsq_linear

    if len(p) < MIN_POINTS:
        raise UserError(f"latency fit ({source or p.kind}): need at least {MIN_POINTS} measured "
                        f"points, got {len(p)} (record longer traces or run `lr calibrate measure`)")
    max_b = float(np.max(p.decode)) if len(p) else 1.0
    cands = [k for k in (knees or KNEE_CANDIDATES) if k <= max(1.0, max_b)] or [1.0]
    # scale columns so that the solver sees O(1) numbers whatever the units
    best = None
    for knee in cands:
        A = _design(p, knee, use_ctx and bool(np.any(p.ctx > 0)))
        scale = np.where(np.abs(A).max(axis=0) > 0, np.abs(A).max(axis=0), 1.0)
        res = lsq_linear(A / scale, p.seconds, bounds=(0.0, np.inf), method="bvls")
        x = res.x / scale
        sse = float(np.sum((A @ x - p.seconds) ** 2))
        if best is None or sse < best[0] - 1e-15:
            best = (sse, knee, x, A)
    _, knee, x, A = best
    base = max(float(x[0]), 1e-9)
    model = FittedRoofline(base_s=base, knee_tokens=float(knee), per_token_s=float(x[1]),
                           prefill_per_token_s=float(x[2]), per_ctx_token_s=float(x[3]))
    rmse, mape = errors(A @ x, p.seconds)
    return model, FitReport(len(p), rmse, mape, source or p.kind, float(knee))


def predict(model, p: Points) -> np.ndarray:
    """What a LatencyModel says for each point (spans: prefill pass + `tokens` decode passes)."""
    out = []
    for i in range(len(p)):
        if p.kind == "passes":
            out.append(model.forward(p.decode[i], p.prefill[i], max(1, int(p.decode[i])), p.ctx[i]))
        else:
            b = max(1.0, float(p.decode[i]))
            step = model.forward(b, 0, b, p.ctx[i])        # one iteration at batch b
            pre = (model.forward(0, p.prefill[i], 1, 0.0) - model.forward(0, 0, 1, 0.0)
                   if p.prefill[i] else 0.0)
            out.append(pre + p.tokens[i] * step)
    return np.asarray(out, float)


def table_from_passes(p: Points, ctx_bins: int = 1) -> dict:
    """A Tabulated latency doc: mean decode-only pass time per batch size (one context column:
    the mean), and prefill time per prefill chunk size (binned on a log scale)."""
    if p.kind != "passes":
        raise UserError("a latency table needs forward passes (engine_stats); use the roofline fit")
    dec = p.prefill == 0
    rows = []
    for b in sorted(set(p.decode[dec].astype(int))):
        sel = dec & (p.decode == b)
        rows.append([float(b), float(np.mean(p.ctx[sel]) / max(b, 1)), float(np.mean(p.seconds[sel]) * 1e3)])
    pre = []
    pf = p.prefill > 0
    if pf.any():
        edges = np.unique(np.geomspace(1, max(2.0, p.prefill[pf].max() + 1), 8).astype(int))
        idx = np.digitize(p.prefill[pf], edges)
        for k in sorted(set(idx)):
            sel = idx == k
            pre.append([float(np.mean(p.prefill[pf][sel])), float(np.mean(p.seconds[pf][sel]) * 1e3)])
    if not rows:
        raise UserError("latency table: no decode-only forward pass in the traces")
    # one context column: Tabulated interpolates between contexts, so give every row the mean
    mean_ctx = float(np.mean([r[1] for r in rows]))
    return {"kind": "table", "decode": [[r[0], mean_ctx, r[2]] for r in rows], "prefill": pre}

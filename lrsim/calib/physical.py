"""One physical latency model per engine, shared by every mode (docs/calibration.md).

A forward pass of an engine costs what the hardware does, whatever mode asked for it:

    t = f_dec * (w + c * C) + f_pre * (p * (P + (q - 1)+) + L * (q - 1)+ + s * (B - 1)+)  (alone)
    t_busy = t * (1 + beta)                                        (the other engine busy)

    q     decode positions in the pass (sequences in the batch, plus SD verification positions)
    B     sequences in the pass (decoding or prefilling)
    P     prefill positions (prompts, and the uncached suffix an LR step re-reads)
    C     context: tokens held in the KV cache of the batch (vLLM `kv_tokens`, else estimated)
    w     one decode pass of one sequence: reading the weights once (memory-bound)
    p     the compute of one more query token, prefill or decode (the matrix multiplications)
    L     the logits of one more decode position (the vocabulary projection a prefill token
          does not need): a decode position costs a = p + L >= p, so when the traces cannot
          separate L (few multi-position passes) a falls back to p, never to 0
    s     each sequence beyond the first (per-request work: attention metadata, sampling),
          which an SD verification pass (one sequence, several positions) does not pay: without
          it, a batch of two LR requests priced the extra position of every SD verification
    c     each context token (KV read)
    beta  fractional slowdown while the other engine runs a pass (memory bandwidth and caches
          shared by the cores); fitted on the fraction o of the pass the other engine was busy:
          t = t_alone * (1 + beta * o)
    f_dec, f_pre  the record's machine speed: its probe's decode / prefill time over the
          profile's reference probe (lrreal/probe.py); 1 when the traces carry no probe

Fitted by bounded non-linear least squares on relative residuals (scipy.optimize.least_squares,
soft-L1 loss so that a pass stalled by the OS does not pull the fit), with standard errors from
the Jacobian at the optimum. A parameter that the data cannot separate from the others (its
standard error larger than half its value, or no pass exercises it) is fixed to 0 and named in
`fit.fixed`: no parameter is reported with a value the data do not support, and the weight read
`w` is never allowed to vanish (at least 1% of the mean decode pass).

The model is linear in the decode positions; a CPU's matrix kernels are not (they tile the
rows), and SD verification is where it shows: several positions of one sequence. Where the
passes cover two or more counts of verification positions v = q - B (0 for plain decoding),
`position_factors` records, at every v with at least MIN_KNOT_PASSES decode-only passes, the
measured time over the model's (sum over sum); the simulator multiplies the decode part of a
pass by them, interpolated in v and held at the ends (lrsim/calib/models.py). Keyed on v, not
on q: a batch of plain decodes keeps the line's slope per sequence, which is what a plan at
higher load extrapolates (keyed on q, a factor measured on speculative batches at 2 in flight
priced AR's batches at 4 and 8 in flight too).

Some CPUs' kernels are not even monotone in the sequences of a plain decode pass: on the AMD EPYC
of family 25 model 17 a pass of 3-6 sequences took less time than one of 1 or 2
(benchmarks/results/batch_curve.md), which no line follows. With `batch_factors` (opt-in,
`lr calibrate --batch-factors`), the fit records at every batch size B with at least
MIN_KNOT_PASSES plain decode passes (v = 0) the measured time over the line's, and the simulator
multiplies the decode part of a plain decode pass of B sequences by it, interpolated in B; beyond
the largest B measured the correction is held as a time, not a ratio: the largest measured
batch's time plus the line's increment from there (the line's slope per sequence is what it knows
past the data). The position factors are then measured against the line so corrected.
Traces hold the batches their load reached (at 1-2 requests in flight, up to a few sequences);
a measured curve (`lr calibrate measure --batch-sizes 1,...,24`, given as `lr calibrate
--target-batch-curve/--draft-batch-curve`) gives the factors instead, at every batch size it
measured, as its shape (smoothed, monotone) relative to the batch sizes the traces measured
(curve_batch_knots): the traces keep the level and every other term.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lrcore.errors import UserError
from lrcore.intervals import covered_fraction

# internal parameter order; the profile stores per_token_s = p + L (the simulator's slope per
# extra decode position), prefill_per_token_s = p and per_seq_s = s (lrsim/calib/models.py)
PARAMS = ("base_s", "logits_per_position_s", "per_ctx_token_s", "prefill_per_token_s", "contention",
          "per_seq_s")
MIN_PASSES = 8
SE_LIMIT = 0.5            # a parameter with SE > 50% of its value is not identified: fixed to 0
MIN_KNOT_PASSES = 50      # decode-only passes of one size before its measured factor is kept


@dataclass
class PassData:
    """Every forward pass of one engine role, with its features (arrays of equal length)."""
    q: np.ndarray          # decode positions
    B: np.ndarray          # sequences in the pass
    P: np.ndarray          # prefill positions
    C: np.ndarray          # context tokens
    o: np.ndarray          # fraction of the pass the other engine was busy (0..1)
    f_dec: np.ndarray      # machine speed factor for decode terms
    f_pre: np.ndarray      # machine speed factor for prefill terms
    t: np.ndarray          # measured seconds
    config: np.ndarray     # configuration label of the record (diagnostics)

    def __len__(self) -> int:
        return len(self.t)

    def select(self, mask) -> "PassData":
        return PassData(*(getattr(self, k)[mask] for k in self.__dataclass_fields__))


def _intervals(rec: dict, engine: str) -> list[tuple[float, float]]:
    fp = ((rec.get("engine_stats") or {}).get(engine) or {}).get("forward_passes") or []
    return [(float(p.get("start", 0.0)), float(p.get("start", 0.0)) + float(p["duration_s"]))
            for p in fp]


# speed_factors' reading of a probe side that timed no plain decode pass (below): off by default,
# so every committed profile and result stays what it was until they are all rerun with it
# (benchmarks/bench_load.py --probe-decode-fallback turns it on)
PROBE_DECODE_FALLBACK = False


def speed_factors(rec: dict, engine: str, ref: dict | None, which: str = "both") -> tuple[float, float]:
    """(f_dec, f_pre) of a record for `engine`: its probe over the reference probe.
    which = "before" (known before the run: what a prediction may use), "both" (mean of the
    probes before and after: the best estimate of the speed during the record), "none".
    A side whose alone decode timed no plain pass (`decode_s` None: on an SD engine the n-gram
    proposer can match the probe's own output, so every pass verifies; lrreal/engine.probe) is
    read, with PROBE_DECODE_FALLBACK, from its side-by-side decode pass over the reference's
    (`contended_decode_s`, the same pass beside the draft), else from its prefill; without it
    (the default) or where neither was timed, from the other side, else at the reference speed
    (1.0)."""
    if not ref or which == "none":
        return 1.0, 1.0
    from .rescale import MIN_BESIDE_PASSES

    probe = record_probe(rec)
    sides = ["before"] if which == "before" else ["before", "after"]
    r = ref.get(engine) or {}
    dec, pre, guess = [], [], []    # seconds of the sides' probes; ratios read where dec is missing
    for side in sides:
        e = ((probe.get(side) or {}).get("engines") or {}).get(engine) or {}
        if e.get("decode_s"):
            dec.append(float(e["decode_s"]))
        elif PROBE_DECODE_FALLBACK:
            if e.get("contended_decode_s") and r.get("contended_decode_s") \
                    and e.get("contended_passes", MIN_BESIDE_PASSES) >= MIN_BESIDE_PASSES:
                guess.append(float(e["contended_decode_s"]) / r["contended_decode_s"])
            elif e.get("prefill_s") and r.get("prefill_s"):
                guess.append(float(e["prefill_s"]) / r["prefill_s"])
        if e.get("prefill_s"):
            pre.append(float(e["prefill_s"]))
    if r.get("decode_s") and (dec or guess):
        f_dec = float(np.mean([d / r["decode_s"] for d in dec] + guess)) if guess else \
            float(np.mean(dec)) / r["decode_s"]       # the sides' seconds over the reference's
    else:
        f_dec = 1.0
    f_pre = float(np.mean(pre)) / r["prefill_s"] if pre and r.get("prefill_s") else f_dec
    return f_dec, f_pre


def record_probe(rec: dict) -> dict:
    """The probes a record ran at: its own (before and after it), else its run's probe of the idle
    engines before the first request, for both sides ({} without either). Records run beside
    others (a load level above 1) have no probe of their own; the fit prices their passes at the
    run's probe, as the replay does (benchmarks/load_replay.block_probe), not at the reference."""
    if rec.get("probe"):
        return rec["probe"]
    p = (rec.get("run") or {}).get("probe_at_start")
    return {"before": p, "after": p} if p else {}


def _distinct_probes(records: list[dict]):
    """Every probe the records ran at, once (a run's start probe is shared by its records)."""
    seen = set()
    for rec in records:
        probe = record_probe(rec)
        for pr in (probe.get("before"), probe.get("after")):
            key = (pr or {}).get("t", id(pr))
            if pr and key not in seen:
                seen.add(key)
                yield pr


def reference_probe(records: list[dict]) -> dict | None:
    """Median probe of every engine over the records' probes before and after each (the profile's
    reference speed; a probe shared by several records counts once for each), and where the
    probes ran side by side (lrreal/probe.side_by_side) the decode pass beside the other engine
    and `contention`, the median of each distinct probe's own c, each probe once
    (rescale.probe_contention: the reference of rescale.contention_scales; counted per record, a
    block of 8 requests would weigh its one probe 8 times, and a single probe's c is noisy:
    docs/load.md, "One sitting with side-by-side probes"). Equal-resources records are left out:
    their probe times a target on every core (its decode pass ~0.6x the split machine's, its c
    meaningless)."""
    from .equal import is_equal_resources
    from .rescale import probe_contention

    split = [rec for rec in records if not is_equal_resources(rec)]
    vals: dict[str, dict[str, list[float]]] = {}
    for pr in (record_probe(rec).get(side) for rec in split for side in ("before", "after")):
        for eng, e in ((pr or {}).get("engines") or {}).items():
            for k in ("decode_s", "prefill_s", "contended_decode_s"):
                if e.get(k):
                    vals.setdefault(eng, {}).setdefault(k, []).append(float(e[k]))
    for pr in _distinct_probes(split):
        for eng, e in (pr.get("engines") or {}).items():
            c = probe_contention(e)      # per probe: its own alone and beside passes, paired
            if c is not None:
                vals.setdefault(eng, {}).setdefault("contention", []).append(c)
    if not vals:
        return None
    return {eng: {k: float(np.median(v)) for k, v in d.items()} | {"n": len(d.get("decode_s", []))}
            for eng, d in sorted(vals.items())}


def config_label(rec: dict) -> str:
    """A record's configuration: the corpus label, else mode + tree shape + verifier."""
    flags = (rec.get("run") or {}).get("flags") or {}
    for key in ("corpus_config", "load_config"):   # lrreal/corpus.py, lrreal/load_corpus.py
        if isinstance(flags.get(key), str):
            return flags[key]
    mode = rec.get("mode", "?")
    if mode in ("ar", "sd"):
        return mode
    v = (rec.get("run") or {}).get("verifier") or {}
    ver = str(flags.get("verifier", v.get("method", "exact")))
    if mode == "accept":   # the acceptance protocol has no tree: only its verifier tells runs apart
        return "accept" + ("" if ver == "exact" else f"-{ver.split(':')[0][:3]}")
    w = flags.get("width", 1)
    return f"{mode}-d{flags.get('depth', '?')}" + (f"-w{w}" if w not in (1, None) else "") + \
        ("" if ver == "exact" else f"-{ver.split(':')[0][:3]}")


def pass_data(records: list[dict], engine: str, ref: dict | None, probe: str = "both",
              probes: bool = True) -> PassData:
    from .overheads import _active_ctx, spans

    peer = "draft" if engine == "target" else "target"
    cols: dict[str, list] = {k: [] for k in PassData.__dataclass_fields__}
    for rec in records:
        fp = ((rec.get("engine_stats") or {}).get(engine) or {}).get("forward_passes")
        if not fp:
            continue
        mine = _intervals(rec, engine)
        ov = covered_fraction(mine, _intervals(rec, peer))
        f_dec, f_pre = speed_factors(rec, engine, ref, probe)
        sp = None
        label = config_label(rec)
        for p, o in zip(fp, ov):
            ptok = int(p.get("prefill_tokens", 0))
            ctx = p.get("kv_tokens")
            if not ctx:  # 0: the pass's finished requests had freed their blocks when it was read
                sp = sp if sp is not None else spans(rec)
                ctx = _active_ctx(sp, engine, float(p.get("start", 0.0)) + float(p["duration_s"]))
            cols["q"].append(max(0, int(p.get("tokens_scheduled", 0)) - ptok))
            cols["B"].append(max(1, int(p.get("batch_size", 1))))
            cols["P"].append(ptok)
            cols["C"].append(float(ctx))
            cols["o"].append(o)
            cols["f_dec"].append(f_dec)
            cols["f_pre"].append(f_pre)
            cols["t"].append(float(p["duration_s"]))
            cols["config"].append(label)
    if probes:
        _probe_passes(records, engine, ref, cols)
    arr = {k: np.asarray(v, dtype=object if k == "config" else float) for k, v in cols.items()}
    return PassData(**arr)


def _probe_passes(records: list[dict], engine: str, ref: dict | None, cols: dict) -> None:
    """The probes as passes run with the other engine idle (o = 0): they pin the alone speed,
    which a draft that only ever runs beside a busy target would otherwise not show."""
    for pr in _distinct_probes(records):
        e = (pr.get("engines") or {}).get(engine) or {}
        if not e.get("decode_s"):
            continue
        r = (ref or {}).get(engine) or {}
        f_dec = e["decode_s"] / r["decode_s"] if r.get("decode_s") else 1.0
        f_pre = (e["prefill_s"] / r["prefill_s"] if r.get("prefill_s") and e.get("prefill_s")
                 else f_dec)
        n = int(e.get("prefill_tokens", 32))
        rows = [(1, 0, n, e["decode_s"])]
        if e.get("prefill_s"):
            rows.append((0, n, n, e["prefill_s"]))
        for q, P, C, t in rows:
            for k, v in (("q", q), ("B", 1), ("P", P), ("C", C), ("o", 0.0), ("f_dec", f_dec),
                         ("f_pre", f_pre), ("t", t), ("config", "probe")):
                cols[k].append(v)


def predict(x: np.ndarray, d: PassData, knots: list | None = None,
            batch_knots: list | None = None) -> np.ndarray:
    """Seconds of every pass; `knots` (position_factors, in v) and `batch_knots` (batch_factors,
    in B) scale the decode part, as the simulator does (models.FittedRoofline)."""
    w, L, c, p, beta, s = x
    extra = np.maximum(0.0, d.q - 1)
    decode = d.f_dec * (w + c * d.C) + d.f_pre * ((p + L) * extra + s * np.maximum(0.0, d.B - 1))
    if batch_knots:   # plain decode passes only (v = 0, no prefill), where they were measured
        bs, fs = zip(*batch_knots)
        at_max = d.f_dec * (w + c * d.C) + d.f_pre * (p + L + s) * (bs[-1] - 1)   # the line at bs[-1]
        held = np.where(d.B > bs[-1], decode - (1.0 - fs[-1]) * at_max, decode * np.interp(d.B, bs, fs))
        decode = np.where((verify_positions(d) == 0) & (d.P == 0), held, decode)
    if knots:
        vs, fs = zip(*knots)
        decode = decode * np.interp(verify_positions(d), vs, fs)
    return (decode + d.f_pre * p * d.P) * (1.0 + beta * d.o)


def _solve(d: PassData, free: list[int], x0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from scipy.optimize import least_squares

    scale = np.array([max(x0[0], 1e-3), max(x0[0], 1e-3) / 40, max(x0[0], 1e-3) / 1000,
                      max(x0[0], 1e-3) / 10, 0.2, max(x0[0], 1e-3) / 40])

    def full(z):
        x = np.zeros(len(PARAMS))
        x[free] = z * scale[free]
        return x

    def resid(z):
        return (predict(full(z), d) - d.t) / d.t

    lo = np.zeros(len(free))
    if 0 in free:  # the weight read never vanishes: at least 1% of the mean decode-only pass
        dec = d.t[(d.P == 0)]
        lo[free.index(0)] = 0.01 * (dec.mean() if len(dec) else d.t.mean()) / scale[0]
    z0 = np.maximum(x0[free] / scale[free], lo + 1e-9)
    res = least_squares(resid, z0, bounds=(lo, np.inf), loss="soft_l1", f_scale=0.05)
    x = full(res.x)
    # covariance of the scaled parameters from the Jacobian (Gauss-Newton), residual variance
    J = res.jac
    dof = max(1, len(d) - len(free))
    s2 = float(np.sum(res.fun ** 2) / dof)
    try:
        cov = np.linalg.pinv(J.T @ J) * s2
        se = np.zeros(len(PARAMS))
        se[free] = np.sqrt(np.maximum(np.diag(cov), 0.0)) * scale[free]
    except np.linalg.LinAlgError:
        se = np.full(len(PARAMS), np.inf)
    return x, se


def fit_physical(d: PassData, engine: str = "engine", batch_factors: bool = False,
                 batch_curve: tuple[str, list] | None = None, smooth: bool = True) -> dict:
    """The profile's `latency.<engine>` entry: kind roofline (+ contention), with error bars;
    `batch_factors`: the measured correction per batch size too (module docstring);
    `batch_curve`: (its name, its plain decode points (B, context per sequence, seconds)), a
    measured curve (`lr calibrate measure`) that gives the line its shape in B instead
    (curve_batch_knots; `smooth` False: its points as measured, not smooth_curve's fit)."""
    if len(d) < MIN_PASSES:
        raise UserError(f"latency fit ({engine}): need at least {MIN_PASSES} forward passes, got "
                        f"{len(d)} (record longer traces or run `lr calibrate measure`)")
    fixed: dict[str, str] = {}
    free = [0]
    if np.any(d.q > d.B):   # several positions of one sequence: SD verification
        free.append(1)
    else:  # batches alone cannot tell L from s (both grow with q - 1 = B - 1): s carries it
        fixed["logits_per_position_s"] = ("no pass verified several positions of one sequence"
                                          if np.any(d.q > 1) else "no pass had more than one decode position")
    if np.ptp(d.C) > 0:
        free.append(2)
    else:
        fixed["per_ctx_token_s"] = "every pass read the same context"
    if np.any(d.P > 0) or np.any(d.q > 1):
        free.append(3)
    else:
        fixed["prefill_per_token_s"] = "no prefill pass"
    if np.any(d.o > 0.25):
        free.append(4)
    else:
        fixed["contention"] = "the other engine never ran during a pass"
    if np.any(d.B > 1):
        free.append(5)
    else:
        fixed["per_seq_s"] = "no pass had more than one sequence"
    dec = d.t[d.P == 0]
    x0 = np.array([float(np.median(dec)) if len(dec) else float(np.median(d.t)), 0.0, 0.0, 0.0, 0.0, 0.0])
    x0[1], x0[2], x0[3], x0[4], x0[5] = x0[0] / 40, 1e-6, x0[0] / 20, 0.1, x0[0] / 40
    while True:
        x, se = _solve(d, free, x0)
        weak = [i for i in free[1:] if not (x[i] > 0 and se[i] <= SE_LIMIT * x[i])]
        if not weak:
            break
        # drop the least supported parameter and refit
        i = max(weak, key=lambda i: se[i] / x[i] if x[i] > 0 else np.inf)
        free.remove(i)
        fixed[PARAMS[i]] = ("not identified by these traces: " +
                            (f"fitted {x[i]:.3g} +/- {se[i]:.2g}" if x[i] > 0 else "fitted 0"))
        x[i] = se[i] = 0.0
    linear = predict(x, d)
    bknots = (curve_batch_knots(x, batch_curve[1], batch_curve[0], plain_sizes(d), smooth) if batch_curve
              else batch_factor_knots(d, linear) if batch_factors else [])
    if batch_curve and not bknots:
        raise UserError(f"{batch_curve[0]}: no context with plain decode points at two batch sizes "
                        "(lr calibrate measure --batch-sizes 1,2,4,... at one --context)")
    knots = position_factors(d, predict(x, d, None, bknots))
    pred = predict(x, d, knots, bknots)
    rel = np.abs(pred - d.t) / d.t
    by_cfg = {}
    for label in sorted(set(d.config)):
        m = d.config == label
        by_cfg[label] = {"passes": int(m.sum()), "mape": float(rel[m].mean()),
                         "sum_diff_pct": _diff_pct(pred[m], d.t[m]),
                         "linear_sum_diff_pct": _diff_pct(linear[m], d.t[m])}
    entry = {"kind": "roofline", "base_s": float(x[0]), "knee_tokens": 1.0,
             "per_token_s": float(x[3] + x[1]), "prefill_per_token_s": float(x[3]),
             "per_ctx_token_s": float(x[2]), "contention": float(x[4]), "per_seq_s": float(x[5])}
    if knots:
        entry["position_factors"] = knots
    if bknots:
        entry["batch_factors"] = bknots
    stderr = {PARAMS[i]: float(se[i]) for i in range(len(PARAMS)) if PARAMS[i] not in fixed}
    if "prefill_per_token_s" in stderr:   # a = p + L (covariance ignored: an upper bound)
        stderr["per_token_s"] = float(np.hypot(se[3], se[1]))
    entry["fit"] = {
        "points": int(len(d)), "source": f"{engine} forward passes (physical model)",
        "rmse_s": float(np.sqrt(np.mean((pred - d.t) ** 2))), "mape": float(rel.mean()),
        "sum_diff_pct": _diff_pct(pred, d.t), "linear_sum_diff_pct": _diff_pct(linear, d.t),
        "stderr": stderr, "logits_per_position_s": float(x[1]),
        **({"batch_factors_from": batch_curve[0]} if batch_curve and bknots else {}),
        "fixed": fixed, "by_config": by_cfg,
        # sequences per pass: past the largest, a plan prices passes these traces never held
        # (ProfileSource.beyond_measured says so under `lr plan`'s tables)
        "ranges": {"sequences": [float(d.B.min()), float(d.B.max())],
                   "decode_positions": [float(d.q.min()), float(d.q.max())],
                   "prefill_tokens": [float(d.P.min()), float(d.P.max())],
                   "context_tokens": [float(d.C.min()), float(d.C.max())],
                   "busy_overlap_passes": int((d.o > 0.25).sum())},
    }
    return entry


def price(entry: dict, d: PassData) -> np.ndarray:
    """Seconds of every pass of `d` as a profile's `latency.<engine>` entry (fit_physical's
    output) prices them: a fitted model applied to passes it was not fitted on."""
    x = np.array([entry["base_s"], entry["fit"]["logits_per_position_s"], entry["per_ctx_token_s"],
                  entry["prefill_per_token_s"], entry["contention"], entry["per_seq_s"]])
    return predict(x, d, entry.get("position_factors"), entry.get("batch_factors"))


def _diff_pct(pred: np.ndarray, t: np.ndarray) -> float:
    return float(100 * (pred.sum() - t.sum()) / t.sum())


def verify_positions(d: PassData) -> np.ndarray:
    """Decode positions beyond one per sequence: SD verification (0 for plain decoding)."""
    return np.maximum(0.0, d.q - d.B)


def position_factors(d: PassData, pred: np.ndarray) -> list[list[float]]:
    """[[v, measured / modelled], ...] at every count v of verification positions with at least
    MIN_KNOT_PASSES decode-only passes (sum of times over sum of predictions: what a throughput
    prediction adds up); [] unless two or more counts qualify (one is no shape: the soft-L1
    fit's level is left as fitted)."""
    out = []
    dec = (d.P == 0) & (d.q >= 1)
    v = verify_positions(d)
    for k in sorted({int(x) for x in v[dec]}):
        m = dec & (v == k)
        if m.sum() >= MIN_KNOT_PASSES:
            out.append([float(k), round(float(d.t[m].sum() / pred[m].sum()), 4)])
    return out if len(out) >= 2 else []


def smooth_curve(row: dict[float, float]) -> dict[float, float]:
    """A measured curve's times {B: seconds} at one context, smoothed by a least-squares fit of
    t = a + b (B - 1)^g (relative residuals; g in 0.3-1.5: concave below 1, the line at 1): each
    point is the median of a few passes (`lr calibrate measure` decodes 8 tokens per batch), and
    one slow point, the one-sequence pass most of all, would otherwise move every factor. Fewer
    than four sizes: as measured."""
    from scipy.optimize import curve_fit

    if len(row) < 4:
        return row
    B = np.array(sorted(row))
    t = np.array([row[b] for b in B])

    def f(b, a, k, g):
        return a + k * np.maximum(b - 1.0, 0.0) ** g

    try:
        par, _ = curve_fit(f, B, t, p0=[t[0], max((t[-1] - t[0]) / max(B[-1] - 1, 1), 1e-6), 1.0],
                           sigma=t, bounds=([1e-9, 0.0, 0.3], [np.inf, np.inf, 1.5]))
    except RuntimeError:          # no convergence: the points as measured
        return row
    return {float(b): float(v) for b, v in zip(B, f(B, *par))}


def plain_decode(d: PassData) -> np.ndarray:
    """The plain decode passes: one position per sequence, no prefill (what batch factors price)."""
    return (d.P == 0) & (d.q >= 1) & (verify_positions(d) == 0)


def plain_sizes(d: PassData) -> set[float]:
    """The batch sizes B with at least MIN_KNOT_PASSES plain decode passes: where the fitted line
    stands on measured passes of that size."""
    sizes, counts = np.unique(d.B[plain_decode(d)], return_counts=True)
    return {float(b) for b, n in zip(sizes, counts) if n >= MIN_KNOT_PASSES}


def batch_factor_knots(d: PassData, pred: np.ndarray) -> list[list[float]]:
    """[[B, measured / modelled], ...] at every batch size B with at least MIN_KNOT_PASSES plain
    decode passes (one position per sequence, no prefill; sum over sum, as position_factors);
    [] unless two or more sizes qualify."""
    out = []
    plain = plain_decode(d)
    for b in sorted({int(x) for x in d.B[plain]}):
        m = plain & (d.B == b)
        if m.sum() >= MIN_KNOT_PASSES:
            out.append([float(b), round(float(d.t[m].sum() / pred[m].sum()), 4)])
    return out if len(out) >= 2 else []


def curve_batch_knots(x: np.ndarray, points: list, name: str = "curve",
                      anchor: set | None = None, smooth: bool = True) -> list[list[float]]:
    """[[B, factor], ...] from a measured batch curve's plain decode points (B, context per
    sequence, seconds): at each context, the curve (smoothed: smooth_curve) over the line at every B, divided by
    the mean of that ratio over the `anchor` batch sizes (those the traces measured, where the
    line was fitted; default, and where the curve has none of them: one sequence). So the curve
    gives the shape, the traces the level, and the speed of the machine when the curve was
    measured drops out; a B measured at several contexts gets their mean. Traces where few
    requests ran at once hold small batches only, and a line fitted there extrapolates their
    slope (on the Intel Xeon family 6 model 207 a pass's time per added sequence falls past 4:
    docs/load.md, "What the line charges a larger batch"); a curve of 1 to 24 sequences
    measures it. `smooth` False keeps the points as measured: a CPU whose pass of three to six
    sequences beats one of one or two (docs/load.md, "A fourth CPU") has a curve that dips, which
    smooth_curve's rising fit cannot follow. [] unless two sizes; a one-line UserError if no
    context has an anchor point."""
    w, L, c, p, _beta, s = x
    by_ctx: dict[float, dict[float, float]] = {}
    for b, ctx, sec in points:
        by_ctx.setdefault(float(ctx), {})[float(b)] = float(sec)
    per_b: dict[float, list[float]] = {}
    for ctx, row in by_ctx.items():
        row = smooth_curve(row) if smooth else row
        ratio = {b: sec / (w + c * b * ctx + (p + L + s) * (b - 1)) for b, sec in row.items()}
        at = [ratio[b] for b in sorted(anchor or ()) if b in ratio] or (
            [ratio[1.0]] if 1.0 in ratio else [])
        if not at:
            continue
        level = float(np.mean(at))
        for b, r in ratio.items():
            per_b.setdefault(b, []).append(r / level)
    if not per_b:
        raise UserError(f"{name}: no plain decode point of one sequence or of a batch size the traces "
                        "measured (--batch-sizes must include 1)")
    out = [[b, round(float(np.mean(f)), 4)] for b, f in sorted(per_b.items())]
    return out if len(out) >= 2 else []

"""The latency model of a calibrated profile.

`FittedRoofline` is the simulator's Roofline (lrsim/sim/latency.py) with one more term: prefill
positions get their own per-token slope. On a CPU or a small batch a prefill token is not a decode
token: a decode iteration is dominated by reading the weights once (`base_s`), a prefill chunk by
its matrix multiplications (~ per token). One slope for both would misprice every LR step, whose
target request re-reads the draft's step as an uncached prefill suffix.

    t = overhead_s + base_s + per_token_s * max(0, decode_tokens - knee_tokens)
        + prefill_per_token_s * prefill_tokens + per_ctx_token_s * context
        + per_seq_s * max(0, seqs - 1)

per_seq_s: the work of each sequence beyond the first (docs/calibration.md, physical model); an
SD verification pass (one sequence, k2 positions) pays per_token_s per extra position only.

position_factors: ((v, factor), ...) measured at the counts of verification positions v =
decode_tokens - seqs (SD: several positions of one sequence; 0 for plain decoding) the traces had
(physical.position_factors): every term but prefill and overhead is multiplied by the factor at
the pass's v, interpolated linearly between those counts and held beyond the first and last (a
CPU's matrix kernels tile the rows, so an SD verification's cost is not linear in its positions;
a count never measured gets its neighbours' correction, not an extrapolated one).

batch_factors: ((B, factor), ...) the same for plain decode passes (v = 0), keyed on their
sequences (physical.batch_factor_knots; opt-in, `lr calibrate --batch-factors`): on a CPU whose
pass of 3-6 sequences is faster than one of 1 or 2 (no line follows that). Past the largest B the
correction is held as a time: that batch's corrected time plus the line's increment.
"""
from __future__ import annotations

from dataclasses import dataclass

from lrcore.errors import UserError

from ..sim.latency import LatencyModel, _np_interp


@dataclass(frozen=True)
class FittedRoofline(LatencyModel):
    base_s: float                   # memory-bound iteration time (weights read once)
    knee_tokens: float = 1.0        # decode positions covered by base_s
    per_token_s: float = 0.0        # slope past the knee (compute-bound / per-sequence work)
    prefill_per_token_s: float = 0.0
    per_ctx_token_s: float = 0.0    # KV read per context token in the batch
    overhead_s: float = 0.0         # fixed per-iteration scheduling cost
    per_seq_s: float = 0.0          # each sequence beyond the first (per-request work)
    position_factors: tuple = ()    # ((v, measured / linear), ...) ascending v; () = linear
    batch_factors: tuple = ()       # ((B, measured / linear), ...) ascending B; () = linear

    def __post_init__(self):
        if not self.base_s > 0 or not self.knee_tokens > 0:
            raise UserError(f"fitted roofline: base_s and knee_tokens must be > 0, got "
                            f"{self.base_s}, {self.knee_tokens}")
        for k in ("per_token_s", "prefill_per_token_s", "per_ctx_token_s", "overhead_s", "per_seq_s"):
            if getattr(self, k) < 0:
                raise UserError(f"fitted roofline: {k} must be >= 0, got {getattr(self, k)}")
        knots = tuple((float(v), float(f)) for v, f in self.position_factors)
        if any(f <= 0 for _, f in knots) or any(a[0] >= b[0] for a, b in zip(knots, knots[1:])):
            raise UserError("fitted roofline: position_factors must be [v, factor > 0] pairs in "
                            f"increasing v, got {list(self.position_factors)}")
        object.__setattr__(self, "position_factors", knots)
        object.__setattr__(self, "_knots", tuple(zip(*knots)) if len(knots) > 1 else None)
        bknots = tuple((float(b), float(f)) for b, f in self.batch_factors)
        if any(f <= 0 or b < 1 for b, f in bknots) or any(a[0] >= b[0] for a, b in zip(bknots, bknots[1:])):
            raise UserError("fitted roofline: batch_factors must be [B >= 1, factor > 0] pairs in "
                            f"increasing B, got {list(self.batch_factors)}")
        object.__setattr__(self, "batch_factors", bknots)
        object.__setattr__(self, "_bknots", tuple(zip(*bknots)) if len(bknots) > 1 else None)

    def position_factor(self, v: float) -> float:
        """The measured correction at v verification positions (1 without position_factors):
        np.interp's value, as the fit computes it (physical.predict), in plain Python."""
        if self._knots is None:
            return self.position_factors[0][1] if self.position_factors else 1.0
        return _np_interp(v, *self._knots)

    def batch_factor(self, seqs: float) -> float:
        """The measured correction of a pass of `seqs` sequences (1 without batch_factors),
        interpolated as position_factor."""
        if self._bknots is None:
            return self.batch_factors[0][1] if self.batch_factors else 1.0
        return _np_interp(seqs, *self._bknots)

    def forward(self, decode_tokens, prefill_tokens, seqs, context):
        decode = (self.base_s + self.per_token_s * max(0.0, decode_tokens - self.knee_tokens)
                  + self.per_ctx_token_s * context + self.per_seq_s * max(0, seqs - 1))
        if self.batch_factors and decode_tokens <= seqs and not prefill_tokens:   # plain decode
            top, f = self.batch_factors[-1]
            if seqs > top:   # past the largest batch measured: its correction held as a time
                decode -= (1.0 - f) * (self.base_s + self.per_token_s * max(0.0, top - self.knee_tokens)
                                       + self.per_ctx_token_s * context + self.per_seq_s * (top - 1))
            else:
                decode *= self.batch_factor(seqs)
        if self.position_factors:
            decode *= self.position_factor(max(0.0, decode_tokens - seqs))
        return self.overhead_s + decode + self.prefill_per_token_s * prefill_tokens

    def params(self) -> dict:
        return {"base_s": self.base_s, "knee_tokens": self.knee_tokens,
                "per_token_s": self.per_token_s, "prefill_per_token_s": self.prefill_per_token_s,
                "per_ctx_token_s": self.per_ctx_token_s, "overhead_s": self.overhead_s,
                "per_seq_s": self.per_seq_s,
                **({"position_factors": [list(k) for k in self.position_factors]}
                   if self.position_factors else {}),
                **({"batch_factors": [list(k) for k in self.batch_factors]}
                   if self.batch_factors else {})}

"""The roofline latency model's iteration time (latency.Roofline), as one function that the
compiled engine calls directly (lrsim/native.py builds this module with it) and Roofline.forward
calls from Python: one formula for both.

    t = (overhead_s + base_s) + slope * max(0, decode + prefill - knee_tokens)
        + per_ctx_token_s * context

`terms` is Roofline.terms: (overhead_s + base_s, knee_tokens, slope, per_ctx_token_s).
"""
from __future__ import annotations

from typing import Any


def roofline_time(terms: tuple[float, float, float, float], decode_tokens: Any,
                  prefill_tokens: Any, context: Any) -> float:
    """Seconds of one iteration (the arguments as Roofline.forward takes them: int, float or
    NumPy scalars; float() of each is its value, as Python's mixed arithmetic would take it)."""
    return roofline_seconds(terms, float(decode_tokens), float(prefill_tokens), float(context))


def roofline_seconds(terms: tuple[float, float, float, float], decode_tokens: float,
                     prefill_tokens: float, context: float) -> float:
    """= roofline_time on floats (the engine's own sums are floats: no conversion)."""
    fixed, knee, slope, per_ctx = terms
    over = decode_tokens + prefill_tokens - knee
    # max(0.0, over) without the call (the same value: max keeps 0.0 unless over > 0.0)
    return fixed + slope * (over if over > 0.0 else 0.0) + per_ctx * context

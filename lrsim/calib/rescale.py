"""Carry a profile to another machine speed: factors from a probe (lrreal/probe.py).

    factors = factors_from_probe(profile.doc["probe"], today)   # {"target": (f_dec, f_pre), ...}
    prof_today = profile.rescaled(factors)

A forward pass on CPU is bound by memory bandwidth when decoding and by arithmetic when
prefilling, and another job on the machine slows the two differently, so each engine gets two
factors: decode (the weight read, extra positions, context) and prefill. A factor is today's
median probe time over the profile's reference probe (the median over its traces).
"""
from __future__ import annotations

from lrcore.errors import UserError


def factors_from_probe(reference: dict, today: dict) -> dict[str, tuple[float, float]]:
    out = {}
    for role, ref in reference.items():
        now = (today.get("engines") or {}).get(role)
        if not now or not now.get("decode_s"):
            continue
        f_dec = float(now["decode_s"]) / float(ref["decode_s"])
        f_pre = (float(now["prefill_s"]) / float(ref["prefill_s"])
                 if now.get("prefill_s") and ref.get("prefill_s") else f_dec)
        out[role] = (f_dec, f_pre)
    if "target" not in out:
        raise UserError("probe: the target engine gave no decode time; nothing to rescale by")
    return out

"""Carry a profile to another machine speed: factors from a probe (lrreal/probe.py).

    factors = factors_from_probe(profile.doc["probe"], today)   # {"target": (f_dec, f_pre), ...}
    scales = contention_scales(profile.doc["probe"], [today["engines"]])   # {"target": 0.4, ...}
    prof_today = profile.rescaled(factors, contention=scales)   # or contention={}: the default

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


# The fit's contention (physical.py: a pass slowed by 1 + contention * o while the other engine
# runs) is the machine's too, and the alone probe cannot carry it: load-cold-epyc-all's profile,
# carried by the alone probe to a host whose passes took four times as long, priced that host's
# LR (whose target runs beside its drafter) slow while AR was right, and that host's own fit found
# a smaller contention (docs/load.md, "A host four times slower"). Probes that ran the engines side by
# side (lrreal/probe.side_by_side) measure it: c = contended_decode_s / decode_s - 1, and the
# profile's contention may be scaled by c now over c of its reference (opt-in: `lr calibrate probe
# --carry-contention`; across two sittings of one host the carry brought fewer replayed points
# within 10%: docs/load.md, "Two sittings with side-by-side probes"). One probe's c rests on a few
# passes of a small slowdown, so only aggregates carry it (the median over a corpus's probes,
# `lr calibrate probe`'s repeats), never a single record's probe (lrsim/calib/replay.probe_scaled).
CONTENTION_FLOOR = 0.02   # a reference slowed less than this beside the other engine is noise,
                          # not a contention to scale: the profile's is kept as fitted
CONTENTION_SCALE_MAX = 4.0   # at most this many times the profile's (a stalled probe is not a host)
MIN_BESIDE_PASSES = 2     # passes wholly beside the other engine before a probe's c counts


def probe_contention(e: dict | None) -> float | None:
    """c of one engine's probe (its decode pass beside the other engine over alone, minus 1, never
    below 0), or an aggregate's `contention` (reference_probe: the median of its probes' c); None
    without a side-by-side run of at least MIN_BESIDE_PASSES passes."""
    e = e or {}
    if e.get("contention") is not None:
        return float(e["contention"])
    if not e.get("contended_decode_s") or not e.get("decode_s") \
            or e.get("contended_passes", MIN_BESIDE_PASSES) < MIN_BESIDE_PASSES:
        return None
    return max(0.0, float(e["contended_decode_s"]) / float(e["decode_s"]) - 1.0)


def contention_scales(reference: dict, probes: list[dict]) -> dict[str, float]:
    """{role: c now / c of the reference, at most CONTENTION_SCALE_MAX}: the factor on the
    profile's contention at `probes` (the engines of one or more probes: the median of their c);
    roles whose reference or probes lack a side-by-side run, or whose reference c is under
    CONTENTION_FLOOR, are left out (their contention stays as fitted)."""
    import statistics

    out = {}
    for role, ref in reference.items():
        c_ref = probe_contention(ref)
        now = [c for c in (probe_contention((p or {}).get(role)) for p in probes) if c is not None]
        if c_ref is not None and c_ref >= CONTENTION_FLOOR and now:
            out[role] = min(CONTENTION_SCALE_MAX, statistics.median(now) / c_ref)
    return out


# A probe measures one batch-1 pass per engine. Between two runs of one machine (another day,
# another load) that carries the whole latency curve; between two CPU models it carries only the
# intercept: traces/load-cold's Intel Xeon took 1.76x as long as traces/load's AMD EPYC for the
# probe's decode pass while its AR blocks at 4-8 in flight ran only 16-17% slower
# (benchmarks/results/load_cold.md). So a profile is only carried by probe within one machine
# model, and the commands say so when it is not.

def machine(hw: dict | None) -> str | None:
    """The machine a trace or profile was recorded on: its GPU, else its CPU model (a host with a
    CUDA device is named by the GPU even where the engines ran on its CPU)."""
    hw = hw or {}
    return hw.get("gpu") or hw.get("cpu_model")


def profile_machine(doc: dict) -> str | None:
    """The machine whose batch curves a profile holds: its traces' (the first record's, when they
    ran on several: calibrate warns). A probe rescale (`lr calibrate probe`) does not change it:
    it moves the speed, not the curve's shape."""
    return machine(doc["source"].get("hardware"))


def machines(records: list[dict]) -> dict[str, int]:
    """Records per machine (records that name none are left out)."""
    out: dict[str, int] = {}
    for r in records:
        m = machine((r.get("run") or {}).get("hardware"))
        if m:
            out[m] = out.get(m, 0) + 1
    return dict(sorted(out.items()))


def machine_warning(profile_doc: dict, others: dict[str, int | None], what: str) -> str | None:
    """A warning when `others` (machine -> record count, or None) holds a machine other than
    the profile's; None when they all match or either side names no machine."""
    mine = profile_machine(profile_doc)
    foreign = {m: n for m, n in others.items() if m and m != mine}
    if not mine or not foreign:
        return None
    return (f"the profile describes {mine}; {what} "
            + ", ".join(f"{m} ({n} records)" if n else m for m, n in foreign.items())
            + ": a probe carries a profile's speed within one machine model, not the shape of "
              "its batch curve to another; calibrate on traces of that machine")

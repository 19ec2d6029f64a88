"""Summaries of a run: throughput, latency percentiles, acceptance, utilisation, conservation."""
from __future__ import annotations

import numpy as np

from ..theory.montecarlo import ratio_estimate

PERCENTILES = (50, 90, 99)


def _pct(values) -> dict[str, float]:
    if len(values) == 0:
        return {f"p{p}": None for p in PERCENTILES}
    arr = np.asarray(values, dtype=float)
    return {f"p{p}": float(np.percentile(arr, p)) for p in PERCENTILES} | {"mean": float(arr.mean())}


def times(r) -> tuple[float, float, float]:
    """A finished request's (latency, TTFT, TPOT) in seconds (docs/metrics.md)."""
    return r.finish - r.arrival, r.first_output - r.arrival, (r.finish - r.first_output) / max(1, r.tokens - 1)


def per_request(recs) -> dict:
    """The fields of a summary that come from the requests' records (stream.Requests.fields
    folds the same ones one request at a time)."""
    lat, ttft, tpot = zip(*map(times, recs)) if recs else ((), (), ())
    return {"requests": len(recs), "output_tokens": sum(r.tokens for r in recs),
            "steps": sum(len(r.steps) for r in recs),
            "steps_from_draft": sum(s == "draft" for r in recs for s in r.steps),
            "latency_s": _pct(lat), "ttft_s": _pct(ttft), "tpot_s": _pct(tpot)}


def summarise(world, wall_s: float, drained_s: float, requests: dict | None = None) -> dict:
    """wall_s: first arrival to last request finish (throughput); drained_s: to the end of the
    last engine iteration (utilisation = busy / drained_s <= 1). requests: per_request's fields
    when the records were not kept (a streaming run); default: from world.records."""
    pr = per_request(world.records) if requests is None else requests
    out = summary_of(counts(world), wall_s, drained_s, pr)
    if world.decisions is not None:      # lr-adaptive only: other policies summarise as before
        out["adaptive"] = world.decisions.summary()
    return out


def counts(world) -> dict:
    """What summarise reads from a world, as plain counts that add up (fleet.py sums its
    replicas'): the run's stats, token-level SD's, busy seconds, iterations, batch sizes, KV."""
    st, sd = world.stats, world.sd
    engines = {e.name: e for e in (world.target, world.draft, world.judge) if e is not None}
    return {
        "proposed": st.proposed, "accepted": st.accepted, "unready": st.unready,
        "positions": st.positions, "positions_accepted": st.positions_accepted,
        "by_depth": {d: list(pa) for d, pa in st.by_depth.items()},
        "per_cycle": dict(st.per_cycle),
        "cancelled_jobs": dict(st.cancelled_jobs), "cancelled_tokens": dict(st.cancelled_tokens),
        "sd_rounds": sd.rounds, "sd_drafted": sd.drafted, "sd_accepted": sd.accepted,
        "sd_emitted": sd.emitted_hist,
        "device_busy_s": {n: d.busy_s for n, d in world.pool.devices.items() if d.users},
        "engine_busy_s": {n: e.busy_s for n, e in engines.items()},
        "engine_iterations": {n: e.iterations for n, e in engines.items()},
        "batch_hist": {n: dict(e.batch_hist) for n, e in engines.items()},
        "kv": {n: e.kv.summary() for n, e in engines.items() if getattr(e, "kv", None) is not None},
    }


def add_counts(a, b):
    """Two runs' counts() added (a fleet's replicas, fleet.py): numbers add, lists element-wise,
    dicts key by key; the KV summaries by their meaning (add_kv)."""
    if isinstance(a, dict):
        out = {}
        for k in list(a) + [k for k in b if k not in a]:
            if k in a and k in b:
                out[k] = add_kv(a[k], b[k]) if k == "kv" else add_counts(a[k], b[k])
            else:
                out[k] = a[k] if k in a else b[k]
        return out
    if isinstance(a, list):
        return [add_counts(x, y) for x, y in zip(a, b)]
    return a + b


# KVCache.summary()'s fields that two runs do not add: the same capacity, the fuller one's peak
KV_SAME, KV_MAX = ("capacity_tokens", "block_tokens"), ("peak_tokens", "peak_fraction")


def add_kv(a: dict, b: dict) -> dict:
    """Two runs' KV summaries by engine (kvcache.KVCache.summary): the rest are counts."""
    return {name: {k: (x[k] if k in KV_SAME else max(x[k], b[name][k]) if k in KV_MAX
                       else x[k] + b[name][k]) for k in x} for name, x in a.items()}


def summary_of(c: dict, wall_s: float, drained_s: float, pr: dict,
               utilised_s: float | None = None) -> dict:
    """A run's summary from its counts (counts()) and per-request fields (per_request()).
    Utilisation is busy seconds over utilised_s (default drained_s; a fleet's: the sum of its
    replicas' drained seconds, fleet.py)."""
    over = drained_s if utilised_s is None else utilised_s
    tokens, steps, from_draft = pr["output_tokens"], pr["steps"], pr["steps_from_draft"]
    per_cycle = dict(sorted(c["per_cycle"].items()))
    cycles = sum(per_cycle.values())
    hist = c["sd_emitted"]
    out = {
        "requests": pr["requests"],
        "output_tokens": tokens,
        "steps": steps,
        "wall_s": wall_s,
        "tokens_per_s": tokens / wall_s if wall_s > 0 else 0.0,
        "latency_s": pr["latency_s"],
        "ttft_s": pr["ttft_s"],
        "tpot_s": pr["tpot_s"],
        "proposed_steps": c["proposed"],
        "accepted_steps": c["accepted"],
        "step_acceptance_rate": c["accepted"] / c["proposed"] if c["proposed"] else None,
        "unready_drafts": c["unready"],
        "position_acceptance_rate": c["positions_accepted"] / c["positions"] if c["positions"] else None,
        "by_depth": {str(d): pa for d, pa in sorted(c["by_depth"].items())},
        "steps_from_draft": from_draft,
        "steps_from_target": steps - from_draft,
        "steps_per_cycle_hist": {str(k): v for k, v in per_cycle.items()},
        "mean_steps_per_cycle": (sum(k * v for k, v in per_cycle.items()) / cycles) if cycles else None,
        "cancelled_jobs": dict(c["cancelled_jobs"]),
        "cancelled_tokens": dict(c["cancelled_tokens"]),
        "sd": None if not c["sd_rounds"] else {
            "drafted": c["sd_drafted"], "accepted": c["sd_accepted"],
            "acceptance_rate": c["sd_accepted"] / c["sd_drafted"] if c["sd_drafted"] else None,
            # per pass that verified a proposal (docs/metrics.md), as the traces count it
            "mean_accepted_length": (sum(k * v for k, v in hist.items())
                                     / max(1, sum(hist.values()))),
            "accepted_length_hist": {str(k): v for k, v in sorted(hist.items())},
        },
        "drained_s": drained_s,
        "utilisation": {n: round(b / over if over > 0 else 0.0, 6)
                        for n, b in c["device_busy_s"].items()},
        "engine_busy_s": dict(c["engine_busy_s"]),
        "engine_iterations": dict(c["engine_iterations"]),
        "mean_batch": {n: (sum(b * k for b, k in h.items()) / sum(h.values()))
                       for n, h in c["batch_hist"].items() if h},
    }
    out.update(kv_summary(c["kv"]))
    return out


def kv_summary(kv: dict) -> dict:
    """KV-cache metrics (docs/metrics.md) from each engine's KVCache.summary(), only for engines
    given a capacity: nothing otherwise, so runs without one summarise exactly as before.
    kv_preemptions and kv_blocked_s add up over engines; kv_peak_fraction is the fullest
    engine's peak."""
    if not kv:
        return {}
    return {"kv_preemptions": sum(k["preemptions"] for k in kv.values()),
            "kv_peak_fraction": max(k["peak_fraction"] for k in kv.values()),
            "kv_blocked_s": sum(k["blocked_s"] for k in kv.values()),
            "kv": kv}


def compare(policy: dict, baseline: dict, pol_lat, base_lat, open_loop: bool) -> dict:
    """Speedup vs AR on the same hardware: throughput ratio for a closed batch of requests
    (makespan), mean-latency ratio for open-loop arrivals (throughput is then set by the rate).
    latency_speedup = sum of AR latencies / sum of policy latencies, with a delta-method
    standard error over requests (paired: the same requests and steps)."""
    base = np.asarray(base_lat, float)
    pol = np.asarray(pol_lat, float)
    lat_speedup = float(base.sum() / pol.sum())
    se = float(ratio_estimate(base, pol).stderr) if len(base) >= 2 else None
    return _compared(policy, baseline, lat_speedup, se, open_loop)


def compare_paired(policy: dict, baseline: dict, paired, open_loop: bool) -> dict:
    """compare() from a streaming run's stream.Paired (running sums and co-moments of the
    same requests' AR and policy latencies) instead of the two latency lists."""
    return _compared(policy, baseline, float(paired.ratio()), paired.stderr(), open_loop)


def _compared(policy: dict, baseline: dict, lat_speedup: float, se, open_loop: bool) -> dict:
    out = {"ar_tokens_per_s": baseline["tokens_per_s"], "ar_latency_s": baseline["latency_s"]}
    tp = policy["tokens_per_s"] / baseline["tokens_per_s"] if baseline["tokens_per_s"] else None
    out["throughput_speedup"] = tp
    out["latency_speedup"] = lat_speedup
    out["latency_speedup_se"] = se
    out["speedup"] = lat_speedup if open_loop else tp
    if "kv_preemptions" in baseline:
        out["ar_kv_preemptions"] = baseline["kv_preemptions"]
        out["ar_kv_peak_fraction"] = baseline["kv_peak_fraction"]
    return out

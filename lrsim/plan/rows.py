"""A plan's rows from the simulated seed blocks: each candidate's pooled latency, tokens/s,
goodput, acceptance and KV figures (`aggregate`), the paired per-block ratios its speedups are
means of, and the one-paragraph recommendation."""
from __future__ import annotations

from dataclasses import asdict

import numpy as np

from . import hardware as hw
from . import stats
from .space import Candidate, Load

def aggregate(cand: Candidate, part: dict, load: Load) -> dict:
    """One plan row from a candidate's blocks (pooled over every block it ran)."""
    row = {**asdict(cand), "label": cand.label, "policy": cand.policy, "parallel": cand.parallel,
           "devices_per_replica": part["devices_per_replica"], "replicas": part["replicas"]}
    if not part["feasible"]:
        return row | {"feasible": False, "why": part["why"]}
    blocks = [part["blocks"][k] for k in sorted(part["blocks"])]
    lat = np.array([x for b in blocks for x in b["lat"]], float)
    toks = np.array([x for b in blocks for x in b["tok"]], float)
    wall = sum(b["wall"] for b in blocks)
    ms_per_tok = 1e3 * lat / np.maximum(toks, 1)
    metric = ms_per_tok if load.slo_metric == "tpot" else 1e3 * lat
    ok = metric <= load.slo_ms if load.slo_ms else np.ones(len(lat), bool)
    prop, pos = sum(b["prop"] for b in blocks), sum(b["pos"] for b in blocks)
    active = part["active"]
    sized = [b for b in blocks if b.get("kvp") is not None]   # engines with a KV capacity
    return row | dict(
        feasible=True, tp=part["tp"], c1=part["c1"], samples=len(blocks),
        requests_per_replica=len(lat) // max(1, len(blocks)), mean_latency_s=float(lat.mean()),
        latency_s={k: float(np.percentile(lat, q)) for k, q in (("p50", 50), ("p90", 90), ("p99", 99))},
        ms_per_token={k: float(np.percentile(ms_per_tok, q)) for k, q in (("p50", 50), ("p90", 90))},
        tokens_per_s=float(np.mean([b["tps"] for b in blocks])) * active,
        goodput_tokens_per_s=float(toks[ok].sum() / wall * active) if wall > 0 else 0.0,
        slo_attainment=float(ok.mean()),
        # accepted / judged drafts (late drafts count as judged and rejected, docs/metrics.md)
        step_acceptance_rate=sum(b["acc"] for b in blocks) / prop if prop else None,
        # positions where some sibling draft was accepted / positions judged (width > 1 differs)
        position_acceptance_rate=sum(b["pos_acc"] for b in blocks) / pos if pos else None,
        utilisation=blocks[-1]["util"], sim_s=part["sim_s"], cpu_s=part["cpu_s"],
        # the most sequences one simulated pass of each engine held, over every block
        max_batch={role: max(b["mb"][role] for b in blocks if role in b.get("mb", {}))
                   for role in sorted({r for b in blocks for r in b.get("mb", {})})},
        # KV cache (None: unlimited): preemptions and admission-blocked seconds per replica run
        # (mean over seed blocks), the fullest engine's peak over every block
        kv_preemptions=float(np.mean([b["kvp"] for b in sized])) if sized else None,
        kv_peak_fraction=max(b["kvf"] for b in sized) if sized else None,
        kv_blocked_s=float(np.mean([b["kvb"] for b in sized])) if sized else None,
        # the cache filled up: requests waited for blocks or were preempted (docs/metrics.md)
        kv_full=bool(sized) and any(b["kvp"] or b["kvb"] for b in sized))


def block_means(part: dict) -> dict[int, float]:
    return {k: float(np.mean(b["lat"])) for k, b in part["blocks"].items()}


def block_tps(part: dict) -> dict[int, float]:
    """Tokens per second of each seed block (all replicas): its tokens over its makespan."""
    return {k: b["tps"] * part["active"] for k, b in part["blocks"].items()}


def paired_ratio(base: dict[int, float], mine: dict[int, float]) -> float | None:
    """Mean over paired seed blocks of this tokens/s over the baseline's."""
    ks = [k for k in sorted(set(base) & set(mine)) if base[k] > 0]
    return float(np.mean([mine[k] / base[k] for k in ks])) if ks else None


def speedup_ci(base: dict[int, float], mine: dict[int, float], confidence: float):
    """Mean over paired seed blocks of base latency / this latency, with its t-interval."""
    ks = sorted(set(base) & set(mine))
    return stats.mean_ci([base[k] / mine[k] for k in ks], confidence), len(ks)


def out_of_kv(rows: list[dict]) -> list[dict]:
    """Rows whose KV cache filled up: requests waited for blocks or were preempted."""
    return [r for r in rows if r.get("kv_full")]


def recommend(rows: list[dict], meta: dict) -> str:
    """One paragraph: what to deploy, by how much it wins, and against the fair baseline."""
    best, ref, eq = rows[0], meta["reference"], meta["equal_resources_baseline"]
    h = meta["hardware"]
    obj = {"speedup": "speedup", "goodput": "goodput under the SLO", "throughput": "throughput"}[meta["objective"]]
    parts = [f"On {h['devices']}x {h['kind']} at {meta['load_text']} ({meta['source']}), ranked by {obj}, "
             f"the best configuration is {best['label']} ({best['replicas']} replica(s) of "
             f"{best['devices_per_replica']} device(s)): {best['speedup']:.2f}x the reference AR's "
             f"mean latency at TP={ref['tp']}, {best['tokens_per_s']:.0f} tokens/s"]
    if meta["load"]["slo_ms"]:
        parts[-1] += f", goodput {best['goodput_tokens_per_s']:.0f} tokens/s ({best['slo_attainment']:.0%} of requests meet the SLO)"
    parts[-1] += "."
    lr = [r for r in rows if r["mode"].startswith("lr")]
    sd = [r for r in rows if r["mode"] == "sd" and not r["role"]]
    if best["mode"] == "ar" and (best["role"] != "equal-resources" or best["tp"] == ref["tp"]):
        parts.append("No speculative configuration beats the target alone at this load: serve AR.")
    elif eq is not None and eq["tp"] != ref["tp"]:
        if best["role"] == "equal-resources":
            parts.append(f"Step-level speculation does not pay here: giving the draft's and judge's devices "
                         f"to the target (TP={eq['tp']}) beats every LR configuration"
                         + (f" (best LR: {lr[0]['label']}, {lr[0]['speedup']:.2f}x)." if lr else "."))
        else:
            gain = best["speedup_vs_equal"]
            parts.append(f"Against the equal-resources baseline (AR at TP={eq['tp']}, {eq['speedup']:.2f}x) it is "
                         f"{gain:.2f}x {'faster' if gain >= 1 else 'slower'} per request")
            eq_best = next(r for r in rows if r["role"] == "equal-resources")
            if eq_best is not eq:
                parts[-1] += (f"; the best equal-resources option, {eq_best['label']} ({eq_best['speedup']:.2f}x), "
                              f"is {best['speedup'] / eq_best['speedup']:.2f}x slower than it")
            parts[-1] += "."
    if lr and sd:
        lb, sb = lr[0], sd[0]
        parts.append(f"Best step-level option {lb['label']} gives {lb['speedup']:.2f}x, best token-level "
                     f"SD {sb['label']} {sb['speedup']:.2f}x.")
    full = out_of_kv(rows)
    if full:
        names = ", ".join(r["label"] for r in full[:3]) + (f" and {len(full) - 3} more" if len(full) > 3 else "")
        who = "The best configuration itself runs" if best in full else f"{len(full)} configuration(s) run"
        parts.append(f"{who} out of KV cache at this load (requests wait for blocks or are "
                     f"preempted and recomputed: {names}): more memory or devices per replica, or "
                     "fewer requests in flight.")
    if meta["skipped"]:
        mem = sum("KV cache" in r["why"] for r in meta["skipped"])
        if len(meta["skipped"]) > mem:
            parts.append(f"{len(meta['skipped']) - mem} candidate(s) need more devices than available.")
        if mem:
            parts.append(f"{mem} candidate(s) leave no memory for a KV cache (skipped).")
    st = meta.get("statistics") or {}
    if st.get("wider_than_target"):
        parts.append(f"{len(st['wider_than_target'])} speedup interval(s) stayed wider than "
                     f"+-{st['ci_target']:.0%} at {st['max_samples']} samples (noisy at this load; "
                     "raise --max-samples or --requests).")
    if h["kind"] in hw.HBM_TB_S and not str(h["kind"]).startswith("cpu") \
            and any(r["placement"] == "shared" for r in rows):
        parts.append("Shared-GPU rows assume draft and target alternate whole iterations; a real GPU "
                     "time-slices them (docs/planning.md, Limits).")
    return " ".join(parts)

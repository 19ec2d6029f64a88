"""What `lr collect` prints when a run ends: per mode accuracy, tokens/s, step and SD acceptance,
speedup over AR on the same problems, failed verifications by cause, and load medians."""
from __future__ import annotations

import math
import statistics


def verify_cause(error: str) -> str:
    """A short class for a failed verification's `error` text (summary counts by cause)."""
    e = error.lower()
    if e.startswith("http "):  # "HTTP 504: ... timeout": the status decides
        return "http"
    for key, words in (("timeout", ("timed out", "timeout")),
                       ("connection", ("connection", "connect")),
                       ("http", ("http ",)),
                       ("bad reply", ("non-json", "unexpected reply", "no [aligned]"))):
        if any(w in e for w in words):
            return key
    return "other"


def summarize(records: list[dict]) -> list[dict]:
    """Per-mode accuracy, tokens/s, acceptance, speedup vs AR (same problems) from records."""
    by_mode: dict[str, list[dict]] = {}
    for r in records:
        by_mode.setdefault(r["mode"], []).append(r)
    ar = {(r["problem_id"], r["sample"]): r for r in by_mode.get("ar", [])}
    rows = []
    for mode, recs in by_mode.items():
        toks = sum(r["output_tokens"] for r in recs)
        wall = sum(r["wall_time_s"] for r in recs)
        graded = [r["correct"] for r in recs if r["correct"] is not None]
        prop = sum(r["step_acceptance"]["proposed"] for r in recs)
        acc = sum(r["step_acceptance"]["accepted"] for r in recs)
        sds = [r["sd"] for r in recs if r.get("sd")]
        checks = [s["verify"] for r in recs for s in r["steps"] if s.get("verify")]
        errors: dict[str, int] = {}
        for v in checks:
            if v.get("error"):
                cause = verify_cause(v["error"])
                errors[cause] = errors.get(cause, 0) + 1
        drafted = sum(s["drafted"] for s in sds)
        pairs = [(ar[(r["problem_id"], r["sample"])], r) for r in recs
                 if (r["problem_id"], r["sample"]) in ar]
        speedup = None
        # accept (the acceptance protocol) measures alpha1 and is no way to decode: no speedup
        if pairs and mode not in ("ar", "accept"):
            # AR's and the mode's tokens/s on the same problems; undefined (None) when either
            # side has no tokens or no time (hand-made records; a real record takes time)
            a_tok, a_wall = (sum(a[k] for a, _ in pairs) for k in ("output_tokens", "wall_time_s"))
            m_tok, m_wall = (sum(m[k] for _, m in pairs) for k in ("output_tokens", "wall_time_s"))
            if a_tok > 0 and a_wall > 0 and m_wall > 0:
                speedup = (m_tok / m_wall) / (a_tok / a_wall)
                speedup = speedup if math.isfinite(speedup) else None
        rows.append({"mode": mode, "records": len(recs),
                     "accuracy": (sum(graded) / len(graded)) if graded else None,
                     "tokens_per_s": toks / wall if wall > 0 and math.isfinite(toks / wall) else 0.0,
                     "output_tokens": toks, "wall_time_s": wall,
                     "step_acceptance": acc / prop if prop else None, "steps_proposed": prop,
                     "sd_acceptance": (sum(s["accepted"] for s in sds) / drafted) if drafted else None,
                     "speedup_vs_ar": 1.0 if mode == "ar" and ar else speedup,
                     "verifications": len(checks),
                     "verifications_failed": sum(errors.values()),
                     "verification_failures_by_cause": errors,
                     "step_acceptance_ci95": None, "step_acceptance_by_verifier_dataset": None,
                     "load": load_summary(recs)})
        if mode == "accept":
            # step acceptance per judged draft with its 95% Wilson interval (scipy), pooled and
            # per (verifier, data set): lrcore/acceptance.py
            from lrcore.acceptance import protocol_acceptance

            est = protocol_acceptance(recs)
            rows[-1]["step_acceptance_ci95"] = est["ci95"]
            rows[-1]["step_acceptance_by_verifier_dataset"] = est["groups"]
    return rows


def load_summary(recs: list[dict]) -> dict | None:
    """Medians of the load metrics of records made under load (lrreal/load.py), else None."""
    loads = [r["load"] for r in recs if isinstance(r.get("load"), dict)]
    if not loads:
        return None

    def p50(key):
        xs = [x[key] for x in loads if x.get(key) is not None]
        return statistics.median(xs) if xs else None
    return {"records": len(loads), "concurrency": sorted({x["concurrency"] for x in loads}),
            "request_rate": sorted({x["request_rate"] for x in loads if x.get("request_rate")}),
            "ttft_p50_s": p50("ttft_s"), "tpot_p50_s": p50("tpot_s"), "queue_p50_s": p50("queue_s"),
            "latency_p50_s": p50("latency_s")}

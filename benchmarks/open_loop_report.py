"""results/load_open.md's paragraphs on where the open-loop replay's error sits: the figures
benchmarks/open_loop_diagnosis.py computes (bench_open_loop.level_table's rows), in words."""
from __future__ import annotations

from benchmarks.open_loop_diagnosis import unrecorded


def _pct(w: dict, key: str | None = None) -> str:
    m, r = (w["measured"], w["replayed"]) if key is None else (w["measured"][key], w["replayed"][key])
    return f"{100 * (r / m - 1):+.1f}%"


def _batch(w: dict) -> str:
    """Sequences per pass, or '-' where the results predate the count."""
    return f"{w['sequences'] / w['passes']:.2f}" if w.get("sequences") is not None and w["passes"] else "-"


def _jobs(role: str, kind: str, v: dict) -> str:
    """'target finished: 312 / 320 jobs, 41,200 / 37,800 job-s (-8.3%)'."""
    m, r = v.get("measured") or {}, v.get("replayed") or {}
    if not m or not r:
        return f"{role} {kind}: " + ("measured only" if m else "replayed only")
    pre = (f", prefill {m['prefill'] / m['prompted']:.1f} / {r['prefill'] / r['prompted']:.1f} tokens a job"
           if m.get("prompted") and r.get("prompted") else "")
    return (f"{role} {kind}: {m['jobs']:.0f} / {r['jobs']:.0f} jobs, {m['tokens']:,.0f} / {r['tokens']:,.0f} "
            f"tokens, {m['job_s']:,.0f} / {r['job_s']:,.0f} job-s"
            + (f" ({100 * (r['job_s'] / m['job_s'] - 1):+.1f}%)" if m["job_s"] > 0 else "") + pre)


def _err(r: dict, key: str) -> str:
    return f"{100 * (r[key]['mean_latency_s'] / r['mean_latency_s'] - 1):+.1f}%"


def _tail_speedup(r: dict) -> str:
    """', speedup vs ar's own-probe replay 0.71 against 0.73 measured' (LR's tail what-if)."""
    x = r["replayed_own_probe_with_tail"].get("speedup_vs_ar")
    return "" if x is None else f", speedup vs ar's own-probe replay {x:.2f} against {r['speedup_vs_ar']:.2f} measured"


def _cover_text(c: dict) -> str:
    m, r = c["measured"], c["replayed"]
    per = lambda d, k: d[k] / d["requests"]
    return (f"{per(m, 'latency_s'):.1f} / {per(r, 'latency_s'):.1f}, on the target "
            f"{per(m, 'target_job_s'):.1f} / {per(r, 'target_job_s'):.1f}, on no engine "
            f"{per(m, 'latency_s') - per(m, 'any_job_s'):.2f} / {per(r, 'latency_s') - per(r, 'any_job_s'):.2f}"
            f" (before the scheduler started {per(m, 'before_run_s'):.2f} / -)")


def _rounds(by_round: dict, keys: list) -> str:
    return ", ".join(f"{k}: {by_round[k]:.1f}" for k in keys if k in by_round)


def stall_lines(t: dict) -> list[str]:
    """The collector's stalls (open_loop_diagnosis.collector_stalls), a paragraph."""
    rows = {cfg: r["collector_stalls"] for cfg, r in t.items() if r.get("collector_stalls", {}).get("ends")}
    if not rows:
        return []
    rounds = sorted({k for s in rows.values() for k in s["by_round_mean_s"]}, key=int)   # str keys (JSON)
    return ["The collector's stalls (the target engine idle right after a request's end while another "
            "was in flight: the collector re-validated its whole trace file in the event loop after "
            "each record, fixed since; mean seconds a request end, and the request-seconds they held "
            "as a share of the measured latency; by round, the first and last three): " + "; ".join(
                f"{cfg} {s['mean_s']:.1f} s over {s['ends']} ends, {100 * s['share_of_latency']:.1f}% "
                f"(rounds {_rounds(s['by_round_mean_s'], rounds[:3])} ... "
                f"{_rounds(s['by_round_mean_s'], rounds[-3:])} s)"
                for cfg, s in rows.items()) + ".", ""]


def diagnosis_lines(t: dict) -> list[str]:
    """results/load_open.md's paragraphs on where the replay's error sits (level_table's rows)."""
    return [*stall_lines(t), "At each block's own probe, the replay's work against the measured (each forward pass "
        "counted once; mean batch: sequences per pass, measured / replayed): " + "; ".join(
            f"{cfg} makespan {_pct(r['engine_work_own_probe']['makespan_s'])}, "
            + ", ".join(f"{role} passes {_pct(w, 'passes')}, busy {_pct(w, 'busy_s')}, "
                        f"mean batch {_batch(w['measured'])} / {_batch(w['replayed'])}"
                        for role, w in r["engine_work_own_probe"].items() if role != "makespan_s")
            for cfg, r in t.items())
        + ". Those passes priced by the profile at the block's probe, minus measured (all / "
        "those holding a prompt's prefill): " + "; ".join(
            f"{cfg} " + ", ".join(f"{role} {v['all']['diff_pct']:+.1f}%"
                                 + (f" / {v['with_prefill']['diff_pct']:+.1f}%" if "with_prefill" in v else "")
                                 for role, v in r["passes_at_own_probe"].items())
            for cfg, r in t.items()) + ".", "",
        "Job by job at each block's own probe (a job's seconds: submission to its last "
        "token or its cancellation; the time requests spent waiting on an engine; ar's measured "
        "jobs are the steps of its one stream a request; prefill: the prompt tokens the engine's "
        "prefix cache did not hold, per job whose span records them), measured / replayed: " + "; ".join(
            f"{cfg} " + ", ".join(_jobs(role, kind, v) for role, kinds in sorted(r["job_time_own_probe"].items())
                                 for kind, v in sorted(kinds.items()))
            for cfg, r in t.items()) + ". The engines ran more sequences (a pass's batch, summed "
        "over passes) than the records' jobs hold tokens, per job: " + "; ".join(
            f"{cfg} " + ", ".join(f"{role} {x:+.2f}" for role, x in unrecorded(r).items())
            for cfg, r in t.items()) + " (the replay runs exactly its jobs' tokens). Replayed at each "
        "block's own probe with that tail (each finished or cancelled job leaves a sequence in its "
        "engine's batch that many more passes; a what-if), mean latency minus measured: "
        + ("; ".join(f"{cfg} {_err(r, 'replayed_own_probe_with_tail')} "
                     f"(without: {_err(r, 'replayed_own_probe')}; "
                     "sequences measured / replayed with it: "
                     + ", ".join(f"{e} {r['engine_work_own_probe'][e]['measured']['sequences']:,.0f} / {v:,.0f}"
                                 for e, v in r["replayed_own_probe_with_tail"]["sequences"].items()) + ")"
                     + _tail_speedup(r)
                     for cfg, r in t.items() if "replayed_own_probe_with_tail" in r) or "no tail") + ".", "",
        "Request by request at each block's own probe, mean seconds (measured / replayed): a "
        "request's time from admission (the replay admits at arrival), the time one of its target "
        "jobs was on the target (submitted, not yet done), and the time none of its jobs was on an "
        "engine (a verdict awaited, the scheduler's reaction; the replay's holds the profile's "
        "per-request overhead): " + ("; ".join(
            f"{cfg} " + _cover_text(r["cover_own_probe"])
            for cfg, r in t.items() if r.get("cover_own_probe")) or "not computed") + ".", ""]

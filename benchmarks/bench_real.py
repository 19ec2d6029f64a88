"""Real AR / SD / LR / LR+SD on a fixed GSM8K subset with the packaged Qwen2.5-Coder pair.

    .venv/bin/python benchmarks/bench_real.py [--limit 2] [--max-tokens 96] [--out FILE]
                                              [--modes ar,sd,lr,lr+sd] [--depth 2]

    .venv/bin/python benchmarks/bench_real.py --no-collect    # the tables from the trace files

Each mode runs through `lrreal.collect.collect` (its own engines, started and stopped under the
vLLM flock) into ONE trace file (resumable: rerunning skips finished records), then this writes,
side by side from that file (benchmarks/results/real.{json,md}, quoted in docs/real-backend.md):
tokens/s and speedup vs AR (same problems; against AR on all cores, and on the target's own core
from --ar-1core), the within-record speedup (each record against what AR would have needed at
that moment: its prefill plus its tokens x the same record's median single-token target pass, so
load that changed between modes cancels), step acceptance, SD token acceptance and mean accepted
length, and the measured cost model behind them: c1 (draft/target time per decode token), the
target's batch cost T(n)/T(1), its prefill share, the SD verification pass against a one-token
pass, and what the paper's closed form f_async(alpha1, c1, k1) predicts from those measurements;
and the same LR run with the embedding verifier (--embedding).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.write import write_results  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "real.json"


def decode_ms(records, engine: str) -> dict[int, float]:
    """Median ms of a pure-decode forward pass, by batch size, over all records."""
    by_n: dict[int, list[float]] = {}
    for r in records:
        st = r["engine_stats"].get(engine) or {}
        for p in st.get("forward_passes") or []:
            if p.get("prefill_tokens", 0) == 0 and p["batch_size"] >= 1:
                by_n.setdefault(p["batch_size"], []).append(p["duration_s"] * 1000)
    return {n: statistics.median(v) for n, v in sorted(by_n.items())}


def tps(recs) -> float:
    return sum(r["output_tokens"] for r in recs) / sum(r["wall_time_s"] for r in recs)


def within_record(recs) -> float | None:
    """The mode's wall time against what AR would have needed inside the same records: each
    record's prompt prefill pass + its output tokens x its median single-token target pass."""
    est = wall = 0.0
    for x in recs:
        fp = x["engine_stats"]["target"]["forward_passes"] or []
        single = [p["duration_s"] for p in fp if p.get("prefill_tokens", 0) == 0
                  and p["batch_size"] == 1 and p["tokens_scheduled"] == 1]
        first = next((p["duration_s"] for p in fp if p.get("prefill_tokens", 0) > 0), 0.0)
        if single:
            est += first + x["output_tokens"] * statistics.median(single)
            wall += x["wall_time_s"]
    return est / wall if wall else None


def sd_verify_cost(recs) -> dict | None:
    """The target's median batch-1 verification pass of the most positions over its median
    batch-1 single-token pass (n-gram SD's price per proposal)."""
    by_q: dict[int, list[float]] = {}
    for r in recs:
        for p in r["engine_stats"]["target"]["forward_passes"] or []:
            if p.get("prefill_tokens", 0) == 0 and p["batch_size"] == 1:
                by_q.setdefault(p["tokens_scheduled"], []).append(p["duration_s"])
    if 1 not in by_q or max(by_q) == 1:
        return None
    q = max(by_q)
    return {"positions": q, "ratio": statistics.median(by_q[q]) / statistics.median(by_q[1])}


def measure(path: Path, ar_1core: Path | None, embedding: Path | None, depth: int) -> dict:
    from lrcore.traces import read_traces
    from lrreal.summary import summarize
    from lrsim.theory.formulas import f_step

    recs = read_traces(path)
    base = [r for r in read_traces(ar_1core) if r["mode"] == "ar"] \
        if ar_1core and ar_1core.is_file() and ar_1core.stat().st_size else []
    keys = {(r["problem_id"], r["sample"]) for r in base}
    rows = []
    for r in summarize(recs):
        mine = [x for x in recs if x["mode"] == r["mode"]]
        sds = [x["sd"] for x in mine if x.get("sd")]
        drafts = sum(s.get("num_drafts", 0) for s in sds)
        same = [x for x in mine if (x["problem_id"], x["sample"]) in keys]
        rows.append({"mode": r["mode"], "records": r["records"], "accuracy": r["accuracy"],
                     "tokens_per_s": r["tokens_per_s"], "speedup_vs_ar": r["speedup_vs_ar"],
                     "speedup_vs_ar_1core": tps(same) / tps(base) if same and base else None,
                     "within_record": within_record(mine), "step_acceptance": r["step_acceptance"],
                     "sd_acceptance": r["sd_acceptance"],
                     "sd_mean_accepted_length": (sum(s["accepted"] for s in sds) + drafts) / drafts
                     if drafts else None})
    ar_recs = [r for r in recs if r["mode"] == "ar"]
    lr_recs = [r for r in recs if r["mode"] == "lr"]
    t_alone = decode_ms(ar_recs, "target")
    t_lr, d_lr = decode_ms(lr_recs, "target"), decode_ms(lr_recs, "draft")
    cost: dict = {"target_alone_ms": t_alone, "target_in_lr_ms": t_lr, "draft_in_lr_ms": d_lr}
    if t_lr.get(1) and d_lr.get(1):
        cost["c1"] = d_lr[1] / t_lr[1]
        cost["batch_cost"] = {n: v / t_lr[1] for n, v in t_lr.items()}
        passes = [p for r in lr_recs for p in r["engine_stats"]["target"]["forward_passes"] or []]
        dec = [p["batch_size"] for p in passes if p.get("prefill_tokens", 0) == 0]
        cost["mean_target_batch"] = sum(dec) / len(dec) if dec else None
        pre = [p for p in passes if p.get("prefill_tokens", 0) > 0]
        if pre:
            secs = sum(p["duration_s"] for p in pre)
            busy = sum(r["engine_stats"]["target"]["aggregate"]["busy_s"] for r in lr_recs)
            cost["prefill"] = {"tokens": sum(p["prefill_tokens"] for p in pre), "s": secs,
                               "share_of_busy": secs / busy,
                               "tokens_per_s": sum(p["prefill_tokens"] for p in pre) / secs}
        alpha1 = next((r["step_acceptance"] for r in rows if r["mode"] == "lr"), None)
        if alpha1 is not None:
            c1 = min(cost["c1"], 1.0)
            cost["f_async"] = {"alpha1": alpha1, "c1": c1, "k1": depth + 1,
                               "speedup": float(f_step(alpha1, c1, depth + 1, "async"))}
    cost["sd_verify"] = sd_verify_cost([r for r in recs if r["mode"] == "sd"])
    emb = None
    if embedding and embedding.is_file():
        e = [r for r in read_traces(embedding) if r["mode"] == "lr"]
        prop = sum(r["step_acceptance"]["proposed"] for r in e)
        emb = {"records": len(e), "within_record": within_record(e),
               "step_acceptance": sum(r["step_acceptance"]["accepted"] for r in e) / prop if prop else None,
               "accepted": sum(r["step_acceptance"]["accepted"] for r in e), "proposed": prop}
    return {"trace": str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path),
            "ar_1core": str(ar_1core.relative_to(ROOT)) if base and ar_1core.is_relative_to(ROOT) else None,
            "embedding": str(embedding.relative_to(ROOT)) if emb and embedding.is_relative_to(ROOT) else None,
            "depth": depth, "rows": rows, "cost": cost, "embedding_lr": emb}


def render(doc: dict) -> str:
    f = lambda v, fmt="{:.2f}": "-" if v is None else fmt.format(v)  # noqa: E731
    lines = [f"From `{doc['trace']}`" + (f" and `{doc['ar_1core']}`" if doc.get("ar_1core") else "") + ":", "",
             "| mode | tok/s | vs AR (cores 0-1) | vs AR on core 0 (same core as under LR) | within-record "
             "| step acc. | SD acc. / mean len |", "|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        sd = "-" if r["sd_acceptance"] is None else f"{r['sd_acceptance']:.2f} / {f(r['sd_mean_accepted_length'])}"
        lines.append(f"| {r['mode']}{' (cores 0-1)' if r['mode'] == 'ar' else ''} | {r['tokens_per_s']:.2f} | "
                     f"{f(r['speedup_vs_ar'], '{:.2f}x')} | {f(r['speedup_vs_ar_1core'], '{:.2f}x')} | "
                     f"{f(r['within_record'], '{:.2f}x')} | {f(r['step_acceptance'])} | {sd} |")
    c = doc["cost"]
    ms = lambda d: ", ".join(f"batch {n}: {v:.0f}" for n, v in d.items()) or "-"  # noqa: E731
    lines += ["", "The cost model, measured from the same records:", "",
              f"- median decode pass (ms): target alone (ar, cores 0-1) {ms(c['target_alone_ms'])}; "
              f"target during lr {ms(c['target_in_lr_ms'])}; draft during lr {ms(c['draft_in_lr_ms'])}"]
    if "c1" in c:
        lines += [f"- c1 = draft / target per decode token, both during lr: {c['c1']:.2f}",
                  "- target batch cost during lr, T(n)/T(1): "
                  + ", ".join(f"n={n}: {v:.2f}" for n, v in c["batch_cost"].items())
                  + (f"; mean target batch {c['mean_target_batch']:.2f}" if c.get("mean_target_batch") else "")]
    if c.get("prefill"):
        p = c["prefill"]
        lines.append(f"- target prefill during lr: {p['tokens']} tokens in {p['s']:.1f} s, "
                     f"{p['share_of_busy']:.0%} of its busy time ({p['tokens_per_s']:.0f} tokens/s)")
    if c.get("f_async"):
        fa = c["f_async"]
        lines.append(f"- closed form f_async(alpha1={fa['alpha1']:.2f}, c1={fa['c1']:.2f}, k1={fa['k1']}) = "
                     f"{fa['speedup']:.2f}x (the ideal: free batching, no prefill, draft on its own core)")
    if c.get("sd_verify"):
        v = c["sd_verify"]
        lines.append(f"- n-gram SD: a {v['positions']}-position verification pass costs {v['ratio']:.2f}x a "
                     "one-token pass (median, batch 1)")
    e = doc.get("embedding_lr")
    if e:
        lines.append(f"- lr with the embedding verifier (`{doc['embedding']}`): step acceptance "
                     f"{f(e['step_acceptance'])} ({e['accepted']} of {e['proposed']}), within-record "
                     f"{f(e['within_record'], '{:.2f}x')}")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=2)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--modes", default="ar,sd,lr,lr+sd")
    ap.add_argument("--verifier", default="exact")
    ap.add_argument("--out", default="traces/samples/gsm8k-cpu.jsonl")
    ap.add_argument("--ar-1core", default="traces/samples/gsm8k-cpu-ar-1core.jsonl",
                    help="AR with the target on the same single core LR gives it (recorded with "
                         "`lr collect --mode ar --target-cores 0`); compared if the file exists")
    ap.add_argument("--embedding", default="traces/samples/gsm8k-cpu-lr-embedding.jsonl",
                    help="lr with the embedding verifier (`--verifier embedding:0.9`); reported if it exists")
    ap.add_argument("--no-collect", action="store_true", help="only the tables, from the trace files as they are")
    ap.add_argument("--results", default=str(OUT))
    args = ap.parse_args()

    out = ROOT / args.out
    if not args.no_collect:
        from lrreal.collect import CollectSpec, collect

        for mode in [m for m in args.modes.split(",") if m]:
            spec = CollectSpec(mode=mode, dataset="gsm8k", limit=args.limit, offset=args.offset,
                               depth=args.depth, max_tokens=args.max_tokens, verifier=args.verifier,
                               out=str(out), resume=True)
            s = collect(spec)
            print(f"[{mode}] wrote {s.written}, skipped {s.skipped}, failed {len(s.failed)}", flush=True)
            for fail in s.failed:
                print(f"    failed {fail}", flush=True)
    doc = measure(out, ROOT / args.ar_1core, ROOT / args.embedding, args.depth)
    write_results(args.results, doc, render)
    print(render(doc))


if __name__ == "__main__":
    main()

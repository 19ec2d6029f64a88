"""The roofline figures of docs/gpu-latency-profile.md ("Roofline check and anomalies"), computed
from the shipped H100 table rather than typed by hand.

    .venv/bin/python benchmarks/bench_roofline.py      # a second; reads JSON only
        -> benchmarks/results/latency_roofline.{json,md}

Inputs
  table      lrsim/data/latency/h100_paper_models.json (modelspec.shipped_table("H100")): decode
             and prefill entries, each model's `shapes` (read through gpu_latency_profile.Arch,
             the class that wrote them, so byte and FLOP counts use its formulas), and its
             `kernel_census` (one eager step at batch 1, query 1, context 2048: time per kernel kind)
  datasheet  the H100's peak HBM bandwidth and dense BF16 throughput: lrsim.plan.catalog, which
             cites NVIDIA's H100 SXM5 datasheet
  peaks      benchmarks/results/h100_peaks.json: what benchmarks/gpu_peaks.py measured on an H100
             (device-to-device copy bandwidth, bf16 GEMM throughput). Optional: without it the
             figures that need it are null and render as "not measured".

Figures (decode at the census's point: batch 1, one query token, context CONTEXT)
  roofline      weight bytes a decode step reads (Arch.streamed_bytes_per_step: every layer and
                the lm_head) / a bandwidth. Weights only: the KV cache attention reads is given
                apart (kv_gb)
  effective     those weight bytes / the measured step
  census        kernel time by kind: GEMMs (with weight bytes / GEMM time: a batch-1 GEMM is a
                GEMV that reads each weight once), glue = norm + elementwise/copy, attention;
                gaps = the measured graph-replayed step (with the census's attention backend)
                minus the census's kernel time
  GEMM-only c   draft GEMM time / target GEMM time: c with every non-GEMM cost removed, a lower
                bound for an engine that fuses the glue away
  TP ratio      a TP=2 shard's step (forward pass, no modelled all-reduce) / the TP=1 step
  monotonicity  pairs of neighbouring batch sizes (same model, query tokens, context) where the
                larger batch's step is the shorter; the largest such drop
  prefill       FLOPs / ms of the PREFILL_TOKENS-token prefill of the pairs' 32B targets. FLOPs =
                2 x tokens x layers x Arch.layer_params (each layer weight once per token; the
                norm and bias vectors among them are counted too, a negligible excess)
                + 2 x hidden x vocab (the lm_head, last token only) + causal attention
                2 x head_dim x n_q x layers x T(T+1) (QK^T and PV, 2 x head_dim FLOPs each per
                query and key at or before it)
  KV bytes      Arch.kv_bytes_per_token: 2 (K and V) x layers x KV heads x head_dim x 2 bytes
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_device_rescale import PAIRS, base_name, rows  # noqa: E402
from benchmarks.bench_latency_table import CONTEXT  # noqa: E402
from benchmarks.gpu_latency_profile import Arch  # noqa: E402
from benchmarks.write import run_and_write  # noqa: E402

from lrsim.plan import catalog, modelspec  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "latency_roofline.json"
PEAKS = OUT.with_name("h100_peaks.json")      # benchmarks/gpu_peaks.py --out, run on an H100
DEVICE = "H100"
POINT = (1, 1, CONTEXT)                        # batch, query tokens, context of the kernel census
STEP_MODELS = ("r1-distill-qwen-32b", "r1-distill-qwen-1.5b")   # rendered in full
PREFILL_TOKENS = 8192
KV_MODELS = ("qwen3-1.7b", "r1-distill-qwen-1.5b")
NOT_MEASURED = "not measured"


def arch(key: str, m: dict) -> Arch:
    """A table entry's shapes as the profiler's Arch, whose formulas computed its byte counts."""
    return Arch(name=key, hf_id=m["hf_id"], **m["shapes"])


def peaks(table_device: str, path: Path | None = None) -> dict:
    """Datasheet peaks, and the measured ones when gpu_peaks.py's output (PEAKS) is committed; a
    file measured on another GPU than the table's is refused rather than mixed in."""
    path = PEAKS if path is None else path
    ds = catalog.get(DEVICE)
    out = {"datasheet": ds.source, "datasheet_hbm_tb_s": ds.hbm_tb_s, "datasheet_bf16_tflops": ds.bf16_tflops,
           "measured": None, "measured_on": None, "copy_tb_s": None, "gemm_tflops": None}
    if path.is_file():
        p = json.loads(path.read_text())
        on = p["env"]["device_name"]
        if on != table_device:
            sys.exit(f"bench_roofline: {path.name} was measured on {on!r}, the table on {table_device!r}")
        out.update(measured=str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path), measured_on=on,
                   copy_tb_s=p["copy"]["tb_s"], gemm_tflops=p["gemm"]["tflops"])
    return out


def per_s(amount: float, ms: float) -> float:
    """`amount` per second, in units of 10^12 (TB/s from bytes, TFLOP/s from FLOPs)."""
    return amount / (ms * 1e-3) / 1e12


def step_figures(a: Arch, entry: dict, census: dict, pk: dict) -> dict:
    """One decode step against the roofline, and its kernel census split."""
    b, _, ctx = POINT
    w = a.streamed_bytes_per_step()
    attn = census["sdpa_backend"]
    ms = float(entry.get(f"ms_{attn}", entry["ms"]))   # the step with the census's backend
    kind = census["kernel_time_by_kind_ms"]
    copy = pk["copy_tb_s"]
    return {"tp": a.tp, "weights_gb": w / 1e9, "kv_gb": b * ctx * a.kv_bytes_per_token() / 1e9,
            "ms": ms, "attn": attn,
            "roofline_ms": w / (pk["datasheet_hbm_tb_s"] * 1e12) * 1e3,
            "roofline_ms_copy": None if copy is None else w / (copy * 1e12) * 1e3,
            "effective_tb_s": per_s(w, ms),
            "kernel_ms": census["kernel_time_ms"], "kernels_per_layer": census["kernels_per_layer"],
            "gemm_ms": kind["gemm"], "gemm_tb_s": per_s(w, kind["gemm"]),
            "glue_ms": kind["norm"] + kind["elementwise/copy"], "attention_ms": kind["attention"],
            "gaps_ms": ms - census["kernel_time_ms"]}


def gemm_only_c(steps: dict) -> list[dict]:
    return [{"draft": d, "target": t, "draft_gemm_ms": steps[d]["gemm_ms"],
             "target_gemm_ms": steps[t]["gemm_ms"], "c": steps[d]["gemm_ms"] / steps[t]["gemm_ms"]}
            for d, t in PAIRS]


def tp_ratios(steps: dict) -> list[dict]:
    """Why not 0.5: the glue and attention of a shard do not halve with its weights."""
    out = []
    for k, s in steps.items():
        if s["tp"] == 2:
            one = base_name(k, s["tp"])
            out.append({"tp2": k, "tp1": one, "tp2_ms": s["ms"], "tp1_ms": steps[one]["ms"],
                        "ratio": s["ms"] / steps[one]["ms"]})
    return out


def monotonicity(dec: dict) -> dict:
    """A step that gets shorter as the batch grows is cuBLAS's kernel choice or noise, not more
    work: how often, and by how much at most, the table shows one."""
    pairs, drops = 0, []
    for k, entries in dec.items():
        for q, ctx in sorted({(q, ctx) for _, q, ctx in entries}):
            line = sorted((b, float(e["ms"])) for (b, q2, c2), e in entries.items() if (q2, c2) == (q, ctx))
            for (b0, t0), (b1, t1) in zip(line, line[1:]):
                pairs += 1
                if t1 < t0:
                    drops.append({"model": k, "query": q, "context": ctx, "batch": b0, "ms": t0,
                                  "next_batch": b1, "next_ms": t1, "drop_pct": 100 * (1 - t1 / t0)})
    largest = max(drops, key=lambda d: d["drop_pct"], default=None)
    return {"pairs": pairs, "drops": len(drops), "largest": largest}


def prefill_flops(a: Arch, tokens: int) -> dict:
    linear = 2 * tokens * a.layers * a.layer_params()
    lm_head = 2 * a.hidden * a.vocab
    attention = 2 * a.head_dim * a.n_q * a.layers * tokens * (tokens + 1)
    return {"linear": linear, "lm_head": lm_head, "attention": attention,
            "total": linear + lm_head + attention}


def prefill_figures(key: str, m: dict, pk: dict) -> dict:
    """How close the longest prefill gets to the GPU's GEMM peak (it is compute-bound)."""
    a = arch(key, m)
    ms = float(next(p["ms"] for p in m["prefill"] if int(p["tokens"]) == PREFILL_TOKENS))
    f = prefill_flops(a, PREFILL_TOKENS)
    rate = per_s(f["total"], ms)
    gemm = pk["gemm_tflops"]
    return {"model": key, "tokens": PREFILL_TOKENS, "ms": ms, "flops": f,
            "tflops_2nt": per_s(2 * a.params() * PREFILL_TOKENS, ms), "tflops": rate,
            "share_of_gemm_peak": None if gemm is None else rate / gemm,
            "share_of_datasheet": rate / pk["datasheet_bf16_tflops"]}


def kv_per_token(key: str, m: dict) -> dict:
    a = arch(key, m)
    return {"model": key, "layers": a.layers, "kv_heads": a.n_kv, "head_dim": a.head_dim,
            "bytes": a.kv_bytes_per_token()}


def bench() -> dict:
    path = modelspec.shipped_table(DEVICE)
    doc = json.loads(Path(path).read_text())
    models, dec = doc["models"], rows(path)
    pk = peaks(doc["device"])
    census = {c["model"]: c for c in doc["kernel_census"]}
    if any((c["batch"], c["query"], c["context"]) != POINT for c in census.values()):
        sys.exit(f"bench_roofline: the kernel census is not at (batch, query, context) {POINT}")
    steps = {k: step_figures(arch(k, m), dec[k][POINT], census[k], pk) for k, m in models.items() if k in census}
    return {"table": Path(path).name, "device_name": doc["device"],
            "point": dict(zip(("batch", "query", "context"), POINT)), "peaks": pk, "steps": steps,
            "gemm_only_c": gemm_only_c(steps), "tp_ratio": tp_ratios(steps), "monotonicity": monotonicity(dec),
            "prefill": [prefill_figures(t, models[t], pk) for _, t in PAIRS],
            "kv_per_token": [kv_per_token(k, models[k]) for k in KV_MODELS]}


def _measured(x, fmt: str) -> str:
    return NOT_MEASURED if x is None else fmt.format(x)


def render_step(key: str, s: dict, pk: dict, point: dict, full: bool) -> list[str]:
    copy = (f"at the {pk['copy_tb_s']:.2f} TB/s that device-to-device copies reach on an H100 "
            f"(`{Path(pk['measured']).name}`), {s['roofline_ms_copy']:.2f} ms"
            if pk["copy_tb_s"] is not None else
            f"at the copy bandwidth measured on an H100: {NOT_MEASURED} (`benchmarks/gpu_peaks.py`)")
    census = (f"GEMMs {s['gemm_ms']:.2f} ms ({s['gemm_tb_s']:.2f} TB/s of weights), norms and "
              f"elementwise/copy kernels {s['glue_ms']:.2f} ms, attention {s['attention_ms']:.2f} ms")
    if not full:
        copy = (f"{s['roofline_ms_copy']:.2f} ms at the measured copy bandwidth" if pk["copy_tb_s"] is not None
                else f"at the measured copy bandwidth: {NOT_MEASURED}")
        return [f"- **{key}**, same point: {s['weights_gb']:.2f} GB of weights, a roofline of "
                f"{s['roofline_ms']:.2f} ms at the datasheet peak ({copy}), measured {s['ms']:.2f} ms, "
                f"an effective {s['effective_tb_s']:.2f} TB/s. Census ({s['kernels_per_layer']:.1f} kernels "
                f"per layer): {census}, gaps {s['gaps_ms']:.2f} ms."]
    return [f"- **{key}**, batch-{point['batch']} decode at context {point['context']}: the step reads "
            f"{s['weights_gb']:.2f} GB of weights. At the {pk['datasheet_hbm_tb_s']:.2f} TB/s peak of the "
            f"{pk['datasheet']} that takes at least {s['roofline_ms']:.2f} ms; {copy}. "
            f"The measured step, {s['ms']:.2f} ms, is an effective {s['effective_tb_s']:.2f} TB/s "
            f"(attention also reads {s['kv_gb']:.2f} GB of KV cache, left out of these figures).",
            f"- Its kernel census (the same step run eagerly, {s['attn']} attention): {s['kernel_ms']:.2f} ms "
            f"of kernel time, {s['kernels_per_layer']:.1f} kernels per layer: {census}. A batch-1 GEMM is "
            f"a GEMV that reads each weight once, so its TB/s is how close it runs to the memory limit. "
            f"The other {s['gaps_ms']:.2f} ms of the measured (graph-replayed) step is gaps between kernels."]


def render(r: dict) -> str:
    pk, s, mono = r["peaks"], r["steps"], r["monotonicity"]
    md = [f"H100 table `{r['table']}` ({r['device_name']}), decode at batch {r['point']['batch']}, "
          f"{r['point']['query']} query token, context {r['point']['context']} unless noted:", ""]
    for i, k in enumerate(STEP_MODELS):
        md += render_step(k, s[k], pk, r["point"], full=i == 0)
    md.append("- GEMM-only c (draft GEMM time / target GEMM time in the census: c with every non-GEMM "
              "cost removed, a lower bound): " + "; ".join(
                  f"{c['draft']} / {c['target']}: {c['draft_gemm_ms']:.2f} / {c['target_gemm_ms']:.2f} "
                  f"= {c['c']:.3f}" for c in r["gemm_only_c"]) + ".")
    md.append("- A TP=2 shard's step (forward pass, without its modelled all-reduce) / the TP=1 step: " + "; ".join(
        f"{t['tp2']} {t['tp2_ms']:.2f} ms / {t['tp1']} {t['tp1_ms']:.2f} ms = {t['ratio']:.2f}x"
        for t in r["tp_ratio"]) + ".")
    big = mono["largest"]
    md.append(f"- Neighbouring batch sizes (same model, query tokens and context, every entry of the "
              f"table) where the larger batch's step is the shorter: {mono['drops']} of {mono['pairs']} pairs"
              + ("." if big is None else
                 f"; the largest drop is {big['drop_pct']:.1f}% ({big['model']}, q={big['query']}, context "
                 f"{big['context']}: {big['ms']:.2f} ms at b={big['batch']}, {big['next_ms']:.2f} ms at "
                 f"b={big['next_batch']})."))
    for p in r["prefill"]:
        f = p["flops"]
        gemm = (f"{100 * p['share_of_gemm_peak']:.0f}% of the {pk['gemm_tflops']:.0f} TFLOP/s a bf16 GEMM "
                f"reaches on an H100 (`{Path(pk['measured']).name}`)" if pk["gemm_tflops"] is not None else
                f"share of the bf16 GEMM throughput measured on an H100: {NOT_MEASURED}")
        md.append(f"- {p['model']} prefill of {p['tokens']} tokens (one sequence): {p['ms']:.1f} ms for "
                  f"{f['total'] / 1e12:.0f} TFLOP (each layer weight once per token, the lm_head for the last "
                  f"token, causal attention; {f['attention'] / 1e12:.0f} of them attention), "
                  f"{p['tflops']:.0f} TFLOP/s (2 x parameters x tokens would give {p['tflops_2nt']:.0f}): "
                  f"{gemm}; {100 * p['share_of_datasheet']:.0f}% of the datasheet's dense "
                  f"{pk['datasheet_bf16_tflops']:.0f} TFLOP/s.")
    md.append("- KV cache per token (2 (K and V) x layers x KV heads x head dim x 2 bytes, bf16): " + "; ".join(
        f"{k['model']} 2 x {k['layers']} x {k['kv_heads']} x {k['head_dim']} x 2 = {k['bytes']} B "
        f"({k['bytes'] / 1024:.0f} KiB)" for k in r["kv_per_token"]) + ".")
    return "\n".join(md + ["", "`benchmarks/bench_roofline.py`"]) + "\n"


def main() -> None:
    run_and_write(OUT, bench, render)


if __name__ == "__main__":
    main()

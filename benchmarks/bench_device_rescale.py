"""How well moving a latency measured on one GPU to another predicts the measured time there.

    .venv/bin/python benchmarks/bench_device_rescale.py      # a second; reads the two tables
        -> benchmarks/results/device_rescale.{json,md}

The shipped tables lrsim/data/latency/h100_paper_models.json and h200_paper_models.json were
measured the same way (benchmarks/gpu_latency_profile.py, one process per model, same grid) on
an H100 and an H200. For every model entry and decode point (batch, query tokens, context) in
both, the measured H200 step (the table's "ms" plus its modelled all-reduce, as
modelspec.measured reads it, without the engine overhead the planner adds) is compared with

  rescaled   the H100 step x the bandwidth ratio catalog.bandwidth_ratio("H100", "H200")
             (the catalog's datasheet bandwidths): what hardware.rescale does to a configuration measured on H100
  roofline   modelspec.roofline(spec, H200, tp) without engine overhead: what the planner
             prices on a device with no measured table

roofline+oh  both with the planner's engine overhead (modelspec.ENGINE_OVERHEAD_MS) added,
             as `lr plan` prices them
Relative error = predicted / measured - 1 (negative: predicts the H200 faster than measured).
c1 = draft / target (32B, TP=1) decode step at batch 1, context 2048, for the paper's pairs:
measured on each device, rescaled (a common factor leaves the H100 ratio unchanged), roofline.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.write import run_and_write  # noqa: E402

from lrsim.plan import catalog, modelspec  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "device_rescale.json"
SRC, DST = "H100", "H200"
PAIRS = (("r1-distill-qwen-1.5b", "r1-distill-qwen-32b"), ("qwen3-1.7b", "qwen3-32b"))
C1_POINT = (1, 1, 2048)           # batch, query tokens, context


def rows(path: str) -> dict:
    """{model key: {(batch, query, context): the table's decode entry}}."""
    doc = json.loads(Path(path).read_text())
    return {k: {(int(r["batch"]), int(r.get("query", 1)), int(r["context"])): r for r in m["decode"]}
            for k, m in doc["models"].items()}


def step_ms(r: dict) -> float:
    """A decode entry's step: its forward pass plus its modelled all-reduce (TP=2 entries)."""
    return float(r["ms"]) + float(r.get("allreduce_ms_model", 0.0))


def steps(path: str) -> dict:
    """{model key: {(batch, query, context): ms incl. the modelled all-reduce}}."""
    return {k: {p: step_ms(r) for p, r in m.items()} for k, m in rows(path).items()}


def spec_of(key: str, entry: dict) -> tuple:
    """The shipped ModelSpec of a table entry (key 'name' or 'name-tp2') and its TP."""
    tp = int(entry.get("tp", 1))
    return modelspec.load(base_name(key, tp)), tp


def base_name(key: str, tp: int) -> str:
    """A table entry's model name: its key without the '-tp2' of a TP=2 shard."""
    return key[: -len(f"-tp{tp}")] if key.endswith(f"-tp{tp}") else key


def roofline_ms(spec, tp: int, point: tuple) -> float:
    b, q, ctx = point
    r = modelspec.roofline(spec, catalog.get(DST), tp, overhead_ms=0.0)
    return r.forward(b * q, 0, b, float(b * ctx)) * 1e3


def err(pred: float, meas: float) -> float:
    return pred / meas - 1.0


def bench() -> dict:
    p_src, p_dst = modelspec.shipped_table(SRC), modelspec.shipped_table(DST)
    src, dst = steps(p_src), steps(p_dst)
    entries = json.loads(Path(p_dst).read_text())["models"]
    ratio = catalog.bandwidth_ratio(SRC, DST)
    models = {}
    for key in (k for k in dst if k in src):
        spec, tp = spec_of(key, entries[key])
        points = sorted(set(src[key]) & set(dst[key]))
        resc = [err(src[key][p] * ratio, dst[key][p]) for p in points]
        roof = [err(roofline_ms(spec, tp, p), dst[key][p]) for p in points]
        oh = modelspec.ENGINE_OVERHEAD_MS
        roof_oh = [err(roofline_ms(spec, tp, p) + oh, dst[key][p] + oh) for p in points]
        speed = [src[key][p] / dst[key][p] for p in points]
        b1 = [p for p in points if p[0] == 1 and p[1] == 1]
        models[key] = {
            "tp": tp, "points": len(points),
            "measured_speedup_median": statistics.median(speed),
            "measured_speedup_min": min(speed), "measured_speedup_max": max(speed),
            "measured_speedup_batch1_decode_median": statistics.median(
                src[key][p] / dst[key][p] for p in b1),
            "rescaled_err_median": statistics.median(resc),
            "rescaled_err_max_abs": max(resc, key=abs),
            "rescaled_err_max_at": dict(zip(("batch", "query", "context"),
                                            points[max(range(len(points)), key=lambda i: abs(resc[i]))])),
            "roofline_err_median": statistics.median(roof),
            "roofline_err_max_abs": max(roof, key=abs),
            "roofline_with_overhead_err_median": statistics.median(roof_oh)}
    c1 = []
    for draft, target in PAIRS:
        def ratio_of(tab):
            return tab[draft][C1_POINT] / tab[target][C1_POINT]
        roof = (roofline_ms(modelspec.load(draft), 1, C1_POINT)
                / roofline_ms(modelspec.load(target), 1, C1_POINT))
        c1.append({"draft": draft, "target": target, "h100_measured": ratio_of(src),
                   "h200_measured": ratio_of(dst),
                   "h200_rescaled": (src[draft][C1_POINT] * ratio) / (src[target][C1_POINT] * ratio),
                   "h200_roofline": roof})
    return {"source_table": Path(p_src).name, "target_table": Path(p_dst).name,
            "bandwidth_ratio": ratio, "bandwidth_speedup": 1.0 / ratio,
            # the catalog's datasheet bandwidths (TB/s) and achieved fractions the ratio comes from
            "bandwidth_tb_s": {k: catalog.get(k).hbm_tb_s for k in (SRC, DST)},
            "bandwidth_efficiency": {k: catalog.get(k).efficiency for k in (SRC, DST)},
            "c1_point": {"batch": C1_POINT[0], "query": C1_POINT[1], "context": C1_POINT[2]},
            "models": models, "c1": c1}


def _bandwidths(res: dict) -> str:
    """'4.8 / 3.35 TB/s': the catalog's bandwidths, destination over source (and the achieved
    fractions where they differ: then they do not cancel)."""
    bw, eff = res["bandwidth_tb_s"], res["bandwidth_efficiency"]
    same = eff[DST] == eff[SRC]
    return (f"{bw[DST]:.3g} / {bw[SRC]:.3g} TB/s" if same else
            f"{bw[DST]:.3g} x {eff[DST]:.2f} / {bw[SRC]:.3g} x {eff[SRC]:.2f} TB/s")


def render(res: dict) -> str:
    pct = lambda v: f"{v * 100:+.1f}%"  # noqa: E731
    md = [f"Measured H200 decode steps vs predictions from the H100 table ({res['source_table']} ->"
          f" {res['target_table']}; step = forward pass + modelled all-reduce, no engine overhead;"
          f" error = predicted / measured - 1). Bandwidth rescaling assumes every step "
          f"{res['bandwidth_speedup']:.3f}x faster ({_bandwidths(res)}).", "",
          "| model | TP | points | measured H100/H200 (median, min-max) | rescaled: median / max error "
          "| H200 roofline: median / max error | roofline+2 ms: median |",
          "|---|---|---|---|---|---|---|"]
    for k, m in res["models"].items():
        md.append(f"| {k} | {m['tp']} | {m['points']} | {m['measured_speedup_median']:.2f}x "
                  f"({m['measured_speedup_min']:.2f}-{m['measured_speedup_max']:.2f}) | "
                  f"{pct(m['rescaled_err_median'])} / {pct(m['rescaled_err_max_abs'])} | "
                  f"{pct(m['roofline_err_median'])} / {pct(m['roofline_err_max_abs'])} | "
                  f"{pct(m['roofline_with_overhead_err_median'])} |")
    p = res["c1_point"]
    worst = {(m["rescaled_err_max_at"]["batch"], m["rescaled_err_max_at"]["query"],
              m["rescaled_err_max_at"]["context"]) for m in res["models"].values()}
    md += ["", "Largest rescaling error at (batch, query tokens, context) "
           + ", ".join(str(w) for w in sorted(worst)) + ": compute-bound, where the two GPUs' equal "
           "BF16 compute, not their bandwidth, sets the step."]
    md += ["", f"c1 = draft / target (TP=1) step at batch {p['batch']}, context {p['context']}:", "",
           "| pair | H100 measured | H200 measured | H200 rescaled | H200 roofline |",
           "|---|---|---|---|---|"]
    for c in res["c1"]:
        md.append(f"| {c['draft']} / {c['target']} | {c['h100_measured']:.3f} | "
                  f"{c['h200_measured']:.3f} | {c['h200_rescaled']:.3f} | {c['h200_roofline']:.3f} |")
    md += ["", "`benchmarks/bench_device_rescale.py`"]
    return "\n".join(md) + "\n"


def main() -> None:
    run_and_write(OUT, bench, render)


if __name__ == "__main__":
    main()

"""The figures docs/gpu-latency-profile.md and the README quote from the shipped GPU latency tables.

    .venv/bin/python benchmarks/bench_latency_table.py      # a second; reads the two tables
        -> benchmarks/results/latency_table.{json,md}, benchmarks/results/latency_table_summary.md

For each table measured on a device the planner knows (modelspec.MEASURED_TABLES:
lrsim/data/latency/h100_paper_models.json, h200_paper_models.json), decode entries looked up by
(batch, query tokens, context) as bench_device_rescale reads them:

  key numbers  every entry at context 2048 for the (batch, query tokens) of KEY_CELLS: the
               entry's 'ms' (a TP=2 entry: one GPU's shard), its 'allreduce_ms_model' apart,
               and 'fits_real' (false: the real model plus that KV cache would not fit in 90% of
               the GPU); with the entry's 'params_b' and 'streamed_gb_per_decode_step'
  prefill      every TP=1 entry's prefill entries (tokens, ms): one sequence
  c            draft step / target step, q=1, at the (batch, context) of C_POINTS, for the
               paper's pairs with the target at TP=1 and at TP=2 (shard + modelled all-reduce)
  verify       each pair's TP=1 target: the q=8 step / the q=1 step at context 2048, per batch
               of VERIFY_BATCHES

latency_table.md renders all of it per device (docs/gpu-latency-profile.md quotes it);
latency_table_summary.md the 32B targets' batch-1 step at TP=1 and TP=2 and c at batch 1 (the
README quotes it).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_device_rescale import PAIRS, base_name, rows, step_ms  # noqa: E402
from benchmarks.write import write_results  # noqa: E402
from lrcore.outputs import write_atomic  # noqa: E402

from lrsim.plan import modelspec  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "latency_table.json"
SUMMARY = OUT.with_name("latency_table_summary.md")
CONTEXT = 2048
KEY_CELLS = ((1, 1), (8, 1), (32, 1), (64, 1), (1, 8), (64, 8))        # (batch, query tokens)
C_POINTS = ((1, 2048), (8, 2048), (32, 2048), (64, 2048), (1, 8192), (64, 8192))  # (batch, context)
VERIFY_Q, VERIFY_BATCHES = 8, (1, 32, 64)


def device_figures(device: str) -> dict:
    path = modelspec.shipped_table(device)
    doc = json.loads(Path(path).read_text())
    models, dec = doc["models"], rows(path)
    names = list(dict.fromkeys(base_name(k, int(m.get("tp", 1))) for k, m in models.items()))
    order = sorted(models, key=lambda k: (names.index(base_name(k, int(models[k].get("tp", 1)))),
                                          int(models[k].get("tp", 1))))
    decode = {}
    for k in order:
        cells = []
        for b, q in KEY_CELLS:
            r = dec[k][(b, q, CONTEXT)]
            cells.append({"batch": b, "query": q, "context": CONTEXT, "ms": float(r["ms"]),
                          "allreduce_ms": r.get("allreduce_ms_model"), "fits_real": bool(r["fits_real"])})
        decode[k] = {"tp": int(models[k].get("tp", 1)), "params_b": models[k]["params_b"],
                     "streamed_gb": models[k]["streamed_gb_per_decode_step"], "cells": cells}
    prefill = {k: [{"tokens": int(r["tokens"]), "ms": float(r["ms"])} for r in models[k]["prefill"]]
               for k in order if int(models[k].get("tp", 1)) == 1}
    def step(key, b, q, L):
        return step_ms(dec[key][(b, q, L)])

    c, verify = [], []
    for draft, target in PAIRS:
        for tp in (1, 2):
            key = modelspec.table_key(modelspec.load(target), tp, path)
            c.append({"draft": draft, "target": key, "tp": tp, "points": [
                {"batch": b, "context": L, "c": step(draft, b, 1, L) / step(key, b, 1, L)} for b, L in C_POINTS]})
        verify.append({"target": target, "query": VERIFY_Q, "context": CONTEXT, "points": [
            {"batch": b, "ratio": step(target, b, VERIFY_Q, CONTEXT) / step(target, b, 1, CONTEXT)}
            for b in VERIFY_BATCHES]})
    return {"table": Path(path).name, "device_name": doc["device"], "decode": decode,
            "prefill": prefill, "c": c, "verify": verify}


def bench() -> dict:
    return {"context": CONTEXT, "devices": {d: device_figures(d) for d in modelspec.MEASURED_TABLES}}


def _row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(head, body) -> list[str]:
    return [_row(head), _row(["---"] * len(head)), *(_row(r) for r in body)]


def _range(vals, fmt="{:.2f}") -> str:
    lo, hi = fmt.format(min(vals)), fmt.format(max(vals))
    return lo if lo == hi else f"{lo}-{hi}"


def render_device(dev: str, d: dict, context: int) -> list[str]:
    first = next(iter(d["decode"].values()))["cells"]
    head = ["model", "params (B)", "weights read per step (GB)"] + [
        f"b={x['batch']}" + (f", q={x['query']}" if x["query"] != 1 else "") for x in first]

    def cell(x):
        s = f"{x['ms']:.2f}" + ("" if x["fits_real"] else "*")
        return s + (f" (+{x['allreduce_ms']:.2f})" if x["allreduce_ms"] is not None else "")

    md = [f"**{dev}** (`{d['table']}`, {d['device_name']})", "",
          f"Decode, context {context}, ms per step (q=1 unless noted). `*` = the real model plus this KV "
          "cache would not fit in 90% of this GPU ('fits_real' false). TP=2 rows: one GPU's shard, "
          "the modelled all-reduce in parentheses: add it to get the step time.", ""]
    md += _table(head, [[k, f"{m['params_b']:.2f}", f"{m['streamed_gb']:.2f}", *map(cell, m["cells"])]
                        for k, m in d["decode"].items()])
    tokens = [p["tokens"] for p in next(iter(d["prefill"].values()))]
    md += ["", "Prefill of one sequence (ms):", ""]
    md += _table(["model", *(f"{t} tokens" for t in tokens)],
                 [[k, *(f"{p['ms']:.1f}" for p in ps)] for k, ps in d["prefill"].items()])
    md += ["", "Draft/target per-token cost ratio c (draft decode step / target decode step, same batch, "
           "q=1; TP=2: the target's shard plus its modelled all-reduce):", ""]
    pair = lambda c: (f"{c['draft']} / {c['target']} (TP={c['tp']}"  # noqa: E731
                      + (", incl. modelled all-reduce)" if c["tp"] > 1 else ")"))
    md += _table(["pair", *(f"b={p['batch']}, L={p['context']}" for p in d["c"][0]["points"])],
                 [[pair(c), *(f"{p['c']:.3f}" for p in c["points"])] for c in d["c"]])
    v = d["verify"]
    by_batch = [(p["batch"], [x["points"][i]["ratio"] for x in v]) for i, p in enumerate(v[0]["points"])]
    md += ["", f"Verifying {v[0]['query']} tokens per sequence instead of 1 costs the 32B TP=1 targets ("
           + ", ".join(x["target"] for x in v) + ") "
           + ", ".join(f"x{_range(r)} at batch {b}" for b, r in by_batch) + f" (context {v[0]['context']})."]
    return md


def render(res: dict) -> str:
    md = []
    for dev, d in res["devices"].items():
        md += render_device(dev, d, res["context"]) + [""]
    md += ["`benchmarks/bench_latency_table.py`"]
    return "\n".join(md) + "\n"


def render_summary(res: dict) -> str:
    """The 32B targets' batch-1 decode step (TP=1; TP=2 shard + modelled all-reduce) and c at batch 1."""
    devs = res["devices"]
    some = next(iter(devs.values()))
    targets = [(c1["target"], c2["target"]) for c1, c2 in zip(some["c"][0::2], some["c"][1::2])]
    head = ["device"]
    for t1, t2 in targets:
        head += [f"{t1} TP=1 (ms)", f"{t2}: shard + all-reduce (ms)"]
    head += [f"c, {c['draft']} / {c['target']}" for c in some["c"] if c["tp"] == 1]
    body = []
    for dev, d in devs.items():
        b1 = {k: next(x for x in m["cells"] if x["batch"] == 1 and x["query"] == 1)
              for k, m in d["decode"].items()}
        row = [dev]
        for t1, t2 in targets:
            row += [f"{b1[t1]['ms']:.2f}", f"{b1[t2]['ms']:.2f} + {b1[t2]['allreduce_ms']:.2f}"]
        row += [f"{c['points'][0]['c']:.3f}" for c in d["c"] if c["tp"] == 1]
        body.append(row)
    p = some["c"][0]["points"][0]
    return "\n".join([f"Decode at batch {p['batch']}, one query token, context {p['context']}, from the "
                      "shipped tables (forward pass only; TP=2: one GPU's shard + the modelled "
                      "all-reduce); c = draft step / target step (TP=1) at the same point:", "",
                      *_table(head, body), "", "`benchmarks/bench_latency_table.py`"]) + "\n"


def main() -> None:
    res = bench()
    write_results(OUT, res, render)
    write_atomic(SUMMARY, render_summary(res))
    print(render(res), end="")
    print(render_summary(res), end="")


if __name__ == "__main__":
    main()

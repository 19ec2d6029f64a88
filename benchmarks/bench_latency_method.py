"""The method figures of docs/gpu-latency-profile.md ("How"): what each measured latency file
records about its run, and the checks the H100 table carries on its own method, read from the
files rather than typed by hand. bench_roofline.py renders the roofline figures the same way.

    .venv/bin/python benchmarks/bench_latency_method.py   # a second; reads JSON only
        -> benchmarks/results/latency_method.{json,md}

Inputs
  FILES   the shipped H100 and H200 tables (lrsim/data/latency/) and the held-out / repeat steps
          (benchmarks/results/*_measured.json), all written by benchmarks/gpu_latency_profile.py:
          each file's `env`, `date`, models, decode entries and `profile_seconds` (the time spent
          profiling each model; the calls' wall time, with the census and checks, is not recorded)
  table   the H100 table alone: its decode grid, per-entry `graph`, `reps`, `ms_p10`, `attn`,
          `ms_flash` / `ms_cudnn`, `fits_real` and `allreduce_ms_model`; `transformers_check`
          (parameter counts); `validation.cycling` (the memory trick against all layers distinct)

Figures
  files      environment, date, models, decode points and profiled seconds of each file
  grid       batches, query tokens and contexts of the table, entries per model, prefill lengths;
             graph-captured entries, timed replays per entry, entries whose 10th percentile is
             within 1% of the median
  memory     for the 32B TP=1 targets: the real model's bf16 weights (params x 2 bytes) and the KV
             tokens that fit beside them in FIT_SHARE of the GPU less FIT_RESERVE_BYTES
             (gpu_latency_profile.fits_real, with the GPU's memory as `env` records it); the first
             batch at context CONTEXT whose `fits_real` is false; how many entries' flags that
             formula reproduces
  shapes     parameter counts (ours = transformers'), layers, bf16 bytes of one layer's weights
             (Arch.layer_params x 2) against the H100's L2
  cycling    `validation.cycling` as recorded
  attention  the two backends at EXAMPLES; in how many decode entries per batch and context
             cuDNN is the faster; in how many prefills
  all-reduce gpu_latency_profile's ALLREDUCE_* model, and how many TP=2 entries' recorded
             `allreduce_ms_model` it reproduces
"""
from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import gpu_latency_profile as glp  # noqa: E402
from benchmarks.bench_latency_table import CONTEXT  # noqa: E402
from benchmarks.bench_roofline import DEVICE, arch  # noqa: E402
from benchmarks.write import run_and_write  # noqa: E402

from lrsim.plan import modelspec  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "latency_method.json"
RESULTS = OUT.parent
FILES = (Path(modelspec.shipped_table(DEVICE)), Path(modelspec.shipped_table("H200")),
         RESULTS / "h100_heldout_measured.json", RESULTS / "h100_repeat_measured.json",
         RESULTS / "h200_heldout_measured.json")
L2_MB = 50                    # the H100's L2 cache (NVIDIA's H100 datasheet / whitepaper)
EXAMPLES = (("r1-distill-qwen-32b", (1, 1, 8192)), ("r1-distill-qwen-32b", (64, 1, 8192)))
P10_WITHIN = 0.01


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _points(doc: dict) -> dict:
    return {k: sorted((e["batch"], e["query"], e["context"]) for e in m["decode"]) for k, m in doc["models"].items()}


def file_row(path: Path, table: dict) -> dict:
    d = _load(path)
    e = d["env"]
    cudnn = int(e["cudnn"])
    return {"file": str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path),
            "device": e["device_name"], "sm_count": e["sm_count"], "memory_gib": e["memory_gib"],
            "driver": e["driver"], "torch": e["torch"], "cuda": e["cuda"],
            "cudnn": f"{cudnn // 10000}.{cudnn // 100 % 100}", "date": d["date"][:10], "models": len(d["models"]),
            "decode_points": sum(len(m["decode"]) for m in d["models"].values()),
            "profile_s": round(sum(m["profile_seconds"] for m in d["models"].values()), 1),
            "table_points": _points(d) == _points(table)
            and all(sorted(p["tokens"] for p in d["models"][k]["prefill"])
                    == sorted(p["tokens"] for p in table["models"][k]["prefill"]) for k in d["models"])}


def grid(table: dict) -> dict:
    dec = [e for m in table["models"].values() for e in m["decode"]]
    per = {len(m["decode"]) for m in table["models"].values()}
    pre = [p for m in table["models"].values() for p in m["prefill"]]
    return {"batches": sorted({e["batch"] for e in dec}), "queries": sorted({e["query"] for e in dec}),
            "contexts": sorted({e["context"] for e in dec}), "per_model": sorted(per),
            "skipped": sum("skipped" in e for e in dec + pre),
            "prefill_tokens": sorted({p["tokens"] for p in pre}), "entries": len(dec) + len(pre),
            "graph": sum(e["graph"] is True for e in dec + pre),
            "reps": [min(e["reps"] for e in dec + pre), max(e["reps"] for e in dec + pre)],
            "p10_within": sum(e["ms_p10"] >= (1 - P10_WITHIN) * e["ms"] for e in dec + pre)}


def memory(table: dict) -> dict:
    dev = table["env"]["memory_gib"] * 2**30
    out, agree, n = [], 0, 0
    for k, m in table["models"].items():
        a = arch(k, m)
        for e in m["decode"]:
            n += 1
            agree += glp.fits_real(a, e["batch"] * (e["context"] + e["query"]), dev) == e["fits_real"]
        if a.tp == 1 and a.layers == 64:
            free = glp.FIT_SHARE * dev - 2 * a.params() - glp.FIT_RESERVE_BYTES
            unfit = [e["batch"] for e in m["decode"] if e["context"] == CONTEXT and e["query"] == 1
                     and not e["fits_real"]]
            out.append({"model": k, "weights_gb": 2 * a.params() / 1e9, "kv_bytes": a.kv_bytes_per_token(),
                        "kv_tokens": int(free // a.kv_bytes_per_token()),
                        "first_unfit_batch": min(unfit, default=None)})
    return {"device_gib": table["env"]["memory_gib"], "share": glp.FIT_SHARE,
            "reserve_gb": glp.FIT_RESERVE_BYTES / 1e9, "context": CONTEXT, "targets": out,
            "flags_reproduced": agree, "flags": n}


def shapes(table: dict) -> list[dict]:
    check = table["transformers_check"]
    return [{"model": k, "params": check[k]["ours"], "transformers": check[k]["transformers"],
             "match": check[k]["match"], "layers": a.layers, "tied": a.tie_embeddings,
             "layer_mb": 2 * a.layer_params() / 1e6}
            for k, m in table["models"].items() if (a := arch(k, m)).tp == 1]


def cycling(table: dict) -> dict:
    c = table["validation"]["cycling"]
    out = {"model": c["model"], "weights": {}, "kv": {}}
    for key, ms in c.items():
        if m := re.fullmatch(r"decode_b(\d+)_L(\d+)_(weight|kv)_sets_(\d+)_ms", key):
            part = out["weights" if m[3] == "weight" else "kv"]
            part.update(batch=int(m[1]), context=int(m[2]))
            part.setdefault("ms", {})[m[4]] = ms
    return out


def attention(table: dict) -> dict:
    wins = defaultdict(lambda: [0, 0])
    for m in table["models"].values():
        for e in m["decode"]:
            w = wins[f"{e['batch']},{e['context']}"]
            w[0] += e["attn"] == "cudnn"
            w[1] += 1
    pre = [p for m in table["models"].values() for p in m["prefill"]]
    ex = []
    for k, pt in EXAMPLES:
        e = next(e for e in table["models"][k]["decode"] if (e["batch"], e["query"], e["context"]) == pt)
        ex.append({"model": k, "batch": pt[0], "query": pt[1], "context": pt[2],
                   "flash_ms": e["ms_flash"], "cudnn_ms": e["ms_cudnn"]})
    return {"examples": ex, "cudnn_wins": dict(wins),
            "prefill_cudnn": sum(p["attn"] == "cudnn" for p in pre), "prefills": len(pre)}


EXACT_MASK = RESULTS / "h100_exact_verify_mask.json"   # two gpu_latency_profile.py runs (its "commands")


def exact_mask(table: dict) -> dict | None:
    """The verify step with the exact bottom-right causal mask against the GQA-packed one the
    tables use, both timed in one H100 run (EXACT_MASK), and the shipped table's packed entry."""
    if not EXACT_MASK.exists():
        return None
    doc = _load(EXACT_MASK)
    (k, packed), = doc["packed"]["models"].items()
    pe, ee = packed["decode"][0], doc["exact"]["models"][k]["decode"][0]
    pt = (pe["batch"], pe["query"], pe["context"])
    te = next(e for e in table["models"][k]["decode"] if (e["batch"], e["query"], e["context"]) == pt)
    return {"model": k, "batch": pt[0], "query": pt[1], "context": pt[2], "attn": pe["attn"],
            "device": doc["packed"]["env"]["device_name"], "packed_ms": pe["ms"], "exact_ms": ee["ms"],
            "table_ms": te["ms"], "table_attn": te["attn"]}


def allreduce(table: dict) -> dict:
    n = agree = 0
    for k, m in table["models"].items():
        a = arch(k, m)
        for e in m["decode"] if a.tp > 1 else ():
            n += 1
            agree += glp.allreduce_ms(a, e["batch"] * e["query"], e["batch"] * e["query"]) == e["allreduce_ms_model"]
    return {"per_layer": glp.ALLREDUCES_PER_LAYER, "latency_us": glp.ALLREDUCE_LATENCY_US,
            "bw_gb_s": glp.ALLREDUCE_BW_GBPS, "entries": n, "reproduced": agree}


def bench() -> dict:
    table = _load(FILES[0])
    return {"files": [file_row(p, table) for p in FILES], "grid": grid(table), "memory": memory(table),
            "shapes": shapes(table), "l2_mb": L2_MB, "cycling": cycling(table),
            "attention": attention(table), "exact_mask": exact_mask(table), "allreduce": allreduce(table)}


def _ints(xs) -> str:
    return "{" + ",".join(str(x) for x in xs) + "}"


def _table(head: list[str], body: list[list]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + \
        ["| " + " | ".join(str(c) for c in row) + " |" for row in body]


def render(r: dict) -> str:
    g, mem, cy, at, ar = r["grid"], r["memory"], r["cycling"], r["attention"], r["allreduce"]
    f0 = r["files"][0]["file"].rsplit("/", 1)[-1]
    md = ["Measured files (`env`, `date` and `profile_seconds` as each records them; profiled = the "
          "time spent profiling its models, without the checks and census):", ""]
    md += _table(["file", "device", "SMs", "GiB", "driver", "torch", "CUDA", "cuDNN", "measured", "models",
                  "decode steps", "profiled (s)"],
                 [[f"`{f['file'].rsplit('/', 1)[-1]}`", f["device"], f["sm_count"], f["memory_gib"], f["driver"],
                   f["torch"], f["cuda"], f["cudnn"], f["date"], f["models"], f["decode_points"], f["profile_s"]]
                  for f in r["files"]])
    same = [f"`{f['file'].rsplit('/', 1)[-1]}`" for f in r["files"][1:] if f["table_points"]]
    md += ["", f"Same models, decode steps and prefill lengths as `{f0}`: {', '.join(same) or 'none'}.", ""]
    md.append(f"`{f0}`: decode at batch {_ints(g['batches'])} x query tokens {_ints(g['queries'])} x context "
              f"{_ints(g['contexts'])}, {'/'.join(map(str, g['per_model']))} entries per model, "
              f"prefill of {_ints(g['prefill_tokens'])} tokens; {g['skipped']} skipped. "
              f"{g['graph']} of {g['entries']} entries graph-captured; {g['reps'][0]}-{g['reps'][1]} timed replays "
              f"each; the 10th percentile within {100 * P10_WITHIN:.0f}% of the median in {g['p10_within']} of "
              f"{g['entries']}.")
    for t in mem["targets"]:
        md.append(f"- {t['model']} on one GPU: {t['weights_gb']:.1f} GB of real weights leave room for "
                  f"{t['kv_tokens'] / 1000:.1f}k KV tokens ({t['kv_bytes'] // 1024} KiB each) in "
                  f"{100 * mem['share']:.0f}% of {mem['device_gib']} GiB less {mem['reserve_gb']:.0f} GB; "
                  f"at context {mem['context']} `fits_real` is false from batch {t['first_unfit_batch']}.")
    md.append(f"- That formula reproduces {mem['flags_reproduced']} of the {mem['flags']} `fits_real` flags.")
    md += ["", "Shapes: parameters (= transformers' own count: "
           + ("yes" if all(s["match"] for s in r["shapes"]) else "NO") + "), layers, one layer's bf16 weights "
           f"(the H100's L2 is {r['l2_mb']} MB):", ""]
    md += _table(["model", "params (B)", "layers", "tied embedding", "one layer (MB)"],
                 [[s["model"], f"{s['params'] / 1e9:.2f}", s["layers"], "yes" if s["tied"] else "no",
                   f"{s['layer_mb']:.0f}"] for s in r["shapes"]])
    w, kv = cy["weights"], cy["kv"]
    (ws, wa), (ks, ka) = (sorted(x["ms"].items(), key=lambda i: int(i[0])) for x in (w, kv))
    md += ["", f"Cycling check ({cy['model']}): batch {w['batch']}, context {w['context']}: {ws[1]:.2f} ms with "
           f"{ws[0]} weight sets, {wa[1]:.2f} ms with {wa[0]} (every layer distinct); batch {kv['batch']}, "
           f"context {kv['context']}: {ks[1]:.2f} ms with {ks[0]} KV buffers, {ka[1]:.2f} ms with {ka[0]}.", ""]
    md.append("Attention backends: " + "; ".join(
        f"{e['model']}, batch {e['batch']}, q={e['query']}, context {e['context']}: flash {e['flash_ms']:.1f} ms, "
        f"cuDNN {e['cudnn_ms']:.1f} ms" for e in at["examples"])
        + f". cuDNN is the faster in {at['prefill_cudnn']} of {at['prefills']} prefills, and in these decode "
        "entries (all models and query tokens):")
    md.append("")
    md += _table(["batch"] + [f"context {c}" for c in g["contexts"]],
                 [[b] + ["{}/{}".format(*at["cudnn_wins"][f"{b},{c}"]) for c in g["contexts"]] for b in g["batches"]])
    x = r.get("exact_mask")
    md += ["", "Exact verify mask: " + (
        f"{x['model']}, batch {x['batch']}, q={x['query']}, context {x['context']}, {x['attn']} attention, "
        f"one run on the {x['device']} (`{EXACT_MASK.name}`): {x['exact_ms']:.1f} ms with the exact "
        f"bottom-right mask, {x['packed_ms']:.1f} ms GQA-packed ({x['exact_ms'] / x['packed_ms']:.1f}x); "
        f"the shipped table's packed step: {x['table_ms']:.1f} ms ({x['table_attn']})." if x else
        f"not measured (`{EXACT_MASK.name}`).")]
    md += ["", f"Modelled TP=2 all-reduce (`gpu_latency_profile.py`): {ar['per_layer']} per layer of tokens x hidden "
           f"x 2 bytes plus one logits gather, each {ar['latency_us']:g} µs + bytes / {ar['bw_gb_s']:g} GB/s; it "
           f"gives the recorded `allreduce_ms_model` of {ar['reproduced']} of the {ar['entries']} TP=2 entries.",
           "", "`benchmarks/bench_latency_method.py`"]
    return "\n".join(md) + "\n"


def main() -> None:
    run_and_write(OUT, bench, render)


if __name__ == "__main__":
    main()

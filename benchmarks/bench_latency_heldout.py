"""Does the shipped H100 latency table predict steps it did not measure?

    .venv/bin/python benchmarks/bench_latency_heldout.py      # a few seconds; reads three files
        -> benchmarks/results/latency_heldout.{json,md}

The planner prices a model on an H100 from the shipped table (lrsim/data/latency/
h100_paper_models.json: batch 1-64 x query tokens 1, 4, 8 x context 512, 2048, 8192). A serving
step rarely sits on that grid. Two files measured with the same script five days later, on a
freshly lent H100 (same model and driver), hold:

  h100_heldout_measured.json  steps off the grid: batches between the table's, 2 and 5 query
      tokens (an SD verify of 1 and 4 drafted tokens), contexts between its knots
      (gpu_latency_profile.py --models r1-distill-qwen-1.5b,qwen2.5-7b-instruct,
      r1-distill-qwen-32b --batches 1,3,6,12,24,48 --queries 1,2,5 --contexts 1024,2048,4096
      --prefill 256,1024,4096);
  h100_repeat_measured.json   the table's own grid again, for the same three models (the
      script's defaults): how far the same step moves between machines and days.

h200_heldout_measured.json holds the same off-grid steps measured on a lent H200, predicted from
the shipped H200 table the same three ways (no same-day grid there).

Each held-out step is predicted three ways (relative error = predicted / measured - 1, no engine
overhead on either side):

  fitted        what the planner prices (modelspec.measured -> sim/latency_kv.TabulatedKV): the
                positions' cost by token count plus the KV cache's by tokens read, fitted to the
                table's steps;
  interpolated  the table interpolated by batch x query tokens and mean context
                (sim/latency.Tabulated, what the planner priced before the KV term);
  roofline      the H100 roofline (modelspec.roofline), what it prices where no table applies.

"Same day" fits both table models to the repeat grid instead, so the day-to-day drift drops
out and what is left is the model's own error. The KV term was added after the interpolation's
errors here showed the batch x query collapse; its coefficients come from the grid alone.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.write import write_results  # noqa: E402

from lrsim.plan import catalog, modelspec  # noqa: E402
from lrsim.sim.latency import Tabulated  # noqa: E402
from lrsim.sim.latency_kv import TabulatedKV  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "latency_heldout.json"
TABLE = ROOT / "lrsim" / "data" / "latency" / "h100_paper_models.json"
HELDOUT = ROOT / "benchmarks" / "results" / "h100_heldout_measured.json"
REPEAT = ROOT / "benchmarks" / "results" / "h100_repeat_measured.json"
# the same off-grid steps on an H200 (the same command, --out h200_heldout_measured.json),
# against the shipped H200 table (no repeat of its grid: fitted, interpolated and roofline only)
H200_TABLE = ROOT / "lrsim" / "data" / "latency" / "h200_paper_models.json"
H200_HELDOUT = ROOT / "benchmarks" / "results" / "h200_heldout_measured.json"
DEVICE = "H100"
MODELS = ("fitted", "interpolated", "roofline")


def points(path: Path) -> dict:
    """{model: {"decode": {(batch, query, context): ms}, "prefill": {tokens: ms}}}."""
    doc = json.loads(path.read_text())
    return {k: {"decode": {(int(r["batch"]), int(r.get("query", 1)), int(r["context"])): float(r["ms"])
                           for r in m["decode"]},
                "prefill": {int(r["tokens"]): float(r["ms"]) for r in m.get("prefill", [])}}
            for k, m in doc["models"].items()}


def models_of(grid: dict, which=("fitted", "interpolated")) -> dict:
    """The table models of one grid ({(b, q, ctx): ms} and prefill), seconds in and out."""
    dec = [(b, q, c, ms / 1e3) for (b, q, c), ms in sorted(grid["decode"].items())]
    pre = [(n, ms / 1e3) for n, ms in sorted(grid["prefill"].items())]
    make = {"fitted": lambda: TabulatedKV(dec, pre),
            "interpolated": lambda: Tabulated([(b * q, c, t) for b, q, c, t in dec], pre)}
    return {m: make[m]() for m in which}


def predict(model, step: str, b=1, q=1, ctx=0, tokens=0) -> float:
    """ms of one step: a decode/verify step of b sequences x q positions after ctx cached tokens
    each, or a prefill of `tokens`."""
    if step == "prefill":
        return model.forward(0, tokens, 1, 0.0) * 1e3
    return model.forward(b * q, 0, b, float(b * ctx)) * 1e3


def kind(point: tuple, grid: dict) -> str:
    """'repeat' (the table holds this very step), '1 query token' (interpolated in batch and
    context only) or '2 and 5 query tokens' (query counts the table does not hold)."""
    if point in grid:
        return "repeat"
    return "1 query token" if point[1] in {q for _, q, _ in grid} else "2 and 5 query tokens"


def rows_of(name: str, held: dict, table: dict, repeat: dict | None, device: str = DEVICE,
            path: Path = TABLE) -> list[dict]:
    spec = modelspec.load(name)
    today = {"fitted": modelspec.measured(spec, 1, str(path), overhead_ms=0.0),
             "interpolated": models_of(table, ("interpolated",))["interpolated"],
             "roofline": modelspec.roofline(spec, catalog.get(device), 1, overhead_ms=0.0)}
    same_day = models_of(repeat) if repeat else {}
    rows = []
    steps = [("decode", {"b": b, "q": q, "ctx": c}, ms, kind((b, q, c), table["decode"]))
             for (b, q, c), ms in sorted(held["decode"].items())]
    steps += [("prefill", {"tokens": n}, ms, "prefill") for n, ms in sorted(held["prefill"].items())]
    for step, at, ms, k in steps:
        row = {"model": name, "step": step, **({"batch": at["b"], "query": at["q"], "context": at["ctx"]}
                                               if step == "decode" else {"tokens": at["tokens"]}),
               "kind": k, "measured_ms": ms}
        row |= {f"{m}_error": predict(today[m], step, **at) / ms - 1 for m in MODELS}
        row |= {f"same_day_{m}_error": predict(same_day[m], step, **at) / ms - 1 for m in same_day}
        rows.append(row)
    return rows


def summary(errors: list[float]) -> dict:
    e = [abs(x) for x in errors]
    return {"points": len(e), "median_abs": statistics.median(e), "max_abs": max(e),
            "within_5pct": sum(x <= 0.05 for x in e), "within_10pct": sum(x <= 0.10 for x in e)}


def drift(table: dict, repeat: dict) -> dict:
    """The table's steps over the same steps measured again, minus 1, on the common grid."""
    e = [table["decode"][p] / ms - 1 for p, ms in repeat["decode"].items() if p in table["decode"]]
    return summary(e) | {"mean": statistics.fmean(e)}


def measure() -> dict:
    table, held, repeat = points(TABLE), points(HELDOUT), points(REPEAT)
    docs = {k: json.loads(p.read_text()) for k, p in (("held", HELDOUT), ("table", TABLE), ("repeat", REPEAT))}
    rows = [r for name in held for r in rows_of(name, held[name], table[name], repeat[name])]
    off = [r for r in rows if r["step"] == "decode" and r["kind"] != "repeat"]
    by_model = {}
    for name in held:
        mine = [r for r in off if r["model"] == name]
        by_model[name] = {m: summary([r[f"{m}_error"] for r in mine]) for m in MODELS}
        by_model[name] |= {f"same_day_{m}": summary([r[f"same_day_{m}_error"] for r in mine])
                           for m in ("fitted", "interpolated")}
        by_model[name]["prefill_fitted"] = summary([r["fitted_error"] for r in rows
                                                    if r["model"] == name and r["step"] == "prefill"])
        by_model[name]["drift"] = drift(table[name], repeat[name])
    cols = [*MODELS, "same_day_fitted", "same_day_interpolated"]
    h200_table, h200_held = points(H200_TABLE), points(H200_HELDOUT)
    h200_rows = [r for name in h200_held for r in rows_of(name, h200_held[name], h200_table[name], None,
                                                             "H200", H200_TABLE)
                 if r["step"] == "decode" and r["kind"] != "repeat"]
    h200 = {"measured_on": json.loads(H200_HELDOUT.read_text())["date"],
            "table_measured_on": json.loads(H200_TABLE.read_text()).get("date"),
            "by_model": {name: {m: summary([r[f"{m}_error"] for r in h200_rows if r["model"] == name])
                                for m in MODELS} for name in h200_held},
            "all": {m: summary([r[f"{m}_error"] for r in h200_rows]) for m in MODELS}}
    # the fitted model on the table's own points (every entry, TP=2 shards with their all-reduce)
    in_sample = {}
    for key, m in docs["table"]["models"].items():
        pts = [(r["batch"], r.get("query", 1), r["context"], r["ms"] + r.get("allreduce_ms_model", 0.0))
               for r in m["decode"]]
        fit = TabulatedKV([(b, q, c, ms / 1e3) for b, q, c, ms in pts])
        in_sample[key] = summary([predict(fit, "decode", b, q, c) / ms - 1 for b, q, c, ms in pts])
    return {"device": docs["held"]["device"], "measured_on": docs["held"]["date"],
            "repeat_measured_on": docs["repeat"]["date"], "table_measured_on": docs["table"]["runs"][0]["date"],
            "rows": rows, "by_model": by_model,
            "all": {c: summary([r[f"{c}_error"] for r in off]) for c in cols},
            "by_kind": {k: {c: summary([r[f"{c}_error"] for r in off if r["kind"] == k]) for c in cols}
                        for k in ("1 query token", "2 and 5 query tokens")},
            "fitted_on_the_table": in_sample, "h200": h200,
            "worst_interpolated": max(off, key=lambda r: abs(r["interpolated_error"])),
            "worst_fitted": max(off, key=lambda r: abs(r["fitted_error"]))}


def render(out: dict) -> str:
    def cell(s):
        return f"{s['median_abs']:.1%} / {s['max_abs']:.1%}"

    def at(r):
        return f"{r['model']} batch {r['batch']}, query {r['query']}, context {r['context']}"

    lines = [f"Held-out H100 steps ({out['device']}, measured {out['measured_on'][:10]}) against the shipped "
             f"H100 table (measured {out['table_measured_on'][:10]}): median / max absolute error of "
             "predicted / measured - 1 over the decode steps off the table's grid, no engine overhead on "
             "either side.", "",
             "| model | steps | fitted (the planner's) | interpolated (before) | roofline | same day: fitted "
             "| same day: interpolated | table vs its grid re-measured |", "|---|---|---|---|---|---|---|---|"]
    for name, by in out["by_model"].items():
        d = by["drift"]
        lines.append(f"| {name} | {by['fitted']['points']} | {cell(by['fitted'])} | {cell(by['interpolated'])} | "
                     f"{cell(by['roofline'])} | {cell(by['same_day_fitted'])} | {cell(by['same_day_interpolated'])} | "
                     f"{cell(d)} (mean {d['mean']:+.1%}) |")
    a = out["all"]
    lines += ["", "| every off-grid step | steps | within 5% | within 10% | median / max |", "|---|---|---|---|---|"]
    for c, label in (("fitted", "fitted"), ("interpolated", "interpolated"), ("roofline", "roofline"),
                     ("same_day_fitted", "same day: fitted"), ("same_day_interpolated", "same day: interpolated")):
        s = a[c]
        lines.append(f"| {label} | {s['points']} | {s['within_5pct']} | {s['within_10pct']} | {cell(s)} |")
    k = out["by_kind"]
    wi, wf = out["worst_interpolated"], out["worst_fitted"]
    lines += ["", "By query tokens (median / max): 1 query token, a count the table holds: fitted "
              f"{cell(k['1 query token']['fitted'])}, interpolated {cell(k['1 query token']['interpolated'])}; "
              f"2 and 5, counts it does not hold: fitted {cell(k['2 and 5 query tokens']['fitted'])}, "
              f"interpolated {cell(k['2 and 5 query tokens']['interpolated'])}.",
              "", f"Largest interpolated error: {at(wi)}: {wi['interpolated_error']:+.1%} (fitted "
              f"{wi['fitted_error']:+.1%}). Largest fitted error: {at(wf)}: {wf['fitted_error']:+.1%}.",
              "", "Prefill (256, 1024 and 4096 tokens), fitted: " + ", ".join(
                  f"{n} {cell(by['prefill_fitted'])}" for n, by in out["by_model"].items()) + ".",
              "", f"The same off-grid steps on an H200 (measured {out['h200']['measured_on'][:10]}) against the "
              "shipped H200 table (median / max): " + "; ".join(
                  f"{n} fitted {cell(by['fitted'])}, interpolated {cell(by['interpolated'])}, roofline "
                  f"{cell(by['roofline'])}" for n, by in out["h200"]["by_model"].items()) + ".",
              "", "The fitted model on the table's own steps (every entry; median / max): " + ", ".join(
                  f"{k} {cell(v)}" for k, v in out["fitted_on_the_table"].items()) + ".",
              "", f"Same day: both table models fitted to the table's grid re-measured on "
              f"{out['repeat_measured_on'][:10]} beside the held-out steps, so the drift between the two "
              "days (last column: the table's steps over the same steps re-measured) drops out."]
    return "\n".join(lines) + "\n"


def main() -> None:
    out = measure()
    write_results(OUT, out, render)
    print(render(out))


if __name__ == "__main__":
    main()

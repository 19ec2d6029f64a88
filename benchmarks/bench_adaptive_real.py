"""Adaptive lookahead on real engines: lr-adaptive against AR and the static LR it would
replace, at 1, 2 and 4 requests in flight, on the GSM8K problems of the load corpus.

    .venv/bin/python benchmarks/collect_load.py --set adaptive --rounds 2   # the records (alone)
    .venv/bin/python benchmarks/bench_adaptive_real.py [--load traces/load-adaptive]

The records (traces/load-adaptive/, collected as the load corpus: target on core 0, draft on
core 1, interleaved block by block, each configuration on the same problems) give per level the
tokens/s of each configuration over the blocks every one of them finished, its speedup over ar,
the worst block's speedup, and what lr-adaptive chose: the share of its decisions at depth 0 (no
speculation) and how many problems its run-wide estimator had learned from
(`adaptive.learned_from`) or where its first problem's prior came from (`adaptive.prior_from`:
the neutral defaults, or the estimates carried from the corpus's last lr-adaptive record, as
collect_load.py --set adaptive passes the corpus directory to --adaptive-prior). Targets: where static LR loses, lr-adaptive within 3% of
AR's tokens/s; at 1-4 in flight never more than 3% below AR.
Writes benchmarks/results/adaptive_real.{json,md}.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_load import blocks, interval, level_table, load_corpus, makespan  # noqa: E402
from benchmarks.write import table_head, write_results  # noqa: E402

TARGET = 0.03          # within 3% of AR (docs/adaptive.md)
ADAPTIVE = "lr-adaptive-d2"
STATIC = "lr-d2"       # the static configuration lr-adaptive replaces (depth 2, width 1)


def _decisions(recs: list[dict]) -> dict:
    ds = [d for r in recs for d in (r.get("adaptive") or {}).get("decisions", [])]
    firsts = [a for r in recs if not int((a := r.get("adaptive") or {}).get("learned_from", 0))]
    carried = sum(a.get("prior_from", "neutral") != "neutral" for a in firsts)
    return {"decisions": len(ds), "depth0_share": sum(d["depth"] == 0 for d in ds) / len(ds) if ds else None,
            # a collection process's first problem on its engines: from the neutral prior, or
            # from the estimates an earlier record ended with (--adaptive-prior)
            "first_problem_records": len(firsts) - carried, "carried_prior_records": carried}


def _block(recs: list[dict], speedup: float) -> dict:
    """One lr-adaptive block: its share of depth-0 decisions, and what the Estimator believed at
    each record's first decision (depth-1 acceptance; the best choice's expected speedup over
    AR, expected_tps / ar_tps), averaged over the block's records, beside the measured speedup."""
    ds = [d for r in recs for d in (r.get("adaptive") or {}).get("decisions", [])]
    first = [a["decisions"][0] for r in recs if (a := r.get("adaptive") or {}).get("decisions")]
    mean = lambda v: sum(v) / len(v) if v else None  # noqa: E731
    return {"depth0_share": mean([d["depth"] == 0 for d in ds]),
            "alpha1_first": mean([d["estimates"]["alpha_by_depth"][0] for d in first]),
            # the target's cost of one more position in its batch, as a share of a step
            "slope_share_first": mean([d["estimates"]["target_slope_s"] / d["estimates"]["target_step_s"]
                                       for d in first]),
            # the drafter's cost to a target step beside it, per draft request, as a share of a
            # step (absent from records made before it was estimated)
            "drafter_share_first": mean([d["estimates"]["target_draft_s"] / d["estimates"]["target_step_s"]
                                         for d in first if "target_draft_s" in d["estimates"]]),
            # the price checked against the run's commits (absent before it was measured: 1)
            "spec_factor_first": mean([d["estimates"].get("spec_factor", 1.0) for d in first]),
            "expected_first": mean([d["best_tps"] / d["ar_tps"] for d in first if d.get("ar_tps")]),
            "speedup_vs_ar": speedup}


def priced_static(level: dict, n: int, acceptance: float | None) -> float | None:
    """What lr-adaptive's cost model says static lr-d2 earns over AR at this level: the closed
    forms (lrcore.adaptive.expected_rate) with the estimates the level's last lr-adaptive record
    ended with (`adaptive.final`) but spec_factor 1 (the closed forms' own price, before the
    run's correction from its commits), lr-d2's measured step acceptance at every depth and n
    requests in flight. Beside lr-d2's measured speedup it checks the cost side of the decision rule."""
    from lrcore.adaptive import AR, AdaptiveConfig, Choice, Estimates, expected_rate

    recs = [r for r in level.get(ADAPTIVE, []) if (r.get("adaptive") or {}).get("final")]
    if not recs or acceptance is None:
        return None
    est = Estimates.from_dict(recs[-1]["adaptive"]["final"])      # records are in file order
    # the closed forms' own price: without the run's correction from its commits (spec_factor)
    est = Estimates.from_dict(est.to_dict() | {"alpha_by_depth": [acceptance, acceptance], "load": float(n),
                                               "spec_factor": 1.0})
    cfg = AdaptiveConfig(max_depth=2, widths=(1,))
    return expected_rate(est, Choice(2, 1, 1), cfg) / expected_rate(est, AR, cfg)


def bench(root: Path) -> dict:
    corpus = load_corpus(root)
    src = root.resolve().relative_to(ROOT) if root.resolve().is_relative_to(ROOT) else root
    out = {"levels": {}, "source": f"{src}/", "records": sum(len(r) for lv in corpus.values() for r in lv.values())}
    for n, level in sorted(corpus.items()):
        table = level_table(level, None)
        if "ar" not in table:
            continue
        by_cfg = {c: blocks(recs) for c, recs in level.items()}
        # the blocks level_table counts: every configuration finished them in full
        common = [k for k in set.intersection(*(set(b) for b in by_cfg.values()))
                  if all(len(b[k]) == n for b in by_cfg.values())]
        ar = by_cfg["ar"]
        for cfg, row in table.items():
            if cfg == "ar":
                continue
            own = by_cfg[cfg]
            per = [sum(r["output_tokens"] for r in own[k]) / makespan(own[k])
                   / (sum(r["output_tokens"] for r in ar[k]) / makespan(ar[k])) for k in sorted(common)]
            row["block_speedups_vs_ar"] = per       # by round
            row["worst_block_speedup_vs_ar"] = min(per) if per else None
            if cfg == ADAPTIVE:
                row |= _decisions(level[cfg])
                row["by_block"] = [_block(own[k], x) for k, x in zip(sorted(common), per)]
            if cfg == STATIC:
                row["priced_by_adaptive"] = priced_static(level, n, row.get("step_acceptance"))
        out["levels"][str(n)] = table
    rows = [(n, t[ADAPTIVE]) for n, t in out["levels"].items() if ADAPTIVE in t]
    out["adaptive_min_speedup_vs_ar"] = min((r["speedup_vs_ar"] for _, r in rows), default=None)
    out["target_met"] = bool(rows) and all(r["speedup_vs_ar"] >= 1 - TARGET for _, r in rows)
    return out


def _f(x, fmt=".2f"):
    return "-" if x is None else format(x, fmt)


def render(doc: dict) -> str:
    lines = table_head(f"Adaptive lookahead on real engines ({doc['records']} records, {doc['source']}: "
                       "GSM8K, 192-token budget; target on core 0, draft on core 1; exact-match "
                       "verifier).", "in flight", "config", "blocks", "tok/s", "speedup vs ar",
                       "90% interval", "by round", "step acceptance", "depth-0 decisions")
    for n, table in doc["levels"].items():
        for cfg, r in table.items():
            lines.append(f"| {n} | {cfg} | {r['blocks']} | {r['tokens_per_s']:.2f} | "
                         f"{_f(r.get('speedup_vs_ar'))} | {interval(r.get('speedup_vs_ar_ci90'))} | "
                         f"{' / '.join(_f(x) for x in r['block_speedups_vs_ar']) if 'block_speedups_vs_ar' in r else '-'} | "
                         f"{_f(r.get('step_acceptance'))} | {_f(r.get('depth0_share'))} |")
    lines += ["", "lr-adaptive by block (round): share of decisions at depth 0; at each record's first "
              "decision the Estimator's depth-1 acceptance and the expected speedup of its best "
              "choice over AR (block means); the measured speedup.", "",
              "| in flight | round | depth 0 | acceptance believed | slope believed | drafter believed | commits' factor | expected | measured |",
              "|---|---|---|---|---|---|---|---|---|"]
    for n, table in doc["levels"].items():
        for i, b in enumerate((table.get(ADAPTIVE) or {}).get("by_block", [])):
            lines.append(f"| {n} | {i} | {_f(b['depth0_share'])} | {_f(b['alpha1_first'])} | "
                         f"{_f(b.get('slope_share_first'), '.3f')} | "
                         f"{_f(b.get('drafter_share_first'), '.3f')} | {_f(b.get('spec_factor_first'), '.3f')} | "
                         f"{_f(b['expected_first'])} | {_f(b['speedup_vs_ar'])} |")
    lines += ["", "(slope believed: the target's cost of one more position in its batch as a share of "
              "a step, target_slope_s / target_step_s; drafter believed: its cost of one draft "
              "request running beside it, target_draft_s / target_step_s (- : records from before "
              "it was estimated); commits' factor: spec_factor, what its speculative commits earned "
              "over their price relative to depth 0's (1 before it was measured); all at each "
              "record's first decision.)"]
    priced = [(n, r) for n, table in doc["levels"].items()
              if (r := table.get(STATIC) or {}).get("priced_by_adaptive") is not None]
    if priced:          # records from before lr-adaptive wrote its final estimates have none
        lines += ["", f"The decision rule's cost model against static {STATIC}: {STATIC}'s speedup over "
                  "AR as expected_rate prices it (the estimates the level's last lr-adaptive record "
                  f"ended with, {STATIC}'s measured step acceptance) and as measured.", "",
                  "| in flight | step acceptance | priced | measured |", "|---|---|---|---|"]
        lines += [f"| {n} | {_f(r.get('step_acceptance'))} | {_f(r['priced_by_adaptive'])} | "
                  f"{_f(r.get('speedup_vs_ar'))} |" for n, r in priced]
    m = doc["adaptive_min_speedup_vs_ar"]
    low = min(((n, t[ADAPTIVE]) for n, t in doc["levels"].items() if ADAPTIVE in t),
              key=lambda x: x[1]["speedup_vs_ar"], default=None)
    first = {n: (t[ADAPTIVE]["first_problem_records"], t[ADAPTIVE].get("carried_prior_records", 0))
             for n, t in doc["levels"].items() if ADAPTIVE in t}
    lines += ["", "lr-adaptive records that were the first problem of a collection process on its "
              "engines, from the neutral prior / from the estimates the corpus's last lr-adaptive "
              "record ended with (`--adaptive-prior`), by level: "
              + ", ".join(f"{n} in flight: {k} / {c}" for n, (k, c) in first.items()) + ".",
              "", f"lr-adaptive's lowest speedup over AR: {_f(m, '.3f')} (target: >= {1 - TARGET:.2f} "
              f"at every level; {'met' if doc['target_met'] else 'not met'})"
              + (f"; that level's 90% interval over blocks (bootstrap, blocks resampled in pairs with "
                 f"ar's): {interval(low[1].get('speedup_vs_ar_ci90'))}" if low else "") + ".", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--load", default=str(ROOT / "traces" / "load-adaptive"))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "adaptive_real.json"))
    a = ap.parse_args()
    root = Path(a.load)
    if not (root / "gsm8k").is_dir():
        sys.exit(f"bench_adaptive_real: no records under {root}/gsm8k (collect them first: "
                 "benchmarks/collect_load.py --set adaptive)")
    doc = bench(root)
    write_results(a.out, doc, render)
    print(render(doc))


if __name__ == "__main__":
    main()

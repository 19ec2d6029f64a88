"""How fast the machine ran each block of a load corpus, against what the probe before it said.

    .venv/bin/python benchmarks/bench_block_speed.py [--corpus traces/load ...] [--json]
        [--out benchmarks/results/block_speed.json]

The replay and the plan scale a profile to a machine speed (lrreal/probe.py: one prefill and four
single-token decode passes of idle engines, timed before each record alone and once before each
block of N in flight: run.probe_at_start). Whether that probe says how fast the block itself ran
is a measurement: every block's engines also ran passes of the probe's own kind, one sequence
decoding one token (batch_size 1, tokens_scheduled 1, no prefill), and their median is the speed
the block actually got. Per corpus and engine:

  ratio        the block's median single-sequence decode pass over its probe's decode pass
               (median and 10th-90th percentile over blocks; the blocks' contexts, a few hundred
               tokens against the probe's 32, make it sit above 1)
  r            Pearson correlation over blocks of log(probe) and log(block pass), each centred on
               its (level, configuration) group's mean (so the configurations' and levels' own
               pass mixes drop out): 1 = the probe tells one block's speed from another's, 0 = not
  spread       the blocks' pass speed within a group (same level, same configuration): the
               standard deviation of log(block pass) over its blocks, as a percentage (median over
               groups); what the measured tokens/s of a level inherit from the machine alone
  residual     the same spread of log(block pass / its probe): what is left of it when every
               block is priced at its own probe (the replay of a corpus by its own profile)
  floor        what that spread alone does to a measured speedup: a level's speedup is a
               configuration's n blocks over ar's n others, so with the target's spread s per
               block its log has standard deviation s * sqrt(2 / n) (blocks independent, the
               speed log-normal); the chance that it lands within 10% of a perfect prediction
               priced at one probe for every block (the spread) or at each block's (the residual),
               and so how many of a corpus's (configuration, level) pairs a perfect model would
               be expected to hold within 10% of what was measured. The target's spread only (it
               sets every configuration's pace; the draft's, larger, adds to LR's), and a block's
               median of a few passes carries sampling noise of its own, so the spread is an upper
               bound on the machine's and the expected count a floor's estimate, not a bound

A block counts where its engine ran at least MIN_PASSES such passes (the target at 4-8 in flight
rarely runs one sequence alone: few of its blocks count). Reads the traces only; seconds to run.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.load_replay import block_probe, blocks, load_corpus, pass_key  # noqa: E402
from benchmarks.write import corpus_args, table_head, write_results  # noqa: E402

CORPORA = ("traces/load", "traces/load-heldout", "traces/load-cold-epyc", "traces/load-cold-epyc-all")
ENGINES = ("target", "draft")
MIN_PASSES = 5          # single-sequence decode passes a block needs before its median is kept
MIN_GROUP = 3           # blocks a (level, configuration) group needs to enter r and the spread
TARGET = 0.10           # the calibration target (docs/load.md): predicted speedup within 10% of measured


def single_decode_passes(block: list[dict], engine: str) -> list[float]:
    """Seconds of the block's passes of the probe's kind: one sequence, one token, no prefill.
    At N in flight every record of a block holds the engine's passes over its own window, so a
    pass is kept once (by its start, on the block's clock)."""
    seen, out = set(), []
    for r in block:
        for p in ((r.get("engine_stats") or {}).get(engine) or {}).get("forward_passes") or ():
            if p.get("prefill_tokens") or p.get("batch_size") != 1 or p.get("tokens_scheduled") != 1:
                continue
            key = pass_key(r, p)
            if key not in seen:
                seen.add(key)
                out.append(float(p["duration_s"]))
    return out


def corpus_rows(corpus: dict, engine: str) -> list[dict]:
    """One row per block with a probe and enough passes: level, config, probe s, block pass s."""
    rows = []
    for n, level in sorted(corpus.items()):
        for cfg, recs in sorted(level.items()):
            for k, blk in sorted(blocks(recs).items()):
                before = block_probe(blk).get("before") or {}
                probe = ((before.get("engines") or {}).get(engine) or {}).get("decode_s")
                passes = single_decode_passes(blk, engine)
                if probe and len(passes) >= MIN_PASSES:
                    rows.append({"level": n, "config": cfg, "block": k, "probe_s": float(probe),
                                 "pass_s": float(np.median(passes)), "passes": len(passes)})
    return rows


def summarise(rows: list[dict]) -> dict | None:
    if len(rows) < MIN_GROUP:
        return None
    ratio = np.array([r["pass_s"] / r["probe_s"] for r in rows])
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["level"], r["config"]), []).append(r)
    xs, ys, spreads, resid, probes = [], [], [], [], []
    for g in groups.values():
        if len(g) < MIN_GROUP:
            continue
        lp, lb = np.log([r["probe_s"] for r in g]), np.log([r["pass_s"] for r in g])
        xs += list(lp - lp.mean())
        ys += list(lb - lb.mean())
        spreads.append(100 * float(np.std(lb, ddof=1)))
        resid.append(100 * float(np.std(lb - lp, ddof=1)))
        probes.append(100 * float(np.std(lp, ddof=1)))    # how much the probe moved between blocks
    r = stats.pearsonr(xs, ys) if len(xs) >= 3 else None
    return {"blocks": len(rows), "groups": len(spreads),
            "ratio_median": float(np.median(ratio)),
            "ratio_p10": float(np.percentile(ratio, 10)), "ratio_p90": float(np.percentile(ratio, 90)),
            "ratio_min": float(ratio.min()), "ratio_max": float(ratio.max()),
            "r": float(r.statistic) if r is not None else None,
            "r_pvalue": float(r.pvalue) if r is not None else None,
            "spread_pct_median": float(np.median(spreads)) if spreads else None,
            "residual_spread_pct_median": float(np.median(resid)) if resid else None,
            "probe_spread_pct_median": float(np.median(probes)) if probes else None}


def noise_floor(corpus: dict, target: dict | None) -> dict | None:
    """summarise's target spread turned into a perfect model's expected share within 10%
    (module docstring, `floor`), with the corpus's blocks per level and its speculative pairs."""
    if not target or target["spread_pct_median"] is None:
        return None
    n = float(np.median([len(blocks(recs)) for lv in corpus.values() for recs in lv.values()]))
    pairs = sum(1 for lv in corpus.values() for c in lv if c not in ("ar", "ar-er"))
    out = {"blocks_per_level": n, "pairs": pairs}
    for key, spread in (("one_probe", "spread_pct_median"), ("block_probes", "residual_spread_pct_median")):
        sd = target[spread] / 100 * np.sqrt(2.0 / n)
        p = float(stats.norm.cdf(np.log(1 + TARGET) / sd) - stats.norm.cdf(np.log(1 - TARGET) / sd))
        out[key] = {"log_speedup_sd": float(sd), "p_within": p, "expected_within": p * pairs}
    return out


def render(doc: dict) -> str:
    lines = table_head("Machine speed per block: the block's median single-sequence decode pass over "
                       "the probe taken before it (one pass kind, the probe's own), over the blocks "
                       "of each corpus.", "corpus", "engine", "blocks", "pass / probe, median (p10-p90)",
                       "r (probe, pass)", "spread in a group: pass / probe / pass over probe")
    for name, by_engine in doc["corpora"].items():
        for eng, s in by_engine.items():
            if not s:
                continue
            r = "-" if s["r"] is None else f"{s['r']:.2f}"
            sp = lambda v: "-" if v is None else f"{v:.1f}%"  # noqa: E731
            lines.append(f"| {name} | {eng} | {s['blocks']} | {s['ratio_median']:.2f} "
                         f"({s['ratio_p10']:.2f}-{s['ratio_p90']:.2f}) | {r} | "
                         f"{sp(s['spread_pct_median'])} / {sp(s['probe_spread_pct_median'])} / "
                         f"{sp(s['residual_spread_pct_median'])} |")
    lines += ["", "r: Pearson correlation over blocks of log probe and log block pass, each centred on "
              "its (level, configuration) group; spread: standard deviation of log seconds over a "
              "group's blocks (median over groups with at least "
              f"{doc['min_group']} blocks); a block counts with at least {doc['min_passes']} "
              "single-sequence decode passes.", "",
              "What the target's block-to-block spread alone does to a measured speedup (a level's "
              "n blocks of a configuration over n of ar; blocks independent, speed log-normal):", "",
              "| corpus | blocks per level | speculative pairs | priced at | speedup's log sd | "
              "P(within 10%) | a perfect model's expected pairs within 10% |",
              "|---|---|---|---|---|---|---|"]
    for name, f in doc["floor"].items():
        for key, label in (("one_probe", "one probe"), ("block_probes", "each block's probe")):
            if f:
                g = f[key]
                lines.append(f"| {name} | {f['blocks_per_level']:g} | {f['pairs']} | {label} | "
                             f"{g['log_speedup_sd']:.3f} | {g['p_within']:.2f} | {g['expected_within']:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    a = corpus_args(__doc__, "block_speed", CORPORA)
    doc = {"min_passes": MIN_PASSES, "min_group": MIN_GROUP, "target": TARGET, "corpora": {}, "floor": {}}
    for name in a.corpus:
        corpus = load_corpus(ROOT / name)
        if not corpus:
            sys.exit(f"bench_block_speed: no load traces under {name}")
        doc["corpora"][name] = {e: summarise(corpus_rows(corpus, e)) for e in ENGINES}
        doc["floor"][name] = noise_floor(corpus, doc["corpora"][name]["target"])
    path = write_results(ROOT / a.out, doc, render)
    print(json.dumps(doc, indent=1) if a.json else path.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()

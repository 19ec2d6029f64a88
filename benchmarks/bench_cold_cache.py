"""Cold prefix caches: traces/load's blocks run again (ar and lr-d2-emb, the same rounds, so the
same problems; rounds 0-5 at 1, 2, 4 and 8 in flight) with every engine's prefix
cache emptied before each block (benchmarks/collect_load.py --cold-cache -> traces/load-cold),
set beside the original blocks.

In traces/load a block's LR engines could find contexts an earlier block of the same problem had
left (the other LR configuration's run of the round, or a run at another level): with temperature
0 and seeded drafts the target sees the same contexts again (results/prefix_hits.md: reruns held
more than first runs). The replay prices those hits from the records' own counts only where a
record counts them (traces/load: round 5 on) and by the block model elsewhere. The cold corpus
measures the speedups without any reuse between blocks, every record counting its hits, so:

  measured     tokens/s and the speedup over ar, warm (traces/load) and cold, on the blocks both
               ran in full (paired: block k ran the same problems in both);
  replayed     the same profile for both (traces/load's 1-2 in flight, bench_load.py's replay),
               each block at its own probe: the speedup and its error against measured;
  own profile  the cold corpus replayed again with a profile calibrated on its own 1-2 in flight
               (collected on its machine, with cold caches, where it has them): traces/load-cold
               ran on another CPU model than traces/load, between which a batch-1 probe did not
               carry a profile (traces/load-cold-epyc ran on traces/load's model, a faster host);
  own plan     `lr plan` on that profile (at the cold corpus's median probe, as bench_load.py
               plans): lr-d2-emb's planned speedup at each level and the break-even, measured,
               replayed, planned and found by the plan's own search (--find-break-even);
  prefill      the LR records' target step jobs after an accepted draft: measured prefill tokens a
               job against the block model's (bench_prefix_hits.py), where the records count them.

    .venv/bin/python benchmarks/bench_cold_cache.py     # three replays of the blocks and the plans
    .venv/bin/python benchmarks/bench_cold_cache.py --cold traces/load-cold-epyc \
        --out benchmarks/results/load_cold_epyc.json  # the same design on traces/load's own CPU
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_open_loop import OTHER_CPU_LIMIT, other_cpu  # noqa: E402
from benchmarks.bench_prefix_hits import KINDS, _acc, target_jobs  # noqa: E402
from benchmarks.load_replay import (CALIB_LEVELS, blocks, calib_paths, corpus_probe, level_table,  # noqa: E402
                                    load_corpus, measure)
from benchmarks.load_plan import PLAN_PROFILES, break_even, plan_at, plan_profile, search  # noqa: E402
from benchmarks.write import run_and_write  # noqa: E402
from lrsim.calib.profile import save_profile  # noqa: E402
from lrsim.calib.rescale import machines  # noqa: E402

WARM, COLD = "traces/load", "traces/load-cold"
OUT = ROOT / "benchmarks" / "results" / "load_cold.json"


def full_rounds(level: dict[str, list[dict]], n: int) -> set[int]:
    """The rounds every configuration of the level ran with all n requests."""
    per_cfg = [{k for k, b in blocks(recs).items() if len(b) == n} for recs in level.values()]
    return set.intersection(*per_cfg) if per_cfg else set()


def paired(warm: dict, cold: dict) -> tuple[dict, dict]:
    """Both corpora cut to the cold corpus's levels and configurations and the rounds both ran in
    full."""
    w_out, c_out = {}, {}
    for n, lv in sorted(cold.items()):
        cfgs = sorted(c for c in lv if c in warm.get(n, {}))
        w = {c: warm[n][c] for c in cfgs}
        c = {c: lv[c] for c in cfgs}
        rounds = full_rounds(w, n) & full_rounds(c, n)
        if not rounds:
            continue
        pick = lambda recs: [r for r in recs if int(r["run"]["flags"]["load_round"]) in rounds]  # noqa: E731
        w_out[n] = {k: pick(v) for k, v in w.items()}
        c_out[n] = {k: pick(v) for k, v in c.items()}
        for k in w_out[n]:      # a block pairs only with the one that ran the same problems
            wb, cb = blocks(w_out[n][k]), blocks(c_out[n][k])
            for rnd in rounds:
                if sorted(r["problem_id"] for r in wb[rnd]) != sorted(r["problem_id"] for r in cb[rnd]):
                    raise SystemExit(f"bench_cold_cache: {n} in flight, {k}, round {rnd}: the corpora "
                                     "ran different problems (collected with another --first-problem?)")
    return w_out, c_out


def prefill(corpus: dict) -> dict:
    """The LR records' target step jobs that count their hits, by kind (bench_prefix_hits's
    kinds, every job counted as a first run: the split by rerun is that benchmark's)."""
    kinds = {k: _acc() for k in KINDS}
    for lv in corpus.values():
        for cfg, recs in lv.items():
            if cfg != "ar":
                for r in recs:
                    target_jobs(r, False, kinds)
    return {k: v for k, v in kinds.items() if k in ("root", "after_draft_first")}


def machine(corpus: dict) -> dict:
    """The machine models the corpus's records ran on (records per model: rescale.machines), its
    median probe, and how busy the machine was besides (other_cpu: the blocks whose records
    measured it, how many of them other processes took over bench_open_loop's limit of a core
    in, and the largest share; every block is kept here)."""
    recs = [r for lv in corpus.values() for rs in lv.values() for r in rs]
    shares = [other_cpu(b) for lv in corpus.values() for rs in lv.values() for b in blocks(rs).values()
              if all(r["load"].get("machine_during") for r in b)]
    return {"cpu_models": machines(recs), "probe": corpus_probe(corpus),
            "other_cpu": {"blocks": len(shares), "over_limit": sum(x > OTHER_CPU_LIMIT for x in shares),
                          "limit": OTHER_CPU_LIMIT, "max": max(shares, default=None)}}


def _busy(m: dict) -> str:
    o = m["other_cpu"]
    if not o["blocks"]:
        return "not measured"
    return (f"at most {100 * o['max']:.1f}% of a core, {o['over_limit']} of {o['blocks']} blocks over "
            f"{100 * o['limit']:.0f}%")


def bench(plan: bool = True, cold_dir: str = COLD) -> dict:
    """`plan`: also ask `lr plan` (own_plan; minutes, tests pin its committed output instead).
    `cold_dir`: the cold corpus (a folder under the repository)."""
    t0 = time.perf_counter()
    cold_dir = cold_dir.rstrip("/")
    warm, cold = paired(load_corpus(ROOT / WARM), load_corpus(ROOT / cold_dir))
    if not cold:
        raise SystemExit(f"bench_cold_cache: {cold_dir} has no block that {WARM} also ran in full")
    _, warm_t, prof = measure(ROOT / WARM, warm)       # the profile: traces/load at 1-2 in flight
    cold_t = {n: level_table(lv, prof) for n, lv in sorted(cold.items())}
    own_t = planned = None
    if calib_paths(ROOT / cold_dir):     # the cold corpus's own 1-2 in flight: its machine's profile
        _, own_t, _ = measure(ROOT / cold_dir, cold)
        planned = own_plan(cold, own_t, cold_dir) if plan else None
    flags = {bool(r["run"]["flags"].get("cold_cache")) for lv in cold.values()
             for recs in lv.values() for r in recs}
    levels = {}
    for n in sorted(warm_t):
        levels[str(n)] = {cfg: {"warm": warm_t[n][cfg], "cold": cold_t[n][cfg],
                                **({"cold_own_profile": own_t[n][cfg]} if own_t else {})}
                          for cfg in sorted(warm_t[n]) if cfg in cold_t[n]}
    return {"benchmark": "bench_cold_cache", "warm": WARM, "cold": cold_dir,
            "cold_cache_flag": sorted(flags), "levels": levels,
            "machine": {"warm": machine(warm), "cold": machine(cold)},
            **({"cold_own_plan": planned} if planned else {}),
            "prefill": {"warm": prefill(warm), "cold": prefill(cold)},
            "wall_s": time.perf_counter() - t0}


def own_plan(cold: dict, own_t: dict, cold_dir: str = COLD) -> dict:
    """`lr plan` on the cold corpus's own profile (its levels 1-2, at the corpus's median probe,
    as bench_load.py plans): lr-d2-emb's planned speedup over ar at every level, and the
    break-even (the first level at which LR is not faster than ar) measured, replayed, planned
    at the measured levels and found by the plan's bisection (--find-break-even)."""
    cfg = "lr-d2-emb"
    with tempfile.TemporaryDirectory() as tmp:
        path = save_profile(plan_profile(calib_paths(ROOT / cold_dir), PLAN_PROFILES["emb"][0], corpus_probe(cold)),
                            Path(tmp) / "cold-plan.json")
        planned = {n: plan_at({"emb": path}, n) for n in sorted(cold)}
        searched = search({"emb": path}, max(cold))
    return {"planned": {str(n): {"speedup_vs_ar": p[cfg]["speedup_vs_ar"]} for n, p in planned.items()},
            "break_even": {"measured": break_even(own_t, "speedup_vs_ar", cfg),
                           "replayed": break_even(own_t, "predicted_speedup_vs_ar", cfg),
                           "planned": break_even(planned, "speedup_vs_ar", cfg),
                           "searched": searched[cfg]["vs_ar"]}}


def _err(row: dict) -> float | None:
    p, m = row.get("predicted_speedup_vs_ar"), row.get("speedup_vs_ar")
    return None if p is None or not m else p / m - 1


def _pf(a: dict) -> str:
    if not a["jobs"]:
        return "-"
    return f"{a['measured'] / a['jobs']:.1f} / {a['modelled'] / a['jobs']:.1f} ({a['jobs']})"


def render(doc: dict) -> str:
    lines = [f"{doc['warm']} (prefix caches kept across blocks) against {doc['cold']} (every engine's "
             "prefix cache emptied before each block), the same rounds and so the same problems; "
             "replayed with one profile (traces/load at 1-2 in flight), each block at its own probe; "
             "the last column replays the cold corpus with its own profile (its levels 1-2, on its machine).",
             "",
             "| in flight | config | blocks | tok/s warm / cold | speedup vs ar, measured warm / cold "
             "| replayed warm / cold | replay error warm / cold | cold, own profile: replayed (error) |",
             "|---|---|---|---|---|---|---|---|"]
    for n, t in doc["levels"].items():
        for cfg, r in t.items():
            w, c = r["warm"], r["cold"]
            o = r.get("cold_own_profile")
            if cfg == "ar":
                lines.append(f"| {n} | ar | {w['blocks']} | {w['tokens_per_s']:.2f} / {c['tokens_per_s']:.2f} "
                             "| - | - | - | - |")
                continue
            ew, ec = _err(w), _err(c)
            own = "-" if o is None else f"{o['predicted_speedup_vs_ar']:.2f} ({100 * _err(o):+.1f}%)"
            lines.append(f"| {n} | {cfg} | {w['blocks']} | {w['tokens_per_s']:.2f} / {c['tokens_per_s']:.2f} | "
                         f"{w['speedup_vs_ar']:.2f} / {c['speedup_vs_ar']:.2f} | "
                         f"{w['predicted_speedup_vs_ar']:.2f} / {c['predicted_speedup_vs_ar']:.2f} | "
                         f"{100 * ew:+.1f}% / {100 * ec:+.1f}% | {own} |")
    pw, pc = doc["prefill"]["warm"], doc["prefill"]["cold"]
    mw, mc = doc["machine"]["warm"], doc["machine"]["cold"]

    def probe(m, role):
        return f"{m['probe'][role]['decode_s']:.3f} s / {m['probe'][role]['prefill_s']:.2f} s"
    lines += ["",
              f"Machines: warm {', '.join(sorted(mw['cpu_models']))}, cold {', '.join(sorted(mc['cpu_models']))}. "
              "Median probe of the idle engines, a decode pass / a 32-token prefill: target "
              f"warm {probe(mw, 'target')}, cold {probe(mc, 'target')} (decode "
              f"{mc['probe']['target']['decode_s'] / mw['probe']['target']['decode_s']:.2f}x); draft warm "
              f"{probe(mw, 'draft')}, cold {probe(mc, 'draft')}. Other processes during the blocks "
              f"(load.machine_during): warm {_busy(mw)}; cold {_busy(mc)}. ar's measured tokens/s, cold against warm: "
              + ", ".join(f"{n} in flight {100 * (t['ar']['cold']['tokens_per_s'] / t['ar']['warm']['tokens_per_s'] - 1):+.0f}%"
                          for n, t in doc["levels"].items() if "ar" in t) + ".",
              "",
              "LR target step jobs that count their cache hits, prefill tokens a job measured / "
              "modelled (jobs): after the target's own step "
              f"warm {_pf(pw['root'])}, cold {_pf(pc['root'])}; after an accepted draft "
              f"warm {_pf(pw['after_draft_first'])}, cold {_pf(pc['after_draft_first'])}."]
    ar = {n: (t["ar"]["warm"], t["ar"]["cold"]) for n, t in doc["levels"].items() if "ar" in t}
    lines += ["", "ar replayed over measured tokens/s, each block at its own probe: " + ", ".join(
        f"{n} in flight warm {100 * (w['predicted_tokens_per_s'] / w['tokens_per_s'] - 1):+.1f}%, "
        f"cold {100 * (c['predicted_tokens_per_s'] / c['tokens_per_s'] - 1):+.1f}%" for n, (w, c) in ar.items()) + "."]
    own = {n: t["ar"]["cold_own_profile"] for n, t in doc["levels"].items() if "cold_own_profile" in t.get("ar", {})}
    if own:
        lines += ["", "The cold corpus's own profile (calibrated on its levels "
                  f"{', '.join(map(str, CALIB_LEVELS))}: in sample there), ar replayed over measured: " + ", ".join(
                      f"{n} in flight {100 * (o['predicted_tokens_per_s'] / o['tokens_per_s'] - 1):+.1f}%"
                      for n, o in own.items()) + "."]
    plan = doc.get("cold_own_plan")
    if plan:
        lr = {n: t["lr-d2-emb"] for n, t in doc["levels"].items()}
        be = plan["break_even"]
        lines += ["", "`lr plan` on the cold corpus's own profile (at the corpus's median probe), lr-d2-emb's "
                  "speedup over ar, planned against measured: " + ", ".join(
                      f"{n} in flight {p['speedup_vs_ar']:.2f} against {lr[n]['cold']['speedup_vs_ar']:.2f} "
                      f"({100 * (p['speedup_vs_ar'] / lr[n]['cold']['speedup_vs_ar'] - 1):+.1f}%)"
                      for n, p in plan["planned"].items()) + ". Break-even (the first level at which LR is "
                  f"not faster than ar): measured {be['measured']}, replayed {be['replayed']}, planned at "
                  f"these levels {be['planned']}; the plan's own search (`lr plan --find-break-even --objective "
                  "throughput`, bisection over every level, against the plan's own AR: replicas on both "
                  f"devices) {be['searched']}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cold", default=COLD, help="the cold corpus (collect_load.py --cold-cache)")
    ap.add_argument("--out", default=str(OUT.relative_to(ROOT)))
    a = ap.parse_args()
    if not (ROOT / a.cold).is_dir():
        sys.exit(f"bench_cold_cache: {a.cold}: no such trace folder")
    run_and_write(ROOT / a.out, lambda: bench(cold_dir=a.cold), render)


if __name__ == "__main__":
    main()

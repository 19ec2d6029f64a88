"""Where `lr plan` and the trace replay part on the load corpus: the same profile, at its reference
speed (no per-block probe scaling), runs each configuration's recorded blocks (replay) and the
synthetic workload the plan draws (`Profile.workload`), and both are set beside the real runs.

    .venv/bin/python benchmarks/bench_plan_gap.py [--load traces/load] [--levels 1,8] [--seeds 30]

Per level N and configuration (the profile of benchmarks/bench_load.py: calibrated on 1-2 in
flight, one per verifier):
  s/token      sum of request latencies / output tokens: real (load.latency_s), replayed,
               synthetic (`--seeds` blocks of N requests at t = 0, as `lr plan --concurrency N`)
  tokens/req   output tokens per request (a synthetic request must be as long as a real one)
  acceptance   drafted steps accepted / judged
  SD           for n-gram SD: tokens emitted per target pass at 1 in flight (real: output tokens /
               the record's target forward passes; simulated: output tokens / the target's
               iterations; with LR they include the speculative steps' passes) and the per-token acceptance each side uses (the replay: the record's
               accepted / drafted; the synthetic: the profile's maximum-likelihood geometric
               alpha2, lrsim/calib/overheads.geometric_alpha)
Writes benchmarks/results/plan_gap.{json,md}.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_load import PLAN_PROFILES, blocks, calib_paths, load_corpus  # noqa: E402
from benchmarks.write import write_results  # noqa: E402
from lrsim.calib.calibrate import calibrate  # noqa: E402
from lrsim.calib.profile import Profile, validate_doc  # noqa: E402
from lrsim.calib.replay import ReplayWorkload, _knobs  # noqa: E402

# (configuration, the plan profile that prices it): bench_load.PLAN_PROFILES
CASES = (("ar", "exact"), ("lr-d2", "exact"), ("ar", "emb"), ("sd", "emb"),
         ("lr-d2-emb", "emb"), ("lr+sd-d2-emb", "emb"))


def _sim(cfg) -> tuple[dict, list]:
    from lrsim.sim.runner import run

    s, world = run(cfg)
    return s, world.records


def _side(runs: list[tuple[dict, list]], level: int) -> dict:
    lat = [r.latency for _, recs in runs for r in recs]
    tok = sum(r.tokens for _, recs in runs for r in recs)
    prop = sum(s["proposed_steps"] for s, _ in runs)
    iters = sum(sum(s["engine_iterations"].get("target", {}).values())
                if isinstance(s["engine_iterations"].get("target"), dict)
                else s["engine_iterations"].get("target", 0) for s, _ in runs)
    out = {"s_per_token": sum(lat) / tok, "tokens_per_request": tok / len(lat),
           "step_acceptance": sum(s["accepted_steps"] for s, _ in runs) / prop if prop else None}
    if level == 1 and any(s.get("sd") for s, _ in runs):   # alone: every pass is this request's
        out["sd_tokens_per_pass"] = tok / iters if iters else None
    return out


def _real(recs: list[dict], level: int) -> dict:
    lat = [r["load"]["latency_s"] for r in recs]
    tok = sum(r["output_tokens"] for r in recs)
    acc = sum(r["step_acceptance"]["accepted"] for r in recs)
    prop = sum(r["step_acceptance"]["proposed"] for r in recs)
    out = {"s_per_token": sum(lat) / tok, "tokens_per_request": tok / len(recs),
           "step_acceptance": acc / prop if prop else None}
    if recs[0].get("sd") and level == 1:       # alone, a record's passes are its own
        passes = sum(len(r["engine_stats"]["target"]["forward_passes"]) for r in recs)
        out["sd_tokens_per_pass"] = tok / passes
    return out


def case(prof: Profile, recs: list[dict], level: int, seeds: int) -> dict:
    replay = []
    for b in blocks(recs).values():
        wl = ReplayWorkload(b, source=f"c{level}")
        replay.append(_sim(prof.to_config(b[0]["mode"], workload=wl, **_knobs(b[0], prof))))
    synth = [_sim(prof.to_config(recs[0]["mode"], requests=level, seed=k, **_knobs(recs[0], prof)))
             for k in range(seeds)]
    row = {"real": _real(recs, level), "replayed": _side(replay, level), "synthetic": _side(synth, level)}
    if recs[0].get("sd"):
        sd = [r["sd"] for r in recs if r["sd"].get("drafted")]
        row["sd_alpha2"] = {"replayed": statistics.mean(s["accepted"] / s["drafted"] for s in sd),
                            "synthetic": prof.alpha2()}
    return row


def bench(load_root: Path, levels: tuple[int, ...], seeds: int) -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    corpus = load_corpus(load_root)
    paths = calib_paths(load_root)
    profs = {name: Profile(validate_doc(calibrate(paths, configs=set(cfgs), select_placement=False)))
             for name, (cfgs, _) in PLAN_PROFILES.items()}
    out = {"levels": {}, "seeds": seeds, "records": sum(len(r) for lv in corpus.values() for r in lv.values())}
    for n in levels:
        rows = out["levels"][str(n)] = {}
        for cfg, pname in CASES:
            if cfg in corpus.get(n, {}):
                rows[f"{cfg} [{pname}]"] = case(profs[pname], corpus[n][cfg], n, seeds)
    return out | {"elapsed_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}


def _f(x, fmt=".3f"):
    return "-" if x is None else format(x, fmt)


def render(doc: dict) -> str:
    lines = [f"Plan (synthetic workload) vs replay vs real, at the profile's reference speed "
             f"({doc['records']} load-corpus records; synthetic: {doc['seeds']} seed blocks).", "",
             "| in flight | config [profile] | s/token real / replayed / synthetic | tokens/req real / synth "
             "| step acceptance real / synth | SD tokens/pass real / replayed / synth | SD alpha2 replayed / synth |",
             "|---|---|---|---|---|---|---|"]
    for n, rows in doc["levels"].items():
        for name, r in rows.items():
            re_, rp, sy = r["real"], r["replayed"], r["synthetic"]
            sd = (f"{_f(re_.get('sd_tokens_per_pass'), '.2f')} / {_f(rp.get('sd_tokens_per_pass'), '.2f')} / "
                  f"{_f(sy.get('sd_tokens_per_pass'), '.2f')}") if "sd_alpha2" in r else "-"
            a2 = (f"{r['sd_alpha2']['replayed']:.2f} / {r['sd_alpha2']['synthetic']:.2f}"
                  if "sd_alpha2" in r else "-")
            lines.append(f"| {n} | {name} | {_f(re_['s_per_token'])} / {_f(rp['s_per_token'])} / "
                         f"{_f(sy['s_per_token'])} | {re_['tokens_per_request']:.0f} / "
                         f"{sy['tokens_per_request']:.0f} | {_f(re_['step_acceptance'], '.2f')} / "
                         f"{_f(sy['step_acceptance'], '.2f')} | {sd} | {a2} |")
    lines += ["", "Real s/token is at the machine speed of each block; replayed and synthetic at the "
              "profile's reference speed: compare the simulated columns with each other, and each "
              "with real through its ratio to the same level's ar row.", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--load", default=str(ROOT / "traces" / "load"))
    ap.add_argument("--levels", default="1,8")
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "plan_gap.json"))
    a = ap.parse_args()
    try:
        levels = tuple(int(x) for x in a.levels.split(","))
        if not levels or min(levels) < 1 or a.seeds < 1:
            raise ValueError
    except ValueError:
        sys.exit("bench_plan_gap: --levels and --seeds take positive integers")
    doc = bench(Path(a.load), levels, a.seeds)
    write_results(a.out, doc, render)
    print(render(doc))


if __name__ == "__main__":
    main()

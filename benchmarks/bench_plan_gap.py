"""Where `lr plan` and the trace replay part on the load corpus: the same profile, at its reference
speed (no per-block probe scaling), runs each configuration's recorded blocks (replay) and the
synthetic workload the plan draws (`Profile.workload`), and both are set beside the real runs.

    .venv/bin/python benchmarks/bench_plan_gap.py [--load traces/load] [--levels 1,8] [--seeds 30]
    .venv/bin/python benchmarks/bench_plan_gap.py --histogram   # SD drawn from the histograms

Per level N and configuration (the profile of benchmarks/bench_load.py: calibrated on 1-2 in
flight, one per verifier):
  s/token      sum of request latencies / output tokens: real (load.latency_s), replayed,
               synthetic (`--seeds` blocks of N requests at t = 0, as `lr plan --concurrency N`)
  tokens/req   output tokens per request (a synthetic request must be as long as a real one)
  acceptance   drafted steps accepted / judged
  SD           for n-gram SD: tokens emitted per target pass at 1 in flight (real: output tokens /
               the record's target forward passes; simulated: output tokens / the target's
               iterations; with LR they include the speculative steps' passes), and per pass
               that verified a proposal the draft tokens accepted and the share accepting none
               (real: the records' accepted-length histograms; simulated: what the SD model drew,
               lrsim/sim/tokensd.py: Geometric(alpha2), alpha2 matching the mean of the record's
               histogram for the replay (averaged over bench_load.REPLAY_SEEDS draws per block),
               of the profile's for the synthetic; with
               `--histogram`, the histograms themselves, tokensd.AcceptedLengths)
Writes benchmarks/results/plan_gap.{json,md} (--histogram: plan_gap_histogram.{json,md}).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_load import (PLAN_PROFILES, REPLAY_SEEDS, blocks, calib_paths,  # noqa: E402
                                   load_corpus)
from benchmarks.write import batch_curves, write_results  # noqa: E402
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


def _proposals(hists) -> dict | None:
    """Accepted draft tokens per proposal and the share accepting none, from histograms of
    accepted tokens per proposing pass ({accepted: passes})."""
    n = acc = zero = 0
    for h in hists:
        for k, c in h.items():
            n, acc, zero = n + c, acc + k * c, zero + (c if k == 0 else 0)
    return {"accepted_per_proposal": acc / n, "zero_share": zero / n} if n else None


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
    if any(s.get("sd") for s, _ in runs):     # the summary counts passes by tokens emitted
        out["sd_proposals"] = _proposals({int(k) - 1: v for k, v in s["sd"]["accepted_length_hist"].items()}
                                         for s, _ in runs if s.get("sd"))
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
    if recs[0].get("sd"):
        out["sd_proposals"] = _proposals(dict(enumerate(r["sd"].get("accepted_length_hist") or []))
                                         for r in recs)
    return out


def case(prof: Profile, recs: list[dict], level: int, seeds: int, histogram: bool = False) -> dict:
    replay = []
    for b in blocks(recs).values():
        for k in range(REPLAY_SEEDS):
            wl = ReplayWorkload(b, source=f"c{level}", sd_lengths=histogram, seed=k)
            replay.append(_sim(prof.to_config(b[0]["mode"], workload=wl, **_knobs(b[0], prof))))
    synth = []
    for k in range(seeds):
        wl = prof.workload(requests=level, seed=k, sd_lengths=histogram)
        synth.append(_sim(prof.to_config(recs[0]["mode"], workload=wl, **_knobs(recs[0], prof))))
    return {"real": _real(recs, level), "replayed": _side(replay, level), "synthetic": _side(synth, level)}


def bench(load_root: Path, levels: tuple[int, ...], seeds: int, histogram: bool = False,
          curves: dict[str, str] | None = None) -> dict:
    """`curves`: {role: path} of lr calibrate --target-batch-curve/--draft-batch-curve (the
    line shaped by a measured batch curve); none: the line."""
    t0, c0 = time.perf_counter(), time.process_time()
    corpus = load_corpus(load_root)
    paths = calib_paths(load_root)
    profs = {name: Profile(validate_doc(calibrate(paths, configs=set(cfgs), select_placement=False,
                                                  batch_curves={r: str(ROOT / c) for r, c in (curves or {}).items()})))
             for name, (cfgs, _) in PLAN_PROFILES.items()}
    out = {"levels": {}, "seeds": seeds, "replay_seeds": REPLAY_SEEDS, "sd_model": "histogram" if histogram else "geometric",
           **({"batch_curves": curves} if curves else {}),
           "records": sum(len(r) for lv in corpus.values() for r in lv.values())}
    for n in levels:
        rows = out["levels"][str(n)] = {}
        for cfg, pname in CASES:
            if cfg in corpus.get(n, {}):
                rows[f"{cfg} [{pname}]"] = case(profs[pname], corpus[n][cfg], n, seeds, histogram)
    return out | {"elapsed_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}


def _f(x, fmt=".3f"):
    return "-" if x is None else format(x, fmt)


def _sdp(r: dict, key: str, fmt: str) -> str:
    return " / ".join(_f((r[side].get("sd_proposals") or {}).get(key), fmt)
                      for side in ("real", "replayed", "synthetic"))


def render(doc: dict) -> str:
    model = ("the recorded accepted-length histograms (`--histogram`)" if doc.get("sd_model") == "histogram"
             else "Geometric(alpha2), alpha2 matching the mean accepted tokens per proposal of each "
                  "record's accepted-length histogram (of the profile's for the synthetic; "
                  "overheads.mean_alpha)")
    lines = [f"Plan (synthetic workload) vs replay vs real, at the profile's reference speed "
             f"({doc['records']} load-corpus records; replay: {doc.get('replay_seeds', 1)} draws per "
             f"block; synthetic: {doc['seeds']} seed blocks). "
             f"SD's accepted draft tokens per proposal drawn from {model}."
             + (" The line shaped by the measured batch curves " + ", ".join(
                 f"{r}: {c}" for r, c in doc["batch_curves"].items()) + "." if doc.get("batch_curves") else ""), "",
             "| in flight | config [profile] | s/token real / replayed / synthetic | tokens/req real / synth "
             "| step acceptance real / synth | SD tokens/pass real / replayed / synth "
             "| SD accepted per proposal real / replayed / synth | SD proposals accepting none |",
             "|---|---|---|---|---|---|---|---|"]
    for n, rows in doc["levels"].items():
        for name, r in rows.items():
            re_, rp, sy = r["real"], r["replayed"], r["synthetic"]
            has_sd = "sd_proposals" in re_
            sd = (f"{_f(re_.get('sd_tokens_per_pass'), '.2f')} / {_f(rp.get('sd_tokens_per_pass'), '.2f')} / "
                  f"{_f(sy.get('sd_tokens_per_pass'), '.2f')}") if has_sd else "-"
            per = _sdp(r, "accepted_per_proposal", ".2f") if has_sd else "-"
            zero = _sdp(r, "zero_share", ".2f") if has_sd else "-"
            lines.append(f"| {n} | {name} | {_f(re_['s_per_token'])} / {_f(rp['s_per_token'])} / "
                         f"{_f(sy['s_per_token'])} | {re_['tokens_per_request']:.0f} / "
                         f"{sy['tokens_per_request']:.0f} | {_f(re_['step_acceptance'], '.2f')} / "
                         f"{_f(sy['step_acceptance'], '.2f')} | {sd} | {per} | {zero} |")
    lines += ["", "Real s/token is at the machine speed of each block; replayed and synthetic at the "
              "profile's reference speed: compare the simulated columns with each other, and each "
              "with real through its ratio to the same level's ar row.", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--load", default=str(ROOT / "traces" / "load"))
    ap.add_argument("--levels", default="1,8")
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--histogram", action="store_true",
                    help="SD draws the recorded accepted-length histograms, not Geometric(alpha2)")
    ap.add_argument("--out", default=None,
                    help="default benchmarks/results/plan_gap.json (--histogram: plan_gap_histogram.json)")
    ap.add_argument("--target-batch-curve", metavar="PATH",
                    help="profiles calibrated with lr calibrate --target-batch-curve PATH")
    ap.add_argument("--draft-batch-curve", metavar="PATH", help="the same for the draft's line")
    a = ap.parse_args()
    curves = batch_curves(a, ROOT, "bench_plan_gap")
    out = a.out or str(ROOT / "benchmarks" / "results" / ("plan_gap_histogram.json" if a.histogram
                                                          else "plan_gap.json"))
    try:
        levels = tuple(int(x) for x in a.levels.split(","))
        if not levels or min(levels) < 1 or a.seeds < 1:
            raise ValueError
    except ValueError:
        sys.exit("bench_plan_gap: --levels and --seeds take positive integers")
    doc = bench(Path(a.load), levels, a.seeds, a.histogram, curves)
    write_results(out, doc, render)
    print(render(doc))


if __name__ == "__main__":
    main()

"""Real Lookahead Reasoning under load: measured speedup and break-even vs what the simulator,
calibrated at 1 and 2 requests in flight only, predicts at 4 and 8.

    .venv/bin/python benchmarks/bench_load.py [--load traces/load] [--json]
        [--out benchmarks/results/load.json]

Reads the load corpus (benchmarks/collect_load.py: traces/load/gsm8k/c<N>/<config>.jsonl; a
block = N problems run together, a closed loop of N). Per level N and configuration:

  measured     tokens/s = the blocks' output tokens / the sum of their makespans (first request
               start to last request end); speedup = tokens/s over ar's on the same blocks (the
               target on its own core) and over ar-er's (AR on both cores: equal resources);
               TTFT and TPOT medians (load.ttft_s / load.tpot_s).
  replayed     a profile calibrated on the c1 and c2 records of every configuration (ar-er's,
               another binding, only give the equal-resources TP efficiency: lrsim/calib/
               equal.py) replays every block but ar-er's: its N records simulated together
               (their recorded steps, lengths and verdicts; N requests in flight on the
               simulated engines, which batch them with the calibrated batch-latency curve), the
               profile scaled to the machine speed probed before the block.
  planned      `lr plan --profile P --concurrency N` (a synthetic workload from the profile's
               acceptance and step lengths; one profile per verifier, calibrated on 1-2 in
               flight): each configuration's planned tokens/s as measured (ar and sd on one
               device, `--devices 1`; the LR ones on both) over ar's and ar-er's (the ratio of
               mean latencies, the plan's own `speedup`, is kept beside it: plan_at).
  break-even   the first measured level at which each configuration's speedup is <= 1, against
               ar and against ar-er; the same from the replay and from the plan, and the one
               `lr plan --find-break-even --objective throughput` finds by bisection over every
               level up to the highest (the tokens/s ratio, as measured).

Targets: predicted speedup within 10% of measured at every level, the predicted
break-even level equal to the measured one. Levels 1 and 2 are in-sample for the replay's latency
curves; 4 and 8 are not.

Held out (`--calibrate-on traces/load --load traces/load-heldout`): the profiles come from the
calibration corpus's 1-2 in flight and predict a corpus collected at another time, on another
machine, on other problems and at other levels (benchmarks/collect_load.py --first-problem 400
--levels 1,3,6): every level is out of sample. The replay and the plan's profiles are rescaled
once to the held-out corpus's median probe (what a user does: `lr calibrate probe`, then plan; a
single probe of idle engines is noisy), so the replayed tokens/s are absolute predictions too; the
replay at each block's own probe is reported beside it.

Transfer (`--calibrate-on traces/load --load traces/load-transfer`): the same, on configurations
the profiles never ran (benchmarks/collect_load.py --set transfer: lr at depths 1 and 3, lr+sd at
depth 3, all with the embedding verifier, beside ar on problems 600 on). The replay moves the
latency curves to them (their own steps and verdicts replayed); the plan prices them from the
depth-2 profile alone, acceptance by depth included (a depth past the profile's deepest takes the
deepest's acceptance).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lrsim.calib.calibrate import calibrate, read_records  # noqa: E402
from lrsim.calib.physical import config_label  # noqa: E402
from lrsim.calib.profile import Profile, save_profile, validate_doc  # noqa: E402
from lrsim.calib.replay import ReplayWorkload, _knobs, probe_scaled  # noqa: E402

CALIB_LEVELS = (1, 2)
CALIB_CONFIGS = ("ar", "sd", "lr-d2", "lr-d2-emb", "lr+sd-d2-emb")   # the replay's calibration
# and ar-er, whose AR on both cores against ar's gives the baseline's measured TP efficiency
PROFILE_CONFIGS = (*CALIB_CONFIGS, "ar-er")
SPEEDUP_TARGET = 0.10          # relative error of the predicted speedup we aim for
# `lr plan` prices one verifier's acceptance per profile: one profile per verifier, each calibrated
# on 1-2 in flight, and the plan's label of each measured configuration
PLAN_PROFILES = {
    "exact": (("ar", "ar-er", "sd", "lr-d2"), {"sd": "sd k2=7", "lr-d2": "lr depth=2"}),
    "emb": (("ar", "ar-er", "sd", "lr-d2-emb", "lr+sd-d2-emb"),
            {"lr-d2-emb": "lr depth=2", "lr+sd-d2-emb": "lr+sd depth=2 k2=7",
             # traces/load-transfer's configurations (collect_load.py --set transfer), which the
             # profiles of depth 2 never ran: priced at their depth from the same profile
             "lr-d1-emb": "lr depth=1", "lr-d3-emb": "lr depth=3", "lr+sd-d3-emb": "lr+sd depth=3 k2=7"}),
}
# the step acceptance a level's records of these configurations measured (measured_acceptance)
ACCEPTANCE_CONFIGS = {"exact": ("lr-d2",), "emb": ("lr-d2-emb", "lr+sd-d2-emb", "lr-d1-emb", "lr-d3-emb",
                                                    "lr+sd-d3-emb")}
PLAN_ARGS = ("--depth", "1-3", "--k2", "7", "--placement", "dedicated",
             "--samples", "32", "--ci-target", "0", "--jobs", "1", "--json")
# The measured ar and sd ran on the target's core alone, N requests on it. `lr plan` on the
# profile's two devices would run them as two replicas of N/2 (its reference AR too): priced so,
# sd at 2 in flight looked like sd alone (planned 1.06x, measured 0.88x). So ar and sd are planned
# on one device, and the LR configurations (one replica on both) against that AR.
ONE_DEVICE = ("--devices", "1", "--modes", "sd")
BOTH_DEVICES = ("--modes", "sd,lr,lr+sd")


def load_corpus(root: Path, dataset: str = "gsm8k") -> dict[int, dict[str, list[dict]]]:
    """{level: {config: records}} of every non-empty trace file."""
    out: dict[int, dict[str, list[dict]]] = {}
    for path in sorted((root / dataset).glob("c*/*.jsonl")):
        recs = [r for r in read_records(path) if r.get("steps") and r.get("load")]
        if recs:
            out.setdefault(int(path.parent.name[1:]), {})[path.stem] = recs
    return out


def blocks(recs: list[dict]) -> dict[int, list[dict]]:
    """Records by block (run.flags.load_round)."""
    out: dict[int, list[dict]] = {}
    for r in recs:
        out.setdefault(int(r["run"]["flags"]["load_round"]), []).append(r)
    return out


def makespan(block: list[dict]) -> float:
    """First request start to last request end (the block's own clock: load.arrival_s + latency)."""
    ends = [r["load"]["arrival_s"] + r["load"]["latency_s"] for r in block]
    starts = [e - r["wall_time_s"] for e, r in zip(ends, block)]
    return max(ends) - min(starts)


# Replays of each speculative block, averaged: what a record does not hold (SD's accepted lengths,
# the verdicts of drafts it never judged) is drawn, and one draw of a one-record block is noisy
# (SD's accepted tokens per proposal: about +-8% over one 192-token answer)
REPLAY_SEEDS = 4


def predict_block(prof: Profile, block: list[dict], speed: dict | None = None) -> float:
    """Simulated makespan of the block's records run together, at the machine speed probed
    before it (the record's own probe at level 1; the run's probe of the idle engines above), or
    at `speed` ({engine: {"decode_s", "prefill_s"}}: one probe for every block) when given."""
    worlds, over = replay_worlds(prof, block, speed)
    spans = [max(r.finish for r in w.records) - min(r.arrival for r in w.records) for w in worlds]
    return sum(spans) / len(spans) + over


def replay_worlds(prof: Profile, block: list[dict], speed: dict | None = None,
                  arrivals: bool = False) -> tuple[list, float]:
    """The block's records simulated together (predict_block's machine speed), once per replay
    seed (ar draws nothing: once), with their recorded arrivals when `arrivals` (an open-loop
    block); returns the simulated worlds and the profile's per-request overhead (s) of the mode."""
    from lrsim.sim.runner import run

    first = block[0]
    probe = first.get("probe") or {}
    if speed is not None:
        probe = {"before": {"engines": speed}}
    elif not probe and first["run"].get("probe_at_start"):
        p = first["run"]["probe_at_start"]
        probe = {"before": p, "after": p}
    prof = probe_scaled(prof, {"probe": probe, "problem_id": first["problem_id"]}, "before")
    worlds = []
    for seed in range(1 if first["mode"] == "ar" else REPLAY_SEEDS):
        wl = ReplayWorkload(block, source=f"block {first['run']['flags']['load_round']}", seed=seed,
                            arrivals=arrivals)
        worlds.append(run(prof.to_config(first["mode"], workload=wl, **_knobs(first, prof)))[1])
    over = prof.doc["overheads"].get("per_request_s_by_mode", {}).get(
        first["mode"], prof.doc["overheads"].get("per_request_s", 0.0))
    return worlds, over


def level_table(level: dict[str, list[dict]], prof: Profile | None, speed: dict | None = None) -> dict:
    """Per configuration: measured (and replayed) tokens/s over the blocks every configuration
    of the level finished, and speedups over ar and ar-er on those blocks; `speed`: replay every
    block at that one probe (predict_block)."""
    by_cfg = {c: blocks(recs) for c, recs in level.items()}
    common = set.intersection(*(set(b) for b in by_cfg.values())) if by_cfg else set()
    # only full blocks (a killed block's survivors ran beside fewer requests than N)
    n = max((len(b) for bs in by_cfg.values() for b in bs.values()), default=0)
    common = {k for k in common if all(len(bs[k]) == n for bs in by_cfg.values())}
    out = {}
    for cfg, bs in sorted(by_cfg.items()):
        sel = [bs[k] for k in sorted(common)]
        if not sel:
            continue
        toks = sum(r["output_tokens"] for b in sel for r in b)
        meas = sum(makespan(b) for b in sel)
        row = {"blocks": len(sel), "records": sum(len(b) for b in sel), "tokens": toks,
               "tokens_per_s": toks / meas,
               "mean_latency_s": float(np.mean([r["load"]["latency_s"] for b in sel for r in b])),
               "ttft_p50_s": _median([r["load"]["ttft_s"] for b in sel for r in b]),
               "tpot_p50_s": _median([r["load"]["tpot_s"] for b in sel for r in b]),
               "step_acceptance": _ratio(sel, "accepted", "proposed"),
               "correct": sum(bool(r["correct"]) for b in sel for r in b)}
        if prof is not None and cfg != "ar-er":      # another binding: only its TP efficiency
            row["predicted_tokens_per_s"] = toks / sum(predict_block(prof, b, speed) for b in sel)
        out[cfg] = row
    for cfg, row in out.items():
        if "ar" in out and cfg != "ar":
            row["speedup_vs_ar_ci90"] = speedup_interval([by_cfg[cfg][k] for k in sorted(common)],
                                                         [by_cfg["ar"][k] for k in sorted(common)])
        for base in ("ar", "ar-er"):
            if base in out and cfg != base:
                row[f"speedup_vs_{base}"] = row["tokens_per_s"] / out[base]["tokens_per_s"]
                if base == "ar":    # the ratio of mean request latencies, as lr plan's speedup is
                    row["latency_speedup_vs_ar"] = out["ar"]["mean_latency_s"] / row["mean_latency_s"]
                if "predicted_tokens_per_s" in row and base == "ar":
                    row["predicted_speedup_vs_ar"] = (row["predicted_tokens_per_s"]
                                                      / out["ar"]["predicted_tokens_per_s"])
    return out


CI_LEVEL, CI_RESAMPLES = 0.90, 2000   # the measured speedup's interval over blocks (speedup_interval)


def speedup_interval(cfg_blocks: list[list[dict]], ar_blocks: list[list[dict]]) -> list[float] | None:
    """A 90% bootstrap interval of the measured speedup over ar (tokens over makespans, both
    summed over the blocks), the blocks resampled in pairs (block k of both ran the same
    problems): how far the measurement itself could move with other problems. None below 3
    blocks. scipy.stats.bootstrap, percentile method (BCa needs more blocks than a level has),
    seeded: the same traces give the same interval."""
    from scipy.stats import bootstrap

    if len(cfg_blocks) < 3:
        return None
    cols = [np.array([sum(r["output_tokens"] for r in b) for b in cfg_blocks], float),
            np.array([makespan(b) for b in cfg_blocks]),
            np.array([sum(r["output_tokens"] for r in b) for b in ar_blocks], float),
            np.array([makespan(b) for b in ar_blocks])]

    def ratio(tc, sc, ta, sa, axis=-1):
        return (tc.sum(axis) / sc.sum(axis)) / (ta.sum(axis) / sa.sum(axis))

    ci = bootstrap(cols, ratio, paired=True, vectorized=True, confidence_level=CI_LEVEL,
                   n_resamples=CI_RESAMPLES, method="percentile",
                   rng=np.random.default_rng(0)).confidence_interval
    return [float(ci.low), float(ci.high)]


def _median(xs):
    xs = [x for x in xs if x is not None]
    return float(np.median(xs)) if xs else None


def _ratio(sel, a, b):
    num = sum(r["step_acceptance"][a] for blk in sel for r in blk)
    den = sum(r["step_acceptance"][b] for blk in sel for r in blk)
    return num / den if den else None


def calib_paths(load_root: Path) -> list[str]:
    return [str(p) for n in CALIB_LEVELS for p in sorted((load_root / "gsm8k" / f"c{n}").glob("*.jsonl"))]


def measure(calib_root: Path, corpus: dict, speed: dict | None = None) -> tuple[list[str], dict, Profile]:
    """Every level's measured and replayed table (the replay's profile calibrated on 1-2 in
    flight of the corpus at `calib_root`; `speed`: every block replayed at that one probe);
    returns the calibration files and that profile too."""
    paths = calib_paths(calib_root)
    prof = Profile(validate_doc(calibrate(paths, configs=set(PROFILE_CONFIGS), select_placement=False)))
    return paths, {n: level_table(lv, prof, speed) for n, lv in sorted(corpus.items())}, prof


def replay_speedup_errors(levels: dict) -> list[float]:
    """|replayed / measured - 1| of every replayed configuration's speedup over ar."""
    return [abs(r["predicted_speedup_vs_ar"] / r["speedup_vs_ar"] - 1)
            for t in levels.values() for r in t.values() if r.get("predicted_speedup_vs_ar")]


def replay_errors(levels: dict) -> list[float]:
    """Replayed over measured tokens/s, minus 1, of every replayed (level, configuration)."""
    return [r["predicted_tokens_per_s"] / r["tokens_per_s"] - 1
            for t in levels.values() for r in t.values() if r.get("predicted_tokens_per_s")]


def fit_summary(prof: Profile) -> dict:
    """Per engine: the measured position factors and, per configuration, the sum of its
    forward passes as priced by the line alone and with the factors, minus the measured sum."""
    out = {}
    for role in ("target", "draft"):
        lat = prof.doc["latency"].get(role) or {}
        fit = lat.get("fit") or {}
        out[role] = {"position_factors": lat.get("position_factors", []),
                     "by_config": {c: {k: row[k] for k in ("passes", "linear_sum_diff_pct", "sum_diff_pct")
                                       if k in row}
                                   for c, row in (fit.get("by_config") or {}).items() if c != "probe"}}
    return out


def corpus_probe(corpus: dict) -> dict:
    """The median probe of every engine over a corpus (each record's own probes at level 1, the
    run's probe of the idle engines before each block above): the machine speed it ran at."""
    from lrsim.calib.physical import reference_probe

    recs = []
    for lv in corpus.values():
        for rs in lv.values():
            for r in rs:
                p = r["run"].get("probe_at_start")
                recs.append(r if r.get("probe") or not p else {"probe": {"before": p}})
    return reference_probe(recs) or {}


def plan_profile(paths: list[str], cfgs, today: dict | None) -> Profile:
    """One plan profile calibrated on `paths`; rescaled to `today`'s probe when given (held out)."""
    from lrsim.calib.rescale import factors_from_probe

    prof = Profile(validate_doc(calibrate(paths, configs=set(cfgs), select_placement=False)))
    if today:
        prof = prof.rescaled(factors_from_probe(prof.doc["probe"], {"engines": today}),
                             "the held-out corpus's median probe")
    return prof


def lr_plan(profile_path: Path, *args: str) -> dict:
    cmd = [sys.executable, str(ROOT / "cli.py"), "plan", "--profile", str(profile_path), *args, *PLAN_ARGS]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=1800)
    if p.returncode != 0:
        raise SystemExit(f"bench_load: lr plan failed: {p.stderr.strip()}")
    return json.loads(p.stdout)


def plan_at(profiles: dict[str, Path], level: int) -> dict:
    """`lr plan` at `level` requests in flight: {config: speedups vs ar and vs equal resources},
    each the ratio of planned tokens/s of the configurations as measured (ONE_DEVICE): a block of
    N requests started together, as the measured speedup (tokens over makespans) is. The ratio of
    mean latencies, the plan's own `speedup`, is kept as latency_speedup_vs_ar: an LR block's
    requests finish at different times, so its mean latency is shorter than its makespan and that
    ratio is the more optimistic one (0.84 against 0.76 for lr-d2-emb at 6 in flight, held out)."""
    out = {}
    for name, path in profiles.items():
        both = lr_plan(path, "--concurrency", str(level), *BOTH_DEVICES)
        one = lr_plan(path, "--concurrency", str(level), *ONE_DEVICE)
        ar, er = one["reference"], both.get("equal_resources_baseline") or {}
        rows = {r["label"]: r for r in both["candidates"]} | {r["label"]: r for r in one["candidates"]}
        for cfg, lab in PLAN_PROFILES[name][1].items():
            if lab in rows:
                r = rows[lab]
                out[cfg] = {"speedup_vs_ar": r["tokens_per_s"] / ar["tokens_per_s"],
                            "speedup_vs_ar-er": r["tokens_per_s"] / er["tokens_per_s"] if er else None,
                            "latency_speedup_vs_ar": ar["mean_latency_s"] / r["mean_latency_s"]}
        if name == "exact" and er:
            out["ar-er"] = {"speedup_vs_ar": er["tokens_per_s"] / ar["tokens_per_s"],
                            "latency_speedup_vs_ar": ar["mean_latency_s"] / er["mean_latency_s"]}
    return out


def measured_acceptance(profiles: dict[str, Path], level: dict[str, list[dict]], tmp: Path, n: int) -> dict[str, Path]:
    """Each plan profile with its step acceptance (by depth) replaced by what the level's own
    records of that profile's configurations accepted: the plan with the acceptance it could not
    know, so its remaining error is the latency model's (the calibration's few problems accepted
    differently from a level's others: a sampling error no latency model removes)."""
    out = {}
    for name, path in profiles.items():
        by: dict[str, list[int]] = {}
        for cfg in ACCEPTANCE_CONFIGS[name]:
            for r in level.get(cfg, []):
                for d, (p, a) in r["step_acceptance"]["by_depth"].items():
                    by.setdefault(d, [0, 0])
                    by[d][0] += p
                    by[d][1] += a
        if not any(p for p, _ in by.values()):
            continue
        doc = json.loads(Path(path).read_text())
        proposed, accepted = sum(p for p, _ in by.values()), sum(a for _, a in by.values())
        doc["step_acceptance"] |= {"by_depth": dict(sorted(by.items())), "rate": accepted / proposed,
                                   "proposed": proposed, "accepted": accepted}
        out[name] = save_profile(Profile(validate_doc(doc)), tmp / f"load-profile-{name}-c{n}-acc.json")
    return out


def search(profiles: dict[str, Path], top: int) -> dict:
    """`lr plan --find-break-even --objective throughput --concurrency TOP`: {config: {"vs_ar":
    cell, "vs_ar-er": cell}} (the bisection's break-even at any level 1..TOP, not only the measured
    ones, on the tokens/s ratio, as measured)."""
    from lrsim.plan.breakeven import Range

    out = {}
    for name, path in profiles.items():
        for devices in (BOTH_DEVICES, ONE_DEVICE):   # sd as measured: on one device
            res = lr_plan(path, "--find-break-even", "--objective", "throughput", "--concurrency", str(top),
                          *devices)
            rng = Range(res["axis"], *res["range"])
            rows = {r["label"]: r for r in res["rows"]}
            out |= {cfg: {"vs_ar": level(rows[lab]["vs_ar"], rng), "vs_ar-er": level(rows[lab]["vs_equal"], rng)}
                    for cfg, lab in PLAN_PROFILES[name][1].items() if lab in rows}
    return out


def level(r: dict, rng) -> str:
    """The search's answer in the measured columns' terms: 'never' (no gain even at the lowest
    load) is the first level at which the speedup is <= 1, the lowest."""
    from lrsim.plan.breakeven import cell

    return rng.text(rng.lo) if r["status"] == "never" else cell(r, rng)


def break_even(levels: dict[int, dict], key: str, cfg: str) -> str:
    """The first level at which cfg's `key` speedup is <= 1 (the lowest level if it never beat
    the baseline; ">N" if it still does at the highest level N; "-" without data)."""
    seen = [(n, t[cfg][key]) for n, t in sorted(levels.items()) if cfg in t and t[cfg].get(key) is not None]
    if not seen:
        return "-"
    for n, s in seen:
        if s <= 1.0:
            return str(n)
    return f">{seen[-1][0]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--load", default="traces/load")
    ap.add_argument("--calibrate-on", default=None,
                    help="calibrate on this corpus's 1-2 in flight instead (held out: every level "
                         "of --load is predicted; default: --load itself)")
    ap.add_argument("--out", default="benchmarks/results/load.json")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    t0, c0 = time.perf_counter(), time.process_time()
    corpus = load_corpus(ROOT / a.load)
    if not corpus:
        sys.exit(f"bench_load: no load traces under {a.load} (benchmarks/collect_load.py)")
    calib_root = ROOT / (a.calibrate_on or a.load)
    held_out = calib_root.resolve() != (ROOT / a.load).resolve()
    if held_out and not calib_paths(calib_root):
        sys.exit(f"bench_load: no level 1-2 traces under {a.calibrate_on} to calibrate on")
    today = corpus_probe(corpus) if held_out else None
    # held out: every block replayed at the corpus's median probe, as the plan is priced (a
    # single probe of idle engines is noisy); each block's own probe only for the record below
    paths, measured, replay_profile = measure(calib_root, corpus, today)
    own = (replay_errors({n: level_table(lv, replay_profile) for n, lv in sorted(corpus.items())})
           if held_out else None)       # the same profile, not calibrated a second time
    with tempfile.TemporaryDirectory() as tmp:
        profiles = {name: save_profile(plan_profile(paths, cfgs, today), Path(tmp) / f"load-profile-{name}.json")
                    for name, (cfgs, _) in PLAN_PROFILES.items()}
        # the plan prices every configuration of its grid; kept: those the corpus measured, and
        # the equal-resources baseline
        def kept(n, rows):
            return {c: r for c, r in rows.items() if c in corpus[n] or c == "ar-er"}
        planned = {n: kept(n, plan_at(profiles, n)) for n in sorted(corpus)}
        planned_acc = {n: kept(n, plan_at(measured_acceptance(profiles, corpus[n], Path(tmp), n), n))
                       for n in sorted(corpus)}
        searched = search(profiles, max(corpus))
        tp_eff = {name: json.loads(Path(path).read_text())["placement"].get("equal_resources")
                  for name, path in profiles.items()}
    configs = sorted({c for t in measured.values() for c in t} - {"ar"})
    be = {c: {"measured_vs_ar": break_even(measured, "speedup_vs_ar", c),
              "measured_vs_ar-er": break_even(measured, "speedup_vs_ar-er", c),
              "replayed_vs_ar": break_even(measured, "predicted_speedup_vs_ar", c),
              "planned_vs_ar": break_even(planned, "speedup_vs_ar", c),
              "planned_vs_ar-er": break_even(planned, "speedup_vs_ar-er", c),
              "searched_vs_ar": searched.get(c, {}).get("vs_ar", "-"),
              "searched_vs_ar-er": searched.get(c, {}).get("vs_ar-er", "-")}
          for c in configs}
    errs = replay_speedup_errors(measured)
    tps = replay_errors(measured)
    out = {"levels": {str(n): t for n, t in measured.items()},
           "planned": {str(n): t for n, t in planned.items()},
           # the plan given each level's measured step acceptance (measured_acceptance)
           "planned_at_measured_acceptance": {str(n): t for n, t in planned_acc.items()},
           "break_even": be,
           "calibrated_on": {"corpus": a.calibrate_on or a.load, "levels": list(CALIB_LEVELS),
                             "configs": list(PROFILE_CONFIGS), "held_out": held_out,
                             # configurations predicted that no calibration record ran
                             "unseen_configs": sorted({c for t in measured.values() for c in t}
                                                      - set(PROFILE_CONFIGS))},
           "machine_speed": {"profile": replay_profile.doc.get("probe"), "corpus": today} if held_out else None,
           "latency_fit": fit_summary(replay_profile),
           "tp_efficiency": tp_eff,
           "replay_speedup_error_max": max(errs) if errs else None,
           # replayed over measured tokens/s, minus 1 (each block at its probed speed): absolute
           "replay_tokens_per_s_error": {"min": min(tps), "max": max(tps)} if tps else None,
           "replay_probe": "the corpus's median" if held_out else "its own",
           # held out: the same replay with each block at its own probe
           "replay_tokens_per_s_error_own_probe": {"min": min(own), "max": max(own)} if own else None,
           "target": {"speedup_rel_error": SPEEDUP_TARGET},
           "records": sum(len(r) for lv in corpus.values() for r in lv.values()),
           "max_tokens": next(r["run"]["flags"]["max_tokens"] for lv in corpus.values()
                              for rs in lv.values() for r in rs),
           "elapsed_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    md = render(out)
    Path(a.out).with_suffix(".md").write_text(md)
    print(json.dumps(out, indent=1) if a.json else md)


def plan_errors(out: dict, key: str, speedup: str = "speedup_vs_ar") -> list[float]:
    """|planned / measured - 1| of every configuration's speedup vs ar at every level (`speedup`:
    latency_speedup_vs_ar for the ratio of mean latencies, planned and measured)."""
    return [abs(p[speedup] / out["levels"][n][cfg][speedup] - 1)
            for n, t in out[key].items() for cfg, p in t.items()
            if p.get(speedup) and out["levels"].get(n, {}).get(cfg, {}).get(speedup)]


def misses_inside_interval(out: dict, key: str) -> tuple[int, int]:
    """(how many of the pairs planned more than 10% off lie inside the measured speedup's 90%
    interval over blocks, how many pairs are that far off): the misses the measurement's own
    spread over problems cannot tell from a hit."""
    tol = out["target"]["speedup_rel_error"]
    inside = off = 0
    for n, t in out[key].items():
        for cfg, p in t.items():
            m = out["levels"].get(n, {}).get(cfg, {})
            if p.get("speedup_vs_ar") and m.get("speedup_vs_ar") and abs(p["speedup_vs_ar"] / m["speedup_vs_ar"] - 1) > tol:
                off += 1
                ci = m.get("speedup_vs_ar_ci90")
                inside += bool(ci and ci[0] <= p["speedup_vs_ar"] <= ci[1])
    return inside, off


def interval(ci) -> str:
    return "-" if not ci else f"{ci[0]:.2f}-{ci[1]:.2f}"


def render(out: dict) -> str:
    f = lambda v, fmt="{:.2f}": "-" if v is None else fmt.format(v)  # noqa: E731
    cal = out["calibrated_on"]
    acc = out.get("planned_at_measured_acceptance")
    lines = [f"Load corpus: {out['records']} records (GSM8K, {out['max_tokens']}-token budget; target on core 0, "
             "draft on core 1; ar-er = AR on both cores)."
             + (f" Held out: every prediction comes from profiles calibrated on {cal['corpus']}'s levels "
                f"{', '.join(map(str, cal['levels']))} (another run, machine and problems"
                + (f"; configurations it never ran: {', '.join(cal['unseen_configs'])}"
                   if cal.get("unseen_configs") else "")
                + "), rescaled to this corpus's median probe." if cal.get("held_out") else ""),
             "",
             "| in flight | config | tok/s | speedup vs ar (measured / replayed / planned"
             + (" / planned at the level's acceptance" if acc is not None else "") + ") "
             "| measured, 90% interval | vs ar-er (measured / planned) | TTFT p50 s | TPOT p50 s |",
             "|---|---|---|---|---|---|---|---|"]
    for n, t in out["levels"].items():
        pl = out["planned"].get(n, {})
        for cfg, r in t.items():
            p = pl.get(cfg, {})
            pa = "" if acc is None else " / " + f((acc.get(n, {}).get(cfg) or {}).get("speedup_vs_ar"))
            lines.append(f"| {n} | {cfg} | {f(r['tokens_per_s'])} | "
                         f"{f(r.get('speedup_vs_ar'))} / {f(r.get('predicted_speedup_vs_ar'))} / "
                         f"{f(p.get('speedup_vs_ar'))}{pa} | {interval(r.get('speedup_vs_ar_ci90'))} | "
                         f"{f(r.get('speedup_vs_ar-er'))} / "
                         f"{f(p.get('speedup_vs_ar-er'))} | {f(r['ttft_p50_s'], '{:.1f}')} | "
                         f"{f(r['tpot_p50_s'], '{:.2f}')} |")
    top = max(map(int, out["levels"]))
    lines += ["", f"Break-even (the first level at which the speedup is <= 1; >{top}: never up to {top}; "
              f"searched: `lr plan --find-break-even --objective throughput --concurrency {top}`, bisection over every level "
              f"1-{top}; sd on one device as measured, the LR configurations against the plan's own AR, "
              f"replicas on both devices):", "",
              "| config | vs ar measured | replayed | planned | searched | vs ar-er measured | planned | searched |",
              "|---|---|---|---|---|---|---|---|"]
    for c, b in out["break_even"].items():
        lines.append(f"| {c} | {b['measured_vs_ar']} | {b['replayed_vs_ar']} | {b['planned_vs_ar']} | "
                     f"{b.get('searched_vs_ar', '-')} | {b['measured_vs_ar-er']} | {b['planned_vs_ar-er']} | "
                     f"{b.get('searched_vs_ar-er', '-')} |")
    per = ", ".join(f"{n} in flight: {next(iter(t.values()))['blocks']}" for n, t in out["levels"].items())
    lines += ["", f"Blocks run by every configuration (N problems each): {per}."]
    lines += ["", f"Largest replayed-speedup error: {f(out['replay_speedup_error_max'], '{:.1%}')} "
              f"(target {out['target']['speedup_rel_error']:.0%}); calibrated on levels "
              f"{', '.join(map(str, cal['levels']))} " + (f"of {cal['corpus']}." if cal.get("held_out") else "only.")]
    rep = replay_speedup_errors(out["levels"])
    if rep:
        lines += ["", f"Replayed: speedup within {out['target']['speedup_rel_error']:.0%} of measured at "
                  f"{sum(x <= out['target']['speedup_rel_error'] for x in rep)} of {len(rep)} "
                  "(configuration, level) pairs."]
    if acc is not None:
        for name, key in (("planned", "planned"), ("planned at each level's measured step acceptance",
                                                    "planned_at_measured_acceptance")):
            e = plan_errors(out, key)
            inside = misses_inside_interval(out, key)
            lines += ["", f"{name.capitalize()}: speedup within {out['target']['speedup_rel_error']:.0%} of "
                      f"measured at {sum(x <= out['target']['speedup_rel_error'] for x in e)} of {len(e)} "
                      f"(configuration, level) pairs, largest error {max(e):.1%}"
                      + (f"; of the {inside[1]} outside 10%, {inside[0]} inside the measured speedup's 90% "
                         "interval over blocks" if inside[1] else "") + "."]
        e = plan_errors(out, "planned", "latency_speedup_vs_ar")
        if e:
            lines += ["", "Speedups are tokens/s ratios (a block of N requests started together: tokens over "
                      "makespans, planned and measured). The plan's own speedup, the ratio of mean request "
                      "latencies, is higher for LR (its requests finish at different times, so their mean "
                      "latency is shorter than the block's makespan); against the measured ratio of mean "
                      f"latencies it is within {out['target']['speedup_rel_error']:.0%} at "
                      f"{sum(x <= out['target']['speedup_rel_error'] for x in e)} of {len(e)} pairs, largest error "
                      f"{max(e):.1%}."]
    tps = out.get("replay_tokens_per_s_error")
    if tps:
        own = out.get("replay_tokens_per_s_error_own_probe")
        lines += ["", f"Replayed tokens/s over measured (absolute; every block at "
                  f"{out.get('replay_probe', 'its own')} probe): {tps['min']:+.1%} to {tps['max']:+.1%}"
                  + (f"; each block at its own probe: {own['min']:+.1%} to {own['max']:+.1%}." if own else ".")]
    ms = out.get("machine_speed")
    if ms and ms.get("corpus") and ms.get("profile"):
        lines += ["", "Machine speed, this corpus's median probe over the profile's (decode pass): " + ", ".join(
            f"{role} {ms['corpus'][role]['decode_s'] / ms['profile'][role]['decode_s']:.2f}x"
            for role in ("target", "draft") if role in ms["corpus"] and role in ms["profile"]) + "."]
    for role, fit in (out.get("latency_fit") or {}).items():
        rows = ", ".join(f"{c} {r['linear_sum_diff_pct']:+.1f}% / {r['sum_diff_pct']:+.1f}%"
                         for c, r in fit["by_config"].items() if "linear_sum_diff_pct" in r)
        knots = ", ".join(f"{q:g}: {v:.3f}" for q, v in fit["position_factors"]) or "none"
        lines += ["", f"{role.capitalize()} forward passes, predicted minus measured time by configuration "
                  f"(the replay's profile; the physical model's line / with its position factors): {rows}. "
                  f"Position factors (SD verification positions v = q - B: measured / line): {knots}."]
    eff = next((e for e in (out.get("tp_efficiency") or {}).values() if e), None)
    if eff:
        lines += ["", f"Equal-resources TP efficiency measured on levels 1-2 (lrsim/calib/equal.py): "
                  f"AR on both cores {eff['speedup']:.2f}x AR on one over {eff['pairs']} problem pairs, "
                  f"tp_efficiency {eff['tp_efficiency']:.2f} (the simulator's default: 0.90); the plan's "
                  f"ar-er uses it."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()

"""Adaptive lookahead in the simulator: lr-adaptive against every static configuration.

    .venv/bin/python benchmarks/bench_adaptive.py [--jobs 2] [--presets r1-gsm8k,...]
        [--out benchmarks/results/adaptive.json]

lr-adaptive (lrsim/sim/policies/lr_adaptive.py) starts every request from the neutral prior of
lrcore/adaptive/ (SD acceptance 0.5 where SD is on offer): it is told the bounds (depth <= 4,
width 1, SD off or k2 3, 5 or 9 up to its --k2), never the acceptance rate. Three targets, each on the
paper's hardware (presets, 4x H100):

  (a) presets: on each of the 14 paper presets, `lr plan`'s planner (lrsim/plan/planner.py) ranks
      its default grid (sd, lr, lr+sd; depth 1-4, k2 3/5/9, width 1; the dedicated placement:
      lr plan's shared one is left out to halve the run, --placements dedicated,shared adds it)
      together with lr-adaptive and lr+sd-adaptive (k2 <= 9, the paper's n-gram SD) at
      concurrency 1, on the same paired seed blocks (the AR and SD equal-resources baselines,
      the target alone at TP=4, are not configurations of this placement and are left out);
      target: lr+sd-adaptive (k2 <= 9) >= 97% of the best static speedup, lr-adaptive against
      the best static lr.
  (b) phase change: the preset's hardware, requests of max(its steps, 200) steps, acceptance 0.7
      for the first half of every request and 0.3 after; every configuration of that grid
      (dedicated) and AR, on paired seeds; target: adaptive beats every static configuration.
      Under load, the same with 16 requests at t = 0, for 0.7 then 0.3 and 0.7 then 0.1.
  (c) load: concurrency 1..32 (all requests at t = 0), tokens/s against AR on the same hardware
      (the target alone, all requests); target: adaptive never below 0.97x AR. Shown beside it:
      the static optimum of (a) at each load, and the best static configuration at each load.
  (d) load past the static optimum's break-even: as (c) at 64 and 128 requests, where that
      optimum runs below AR, and on a load ramp (Poisson arrivals whose rate rises over the run,
      so that the load rises from one request in flight past that break-even; lr plan's latency
      speedup); target: adaptive beats every static configuration. Beside it on the ramp, a load
      oracle (LoadOracle: told the best static shape of (c) and (d) for the requests in flight at
      every root): what knowing each load's best shape earns there.

Seeded: the numbers only move when the simulator, the presets or lrcore/adaptive/ change.
Writes --out (JSON) and its .md twin (tables).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.write import write_results  # noqa: E402

import numpy as np  # noqa: E402

from lrsim.plan import planner, presets  # noqa: E402
from lrsim.plan.parallel import map_points  # noqa: E402
from lrsim.plan.sources import PresetSource  # noqa: E402
from lrsim.sim.policies import POLICIES  # noqa: E402
from lrsim.sim.policies.lr_adaptive import AdaptiveLookahead  # noqa: E402
from lrsim.sim.policies.lr_async import AsyncLookahead  # noqa: E402
from lrcore.adaptive import Decision, Estimates  # noqa: E402

DEPTHS, K2S, SD_K2 = [1, 2, 3, 4], [3, 5, 9], 9
TARGET_A, TARGET_C = 0.97, 0.97
MIN_STEPS = 600            # (a), (b): seed blocks per preset so that each config runs >= this many steps
PHASE = dict(alpha1=0.7, phase_alpha1=0.3, phase_at=0.5)
PHASE_PRESETS = ("r1-gsm8k", "qwen3-aime24")
PHASE_MIN_STEPS = 200      # (b): a phase of >= 100 steps each (GSM8K's 36-step answers are too short)
# (b) under load: the same phase change with 16 requests at t = 0, where speculation is no longer
# nearly free and each phase's best shape differs ((c): the best static at 16 is lr+sd depth 3,
# k2 3, at 1 request depth 4, k2 5); and a deeper drop, 0.7 then 0.1
PHASE_LOADED = 16
PHASE_SHIFTS = ((0.7, 0.3), (0.7, 0.1))
ORACLE = "phase-oracle:"   # (b): one_run's name for PhaseOracle runs
LOAD_ORACLE = "load-oracle:"   # (d): one_run's name for LoadOracle runs
ORACLE_TOP = 3             # (b): the one-switch oracle pairs each phase's 3 best static shapes
#                            (and the best static: 9-16 pairs)
LOAD_PRESET = "r1-gsm8k"
LOADS = (1, 2, 4, 8, 16, 32)
PAST_LOADS = (64, 128)     # (d): past the static optimum's break-even (below AR from 64 on)
LOAD_SEEDS = 2
LOAD_STEPS = 36            # r1-gsm8k's steps
# (d) a load ramp: Poisson arrivals whose rate rises linearly over the requests (Synthetic.rate_end)
# from one request in flight at a time to past the static optimum's break-even (AR's in-flight
# count at the end: the table's "peak in flight")
RAMP = dict(requests=200, rate=0.05, rate_end=6.0)
RAMP_SEEDS = 2


def seeds_for(steps: int) -> int:
    return max(4, min(16, math.ceil(MIN_STEPS / steps)))


# --- (a) presets through the planner -----------------------------------------------------------

def preset_row(name: str, jobs: int, placements: list[str]) -> dict:
    p = presets.get(name)
    cands = planner.candidates(["sd", "lr", "lr+sd", "lr-adaptive", "lr+sd-adaptive"], DEPTHS, [2],
                               K2S, [1], placements, None)
    load = planner.Load(concurrency=1, samples=seeds_for(p.steps))
    res = planner.plan(PresetSource(name), cands, planner.Hardware(), load, jobs=jobs)
    # the baselines (AR; AR and SD on all 4 GPUs at TP=4, "equal resources") are not
    # configurations of the paper's placement: the best static is the best of the grid proper
    eq = max((r for r in res.rows if r["role"] == "equal-resources"), key=lambda r: r["speedup"])
    rows = [r for r in res.rows if not r["role"]]
    static = [r for r in rows if r["mode"] not in ("lr-adaptive", "lr+sd-adaptive")]
    adaptive = [r for r in rows if r["mode"] in ("lr-adaptive", "lr+sd-adaptive")]
    best = max(static, key=lambda r: r["speedup"])
    best_lr = max((r for r in static if r["mode"] == "lr"), key=lambda r: r["speedup"])

    def pick(mode, k2=1):
        return max((r for r in adaptive if r["mode"] == mode and r["k2"] == k2),
                   key=lambda r: r["speedup"])
    sd_ad, lr_ad = pick("lr+sd-adaptive", SD_K2), pick("lr-adaptive")
    best_ad = max(adaptive, key=lambda r: r["speedup"])

    def brief(r):
        return {"label": r["label"], "speedup": r["speedup"], "ci": r["speedup_ci"]}
    return {"preset": name, "alpha1": p.alpha1, "alpha2": p.alpha2, "steps": p.steps,
            "seeds": load.samples, "best_static": brief(best), "best_equal_resources": brief(eq), "best_lr_static": brief(best_lr),
            "lr+sd-adaptive": brief(sd_ad), "lr-adaptive": brief(lr_ad), "best_adaptive": brief(best_ad),
            "ratio": sd_ad["speedup"] / best["speedup"],
            "ratio_best_adaptive": best_ad["speedup"] / best["speedup"],
            "ratio_lr": lr_ad["speedup"] / best_lr["speedup"],
            "met": sd_ad["speedup"] >= TARGET_A * best["speedup"]}


# --- direct runs for (b) and (c) -----------------------------------------------------------------

STATIC = ([("ar", {})] + [("sd", {"k2": k}) for k in K2S] + [("lr-async", {"depth": d}) for d in DEPTHS]
          + [("lr-async", {"depth": d, "k2": k}) for d in DEPTHS for k in K2S])
ADAPTIVE = [("lr-adaptive", {"depth": 4}), ("lr-adaptive", {"depth": 4, "k2": SD_K2})]


def label(policy: str, knobs: dict) -> str:
    mode = {"lr-async": "lr", "lr-adaptive": "lr-adaptive"}.get(policy, policy)
    if policy != "sd" and knobs.get("k2", 1) > 1:
        mode = mode.replace("lr", "lr+sd", 1)
    if policy == "lr-async":
        return f"{mode} depth={knobs['depth']}" + (f" k2={knobs['k2']}" if "k2" in knobs else "")
    if policy == "lr-adaptive":
        return f"{mode} depth<={knobs['depth']}" + (f" k2={knobs['k2']}" if "k2" in knobs else "")
    return mode + (f" k2={knobs['k2']}" if "k2" in knobs else "")


def one_run(args) -> dict:
    """(preset, policy, knobs, seed, requests, steps, phase) -> mean latency and tokens/s. phase:
    True = the PHASE workload, (a, b) = acceptance a, then b from PHASE's phase_at, a number = that
    step acceptance throughout, False = the preset's."""
    from lrsim.sim.runner import run

    name, policy, knobs, seed, requests, steps, phase, *ramp = args
    after = table = None
    if policy.startswith(ORACLE):  # an lr-async Config, run by PhaseOracle (below)
        after = tuple(int(x) for x in policy[len(ORACLE):].split(":"))
        policy = "lr-async"
    elif policy.startswith(LOAD_ORACLE):   # an lr-adaptive Config, run by LoadOracle (below)
        table = decode_table(policy[len(LOAD_ORACLE):])
        policy = "lr-adaptive"
    cfg = presets.get(name).to_config(policy, requests=requests, steps=steps, seed=seed, **knobs)
    if phase is True:
        cfg.workload = replace(cfg.workload, **PHASE)
    elif isinstance(phase, tuple):
        cfg.workload = replace(cfg.workload, alpha1=phase[0], phase_alpha1=phase[1],
                               phase_at=PHASE["phase_at"])
    elif phase:                   # one phase's acceptance alone (the oracle's per-phase runs)
        cfg.workload = replace(cfg.workload, alpha1=phase)
    if ramp:                      # (d)'s load ramp: (rate, rate_end)
        cfg.workload = replace(cfg.workload, rate=ramp[0][0], rate_end=ramp[0][1])
    if table is not None:
        with load_oracle_policy(table):
            s, world = run(cfg)
    elif after is None:
        s, world = run(cfg)
    else:
        with oracle_policy(after):
            s, world = run(cfg)
    out = {"lat": float(np.mean([r.latency for r in world.records])), "tps": s["tokens_per_s"],
           "peak": peak_in_flight(world.records)}
    if "adaptive" in s:
        out["by_depth"] = s["adaptive"]["by_depth"]
    return out


class PhaseOracle(AsyncLookahead):
    """lr-async told where the phase changes: the Config's static shape (depth, k2) below roots
    before the change, `after` from the first root at or past it (the workload's own rule,
    position >= phase_at x steps). What one switch at the change earns, with no learning to pay
    (phase_oracle)."""

    def __init__(self, world, req, rec, after):
        super().__init__(world, req, rec)
        wl = world.workload
        self.change = wl.phase_at * wl.steps       # the first position of the second phase
        self.after = after
        # one SD stream per k2 for the whole request (as lr-adaptive's): the same shape after
        # the change goes on drawing from the same stream, exactly the static run
        self.streams = {self.stream.k2 if self.stream is not None else 1: self.stream}

    def choose(self, position):
        # k2 switches cost right only with the presets' n-gram SD (its drafting is free): the
        # engine prices a drafter model's SD passes at the Config's k2 (lr-adaptive's limit too)
        if position >= self.change and self.after is not None:
            depth, k2 = self.after
            if k2 not in self.streams:
                self.streams[k2] = self.world.sd_stream(self.req, k2)
            self.max_depth, self.stream = depth, self.streams[k2]
            self.after = None                      # switched once, for the rest of the request


def oracle(after: tuple[int, int]) -> str:
    """one_run's policy name for a PhaseOracle switching to `after` = (depth, k2)."""
    return f"{ORACLE}{after[0]}:{after[1]}"


@contextmanager
def stand_in(policy: str, make):
    """Within: the registry's `policy` runs make(world, req, rec) instead (the Config stays a
    validated one of that policy; an oracle is this benchmark's bound, not a policy users can
    choose)."""
    def run(world, req, rec):
        lr = make(world, req, rec)
        lr.start()
        yield lr.finished
    plain = POLICIES[policy]
    POLICIES[policy] = run
    try:
        yield
    finally:
        POLICIES[policy] = plain


def oracle_policy(after: tuple[int, int]):
    """Within: the registry's lr-async runs PhaseOracle(after)."""
    return stand_in("lr-async", lambda world, req, rec: PhaseOracle(world, req, rec, after))


class LoadOracle(AdaptiveLookahead):
    """lr-adaptive told, instead of deciding, the best static shape for the requests in flight now:
    at every root, the (depth, k2) that was the best static configuration at the tabulated load
    nearest (in log) to World.in_flight, from (c) and (d)'s fixed loads. Depth 0 writes on as
    lr-adaptive's does (one request, no launch per step). What knowing the best shape for each load
    earns on the ramp, with no learning and no price to get wrong (ramp_row)."""

    def __init__(self, world, req, rec, table):
        super().__init__(world, req, rec)
        loads = [math.log(n) for n, _, _ in table]

        def pick(_req, _position):
            now = math.log(max(world.in_flight(), 1))
            _, depth, k2 = table[min(range(len(table)), key=lambda i: abs(loads[i] - now))]
            return Decision(0, depth, 1, k2, 1.0, 1.0, (depth, 1, k2), 1.0, "load oracle",
                            Estimates())
        self.recorded = pick                # the replay hook: its choice, not the Controller's


def shape_of(static_label: str) -> tuple[int, int]:
    """(depth, k2) of one of this script's static labels ("ar", "sd k2=3", "lr depth=2",
    "lr+sd depth=4 k2=5")."""
    knobs = dict(kv.split("=") for kv in static_label.split()[1:])
    return int(knobs.get("depth", 0)), int(knobs.get("k2", 1))


def encode_table(table) -> str:
    return ",".join(f"{n}:{d}:{k}" for n, d, k in table)


def decode_table(text: str) -> list[tuple[int, int, int]]:
    return [tuple(int(x) for x in item.split(":")) for item in text.split(",")]


def load_oracle_policy(table):
    """Within: the registry's lr-adaptive runs LoadOracle(table)."""
    return stand_in("lr-adaptive", lambda world, req, rec: LoadOracle(world, req, rec, table))


def phase_speedups(name: str, steps: int, seeds, requests: int, phase, jobs: int):
    """Every static configuration's and the adaptive policies' speedup (mean over paired seeds of
    AR's mean latency / its own) on a phase workload; with AR's latencies and the raw results."""
    configs = STATIC + ADAPTIVE
    args = [(name, pol, k, s, requests, steps, phase) for pol, k in configs for s in seeds]
    res = map_points(one_run, args, jobs)
    lat = {label(pol, k): [r["lat"] for r in res[i * len(seeds):(i + 1) * len(seeds)]]
           for i, (pol, k) in enumerate(configs)}
    ar = lat["ar"]
    speed = {lb: float(np.mean([a / x for a, x in zip(ar, xs)])) for lb, xs in lat.items()}
    static = {lb: v for lb, v in speed.items() if "adaptive" not in lb}
    best = max(static, key=static.get)
    best_plain = max((lb for lb in static if "k2" not in lb), key=static.get)
    ad_sd, ad = label(*ADAPTIVE[1]), label(*ADAPTIVE[0])
    verdict = {"speedups": speed, "best_static": {"label": best, "speedup": static[best]},
               "best_static_no_sd": {"label": best_plain, "speedup": static[best_plain]},
               "lr+sd-adaptive": speed[ad_sd], "lr-adaptive": speed[ad],
               "beats_every_static": speed[ad_sd] > static[best],
               "lr_adaptive_beats_every_static_without_sd": speed[ad] > static[best_plain]}
    return verdict, ar, res


def phase_row(name: str, jobs: int) -> dict:
    p = presets.get(name)
    steps = max(p.steps, PHASE_MIN_STEPS)
    seeds = range(seeds_for(steps))
    configs = STATIC + ADAPTIVE
    verdict, ar, res = phase_speedups(name, steps, seeds, 1, True, jobs)
    best = verdict["best_static"]["label"]
    depth_mix = {}
    for i, (pol, k) in enumerate(configs):
        if pol == "lr-adaptive":
            mix = {}
            for r in res[i * len(seeds):(i + 1) * len(seeds)]:
                for d, n in r["by_depth"].items():
                    mix[d] = mix.get(d, 0) + n
            depth_mix[label(pol, k)] = mix
    oracle = phase_oracle(name, steps, seeds, jobs, ar, best)
    return {"preset": name, "steps": steps, "seeds": len(seeds), "workload": PHASE,
            "oracle": oracle, **verdict, "decisions_by_depth": depth_mix}


def phase_load_row(name: str, shift: tuple[float, float], jobs: int) -> dict:
    """(b) under load: PHASE_LOADED requests at t = 0 of max(the preset's steps, PHASE_MIN_STEPS)
    steps, step acceptance shift[0], then shift[1] from mid-request."""
    steps = max(presets.get(name).steps, PHASE_MIN_STEPS)
    seeds = range(seeds_for(steps))
    verdict, _, _ = phase_speedups(name, steps, seeds, PHASE_LOADED, tuple(shift), jobs)
    return {"preset": name, "steps": steps, "seeds": len(seeds), "requests": PHASE_LOADED,
            "alpha1": shift[0], "phase_alpha1": shift[1], **verdict}


def blocks(res: list[dict], n: int, size: int) -> list[list[dict]]:
    """map_points' flat results as `n` blocks of `size` (one configuration's seeds each)."""
    return [res[i * size:(i + 1) * size] for i in range(n)]


def phase_oracle(name: str, steps: int, seeds, jobs: int, ar_lat: list[float],
                 best_static: str) -> dict:
    """The one-switch oracle of (b): the static LR grid ranked on each phase's acceptance alone
    (requests of the same steps and seeds), then PhaseOracle on the phase workload itself over
    the pairs of each phase's top ORACLE_TOP and the phase workload's best static shape when it
    is an LR one (then a pair switches it to itself: the oracle is at least that static). Not a
    bound on every policy: a policy may switch earlier, more than once, or to other shapes; it
    is what knowing where the phase changes, and each phase's best shapes, earns by one switch
    there. Reported: the best pair, and the best genuine switch (before != after)."""
    lr = [(pol, k) for pol, k in STATIC if pol == "lr-async"]
    keep = [i for i, (pol, k) in enumerate(lr) if label(pol, k) == best_static]
    per_phase = {}
    for alpha in (PHASE["alpha1"], PHASE["phase_alpha1"]):
        args = [(name, pol, k, s, 1, steps, alpha) for pol, k in lr for s in seeds]
        mean = [float(np.mean([r["lat"] for r in b]))
                for b in blocks(map_points(one_run, args, jobs), len(lr), len(seeds))]
        top = sorted(range(len(lr)), key=mean.__getitem__)[:ORACLE_TOP]
        per_phase[alpha] = top + [i for i in keep if i not in top]
    pairs = [(lr[i], lr[j]) for i in per_phase[PHASE["alpha1"]]
             for j in per_phase[PHASE["phase_alpha1"]]]
    args = [(name, oracle((b[1]["depth"], b[1].get("k2", 1))), a[1], s, 1, steps, True)
            for a, b in pairs for s in seeds]
    speed = [float(np.mean([x / r["lat"] for x, r in zip(ar_lat, b)]))
             for b in blocks(map_points(one_run, args, jobs), len(pairs), len(seeds))]

    def entry(i):
        a, b = pairs[i]
        return {"before": label(*a), "after": label(*b), "speedup": speed[i]}
    switches = [i for i, (a, b) in enumerate(pairs) if a != b]
    return {**entry(max(range(len(pairs)), key=speed.__getitem__)), "pairs": len(pairs),
            "best_switch": entry(max(switches, key=speed.__getitem__)),
            "best_by_phase": {str(alpha): label(*lr[idx[0]]) for alpha, idx in per_phase.items()}}


def load_rows(jobs: int, static_opt: tuple[str, dict] | None,
              loads: tuple[int, ...] = LOADS) -> list[dict]:
    configs = STATIC + ADAPTIVE
    seeds = range(LOAD_SEEDS)
    args = [(LOAD_PRESET, pol, k, s, c, LOAD_STEPS, False) for c in loads for pol, k in configs
            for s in seeds]
    res = iter(map_points(one_run, args, jobs))
    rows = []
    for c in loads:
        tps = {label(pol, k): float(np.mean([next(res)["tps"] for _ in seeds])) for pol, k in configs}
        ratio = {lb: v / tps["ar"] for lb, v in tps.items()}
        static = {lb: v for lb, v in ratio.items() if "adaptive" not in lb}
        best = max(static, key=static.get)
        row = {"concurrency": c, "ar_tokens_per_s": tps["ar"], "vs_ar": ratio,
               "best_static": {"label": best, "vs_ar": static[best]},
               "lr-adaptive": ratio[label(*ADAPTIVE[0])], "lr+sd-adaptive": ratio[label(*ADAPTIVE[1])]}
        if static_opt is not None:
            row["static_optimum"] = {"label": static_opt[0], "vs_ar": ratio.get(static_opt[0])}
        row["met"] = min(row["lr-adaptive"], row["lr+sd-adaptive"]) >= TARGET_C
        row["beats_every_static"] = max(row["lr-adaptive"], row["lr+sd-adaptive"]) > static[best]
        rows.append(row)
    return rows


def peak_in_flight(records) -> int:
    """The most requests in flight at once (arrival to finish)."""
    events = sorted([(r.arrival, 1) for r in records] + [(r.finish, -1) for r in records],
                    key=lambda e: (e[0], e[1]))
    now = peak = 0
    for _, step in events:
        now += step
        peak = max(peak, now)
    return peak


def ramp_row(jobs: int, static_opt: tuple[str, dict] | None, table=None) -> dict:
    """(d) on the load ramp: lr plan's speedup (mean over paired seeds of AR's mean latency / the
    configuration's) for every static configuration, AR and the adaptive policies; with `table`
    ((load, depth, k2) of the best static at each fixed load of (c) and (d)), the LoadOracle's."""
    oracle = [(LOAD_ORACLE + encode_table(table), ADAPTIVE[1][1])] if table else []
    configs = STATIC + ADAPTIVE + oracle
    seeds = range(RAMP_SEEDS)
    rates = (RAMP["rate"], RAMP["rate_end"])
    args = [(LOAD_PRESET, pol, k, s, RAMP["requests"], LOAD_STEPS, False, rates)
            for pol, k in configs for s in seeds]
    res = map_points(one_run, args, jobs)
    lat = {label(pol, k): [res[i * len(seeds) + j]["lat"] for j in range(len(seeds))]
           for i, (pol, k) in enumerate(configs)}
    peaks = {label(pol, k): max(res[i * len(seeds) + j]["peak"] for j in range(len(seeds)))
             for i, (pol, k) in enumerate(configs)}
    speed = {lb: float(np.mean([a / x for a, x in zip(lat["ar"], v)])) for lb, v in lat.items()}
    loaded = {lb: speed.pop(lb) for lb in list(speed) if lb.startswith(LOAD_ORACLE)}
    peaks = {lb: v for lb, v in peaks.items() if not lb.startswith(LOAD_ORACLE)}
    static = {lb: v for lb, v in speed.items() if "adaptive" not in lb}
    best = max(static, key=static.get)
    row = {**RAMP, "seeds": RAMP_SEEDS, "steps": LOAD_STEPS, "speedup": speed, "peak_in_flight": peaks,
           "best_static": {"label": best, "speedup": static[best]},
           "lr-adaptive": speed[label(*ADAPTIVE[0])], "lr+sd-adaptive": speed[label(*ADAPTIVE[1])]}
    if static_opt is not None:
        row["static_optimum"] = {"label": static_opt[0], "speedup": speed.get(static_opt[0])}
    row["beats_every_static"] = max(row["lr-adaptive"], row["lr+sd-adaptive"]) > static[best]
    if table:
        row["load_oracle"] = {"table": [list(t) for t in table],
                              "speedup": next(iter(loaded.values()))}
    return row


def static_label_of(plan_label: str) -> str:
    """A plan row's label in this script's labels (dedicated placement only)."""
    return plan_label.replace(" shared", "")


# --- report -------------------------------------------------------------------------------------

def render(o: dict) -> str:
    a, b, c, d = o["presets"], o["phase"], o["load"], o.get("past_break_even", [])
    bl = o.get("phase_load", [])
    ramp = o.get("ramp")
    out = ["# lr-adaptive in the simulator", "",
           "Every adaptive request starts from the neutral prior (lrcore.adaptive's: acceptance "
           "0.5 at every depth; SD acceptance 0.5 where SD is on offer): it is told the bounds (depth "
           "<= 4, width 1, SD off or k2 3, 5 or 9 up to its bound), never the acceptance rate. Hardware: the paper's (4x H100: target TP=2, draft, 13 ms judge). "
           f"Generated by benchmarks/bench_adaptive.py in {o['elapsed_s']:.0f} s on {o['cores']} cores.",
           "", "## (a) Paper presets: adaptive vs the best static configuration of `lr plan`", "",
           f"Target: lr+sd-adaptive (k2 <= {SD_K2}) >= {TARGET_A:.0%} of the best static speedup "
           "(lr plan's default grid: sd, lr, lr+sd, depth 1-4, k2 3/5/9, width 1, "
           f"{'/'.join(o['placements'])} placement; concurrency 1; mean over paired seed blocks of "
           "AR latency / latency). lr-adaptive is compared with the best static lr (no SD).", "",
           "| preset | alpha1 | best static | speedup | lr+sd-adaptive | ratio | met | "
           "best lr | lr-adaptive | ratio |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in a:
        out.append(f"| {r['preset']} | {r['alpha1']:.2f} | {r['best_static']['label']} | "
                   f"{r['best_static']['speedup']:.3f} | {r['lr+sd-adaptive']['speedup']:.3f} | "
                   f"{r['ratio']:.3f} | {'yes' if r['met'] else 'NO'} | {r['best_lr_static']['label']} "
                   f"{r['best_lr_static']['speedup']:.3f} | {r['lr-adaptive']['speedup']:.3f} | "
                   f"{r['ratio_lr']:.3f} |")
    met = sum(r["met"] for r in a)
    out += ["", f"Met on {met} of {len(a)} presets; ratio min {min(r['ratio'] for r in a):.3f}, "
            f"median {float(np.median([r['ratio'] for r in a])):.3f}; lr-adaptive / best lr: min "
            f"{min(r['ratio_lr'] for r in a):.3f}.", "",
            "## (b) Phase change: acceptance 0.7, then 0.3 from mid-request", "",
            f"Requests of max(the preset's steps, {PHASE_MIN_STEPS}) steps; speedup = mean over "
            "paired seeds of AR latency / latency. Target: adaptive beats every static configuration (the grid of (a), dedicated).",
            "", "| preset | steps | seeds | best static | speedup | lr+sd-adaptive | beats all | "
            "best static without SD | lr-adaptive | beats those |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in b:
        out.append(f"| {r['preset']} | {r['steps']} | {r['seeds']} | {r['best_static']['label']} | "
                   f"{r['best_static']['speedup']:.3f} | {r['lr+sd-adaptive']:.3f} | "
                   f"{'yes' if r['beats_every_static'] else 'NO'} | {r['best_static_no_sd']['label']} "
                   f"{r['best_static_no_sd']['speedup']:.3f} | {r['lr-adaptive']:.3f} | "
                   f"{'yes' if r['lr_adaptive_beats_every_static_without_sd'] else 'NO'} |")
    out += ["", "One switch at the change, by an oracle told where the phase changes (lr-async that "
            "switches its static shape once, at the first root past the change): the pairs of each "
            f"phase's {ORACLE_TOP} best static lr / lr+sd shapes (ranked on requests of that phase's "
            "acceptance alone, same steps and seeds) and the best static above (a pair that keeps "
            "it), on the same phase workload and seeds. Not a bound on every policy (one may switch "
            "earlier, more often, or to other shapes): what knowing the change earns by one switch.",
            "", f"| preset | best at {PHASE['alpha1']} alone | best at {PHASE['phase_alpha1']} alone | "
            "oracle's best pair | speedup | vs best static | best genuine switch | speedup | "
            "vs best static |", "|---|---|---|---|---|---|---|---|---|"]

    def pair(o):
        return "keep " + o["before"] if o["before"] == o["after"] else f"{o['before']} -> {o['after']}"
    for r in b:
        o, sw, top = r["oracle"], r["oracle"]["best_switch"], r["best_static"]["speedup"]
        by = o["best_by_phase"]
        out.append(f"| {r['preset']} | {by[str(PHASE['alpha1'])]} | {by[str(PHASE['phase_alpha1'])]} | "
                   f"{pair(o)} | {o['speedup']:.3f} | {o['speedup'] / top - 1:+.1%} | {pair(sw)} | "
                   f"{sw['speedup']:.3f} | {sw['speedup'] / top - 1:+.1%} |")
    if bl:
        out += ["", f"### (b) under load: {PHASE_LOADED} requests at t = 0", "",
                f"The same phase change, and a deeper drop (0.7, then 0.1), with {PHASE_LOADED} requests "
                "at t = 0, where speculation is no longer nearly free (the best static shape of (c) at "
                "16 requests is not the one alone); speedup = mean over paired seeds of AR's mean "
                "latency / the configuration's (AR: the target alone with all requests). Target as "
                "above. No oracle here: which shape is best in each phase under load is not measured.", "",
                "| preset | acceptance | steps | seeds | best static | speedup | lr+sd-adaptive | "
                "beats all | best static without SD | lr-adaptive | beats those |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in bl:
            out.append(f"| {r['preset']} | {r['alpha1']} then {r['phase_alpha1']} | {r['steps']} | "
                       f"{r['seeds']} | {r['best_static']['label']} | {r['best_static']['speedup']:.3f} | "
                       f"{r['lr+sd-adaptive']:.3f} ({r['lr+sd-adaptive'] / r['best_static']['speedup'] - 1:+.1%}) | "
                       f"{'yes' if r['beats_every_static'] else 'NO'} | {r['best_static_no_sd']['label']} "
                       f"{r['best_static_no_sd']['speedup']:.3f} | {r['lr-adaptive']:.3f} | "
                       f"{'yes' if r['lr_adaptive_beats_every_static_without_sd'] else 'NO'} |")
    out += ["", f"## (c) Load: concurrency 1-32 on {LOAD_PRESET} (tokens/s / AR's tokens/s)", "",
            f"All requests at t = 0, {LOAD_STEPS} steps each, {LOAD_SEEDS} seeds; AR: the target alone "
            f"with all requests. Target: adaptive >= {TARGET_C:.2f}x AR at every load. Static optimum: "
            "the best static configuration of (a) for this preset.", "",
            *load_table(c, "met", "met")]
    if d:
        out += ["", "## (d) Load past the static optimum's break-even", "",
                f"As (c), at {' and '.join(str(r['concurrency']) for r in d)} requests, where the "
                "static optimum of (a) runs below AR. Target: adaptive beats every static "
                "configuration (the grid of (a) and AR).", "",
                *load_table(d, "beats all", "beats_every_static")]
    if ramp:
        so = ramp.get("static_optimum") or {}
        peak = ramp["peak_in_flight"]
        out += ["", "### (d) on a load ramp: the load rises past the break-even within the run", "",
                f"{ramp['requests']} requests of {ramp['steps']} steps on {LOAD_PRESET}, Poisson "
                f"arrivals whose rate rises linearly over the requests from {ramp['rate']:g} to "
                f"{ramp['rate_end']:g} requests/s, {ramp['seeds']} seeds; speedup = mean over paired "
                "seeds of AR latency / latency (lr plan's). Every request meets a load between one "
                f"request in flight and AR's peak of {peak['ar']}. Target: adaptive beats every "
                "static configuration (the grid of (a) and AR).", "",
                "| configuration | speedup | peak in flight |", "|---|---|---|"]
        for lb, v in sorted(ramp["speedup"].items(), key=lambda kv: -kv[1]):
            out.append(f"| {lb} | {v:.3f} | {peak[lb]} |")
        out += ["", f"Best static: {ramp['best_static']['label']} {ramp['best_static']['speedup']:.3f}; "
                f"static optimum of (a): {so.get('label', '-')} "
                + (f"{so['speedup']:.3f}" if so.get("speedup") is not None else "-")
                + f"; lr-adaptive {ramp['lr-adaptive']:.3f}, lr+sd-adaptive "
                f"{ramp['lr+sd-adaptive']:.3f}: beats every static: "
                f"{'yes' if ramp['beats_every_static'] else 'NO'}."]
        lo = ramp.get("load_oracle")
        if lo:
            # the table is (c) and (d)'s best static shapes: their labels name them
            shapes = "; ".join(f"{r['concurrency']}: {r['best_static']['label']}" for r in c + d)
            out += ["", "A load oracle (lr-adaptive told, at every root, the best static shape of (c) and "
                    "(d) at the tabulated load nearest, in log, to the requests in flight then; no "
                    f"learning, no price): {lo['speedup']:.3f}, "
                    f"{lo['speedup'] / ramp['best_static']['speedup'] - 1:+.1%} against the best static. "
                    f"Its table: {shapes}. Not a bound on every policy (the best shape at a fixed "
                    "load need not be the best on a ramp): what knowing the load's best shape earns."]
    return "\n".join(out) + "\n"


def load_table(rows: list[dict], last: str, key: str) -> list[str]:
    """(c) and (d)'s table: tokens/s over AR's by concurrency, `last` the column of row[key]."""
    out = ["| concurrency | AR tok/s | lr-adaptive | lr+sd-adaptive | static optimum | "
           f"best static here | {last} |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        so = r.get("static_optimum") or {}
        so_txt = f"{so['vs_ar']:.3f} ({so['label']})" if so.get("vs_ar") is not None else "-"
        out.append(f"| {r['concurrency']} | {r['ar_tokens_per_s']:.0f} | {r['lr-adaptive']:.3f} | "
                   f"{r['lr+sd-adaptive']:.3f} | {so_txt} | {r['best_static']['vs_ar']:.3f} "
                   f"({r['best_static']['label']}) | {'yes' if r[key] else 'NO'} |")
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--presets", default=",".join(presets.PRESETS))
    ap.add_argument("--placements", default="dedicated")
    ap.add_argument("--out", default="benchmarks/results/adaptive.json")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    names = [n for n in args.presets.split(",") if n]
    placements = args.placements.split(",")
    a = []
    for n in names:
        a.append(preset_row(n, args.jobs, placements))
        r = a[-1]
        print(f"(a) {n:16s} best static {r['best_static']['label']:28s} {r['best_static']['speedup']:.3f}"
              f"  lr+sd-adaptive {r['lr+sd-adaptive']['speedup']:.3f} ({r['ratio']:.3f})"
              f"  lr-adaptive {r['lr-adaptive']['speedup']:.3f} / best lr {r['best_lr_static']['speedup']:.3f}"
              f"  [{time.perf_counter() - t0:.0f} s]", flush=True)
    b = []
    for n in PHASE_PRESETS:
        b.append(phase_row(n, args.jobs))
        r = b[-1]
        print(f"(b) {n:16s} best static {r['best_static']['label']} {r['best_static']['speedup']:.3f}"
              f"  lr+sd-adaptive {r['lr+sd-adaptive']:.3f}  lr-adaptive {r['lr-adaptive']:.3f}"
              f" (best without SD {r['best_static_no_sd']['speedup']:.3f});"
              f" oracle {r['oracle']['speedup']:.3f}"
              f"  [{time.perf_counter() - t0:.0f} s]",
              flush=True)
    bl = []
    for n in PHASE_PRESETS:
        for shift in PHASE_SHIFTS:
            bl.append(phase_load_row(n, shift, args.jobs))
            r = bl[-1]
            print(f"(b) {n:16s} {shift[0]} -> {shift[1]} at {PHASE_LOADED} requests: best static "
                  f"{r['best_static']['label']} {r['best_static']['speedup']:.3f}  lr+sd-adaptive "
                  f"{r['lr+sd-adaptive']:.3f}  lr-adaptive {r['lr-adaptive']:.3f} (best without SD "
                  f"{r['best_static_no_sd']['speedup']:.3f})  [{time.perf_counter() - t0:.0f} s]", flush=True)
    opt = next((r for r in a if r["preset"] == LOAD_PRESET), None)
    static_opt = static_label_of(opt["best_static"]["label"]) if opt else None
    c = load_rows(args.jobs, (static_opt, {}) if static_opt else None)
    d = load_rows(args.jobs, (static_opt, {}) if static_opt else None, PAST_LOADS)
    for part, r in [("c", r) for r in c] + [("d", r) for r in d]:
        print(f"({part}) concurrency {r['concurrency']:3d}: lr-adaptive {r['lr-adaptive']:.3f}x AR, "
              f"lr+sd-adaptive {r['lr+sd-adaptive']:.3f}x, best static {r['best_static']['label']} "
              f"{r['best_static']['vs_ar']:.3f}x", flush=True)
    table = [(r["concurrency"], *shape_of(r["best_static"]["label"])) for r in c + d]
    ramp = ramp_row(args.jobs, (static_opt, {}) if static_opt else None, table)
    print(f"(d) ramp {RAMP['rate']:g}->{RAMP['rate_end']:g} req/s: lr-adaptive {ramp['lr-adaptive']:.3f}, "
          f"lr+sd-adaptive {ramp['lr+sd-adaptive']:.3f}, best static {ramp['best_static']['label']} "
          f"{ramp['best_static']['speedup']:.3f}  [{time.perf_counter() - t0:.0f} s]", flush=True)
    out = {"presets": a, "phase": b, "phase_load": bl, "load": c, "past_break_even": d, "ramp": ramp,
           "placements": placements,
           "elapsed_s": time.perf_counter() - t0, "cores": os.cpu_count(),
           "targets": {"a_min_ratio": TARGET_A, "c_min_vs_ar": TARGET_C}}
    if args.out:
        write_results(args.out, out, render)
    return out


if __name__ == "__main__":
    main()

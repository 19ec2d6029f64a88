"""Simulator targets for lr-adaptive (docs/adaptive.md) as seeded scenarios on the paper's hardware
(preset r1-gsm8k: R1-Distill 32B/1.5B, 4x H100, 13 ms judge): golden summaries committed under
tests/golden/sim/adaptive-*.json and diffed, and each target checked on a small seeded instance.
Adaptive starts from the neutral prior: it is never told the acceptance rate.

  (a) paper preset: adaptive reaches >= 97% of the best static configuration of lr plan's grid
  (b) acceptance 0.7, then 0.3 from mid-request: adaptive beats every static configuration
  (c) concurrency 1..32: adaptive never falls below AR's tokens/s by more than 3%
  (d) past the static optimum's break-even: adaptive beats every static configuration on a load
      ramp (Poisson arrivals whose rate rises over the requests); at a fixed 128 requests it
      does not yet (strict xfail)

Regenerate the summaries after an intended change with
    LRSIM_UPDATE_GOLDEN=1 pytest tests/sim/test_adaptive_golden.py
and review the diff (git diff tests/golden/sim) before committing it. benchmarks/bench_adaptive.py
measures the same targets on more seeds and all 14 presets.
"""
import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from lrsim.plan import presets
from lrsim.sim.runner import run, simulate
from test_sim_golden import _round, same  # noqa: E402  the golden files' 9 significant digits

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "sim"
PRESET = "r1-gsm8k"
K2S = (3, 5, 9)                     # lr plan's default --k2 grid
DEPTHS = (1, 2, 3, 4)               # ... and --depth
# lr plan's default grid (modes sd, lr, lr+sd; width 1; dedicated placement) and AR
STATIC = ([("ar", {})] + [("sd", {"k2": k}) for k in K2S]
          + [("lr-async", {"depth": d}) for d in DEPTHS]
          + [("lr-async", {"depth": d, "k2": k}) for d in DEPTHS for k in K2S])
ADAPTIVE = {"lr-adaptive": ("lr-adaptive", {"depth": 4}),
            "lr+sd-adaptive": ("lr-adaptive", {"depth": 4, "k2": 9})}   # the paper's n-gram SD




def config(policy, knobs, seed, requests=1, steps=None, phase=False, preset=PRESET, ramp=None,
           scope=None):
    cfg = presets.get(preset).to_config(policy, requests=requests, steps=steps, seed=seed, **knobs)
    if scope is not None:               # Config.adaptive_scope ("run": the real backend's)
        cfg.adaptive_scope = scope
    if phase:                           # True: 0.7 then 0.3; (a, b): a then b, from mid-request
        before, after = (0.7, 0.3) if phase is True else phase
        cfg.workload = replace(cfg.workload, alpha1=before, phase_alpha1=after, phase_at=0.5)
    if ramp is not None:                # (rate, rate_end): a load ramp (Synthetic.rate_end)
        cfg.workload = replace(cfg.workload, rate=ramp[0], rate_end=ramp[1])
    return cfg


def mean_latency(policy, knobs, seed, **kw) -> float:
    s, world = run(config(policy, knobs, seed, **kw))
    return float(np.mean([r.latency for r in world.records]))


def speedups(configs, seeds, **kw) -> dict:
    """lr plan's speedup: mean over paired seeds of AR's mean latency / the configuration's."""
    ar = [mean_latency("ar", {}, s, **kw) for s in seeds]
    return {label: float(np.mean([a / mean_latency(p, k, s, **kw) for a, s in zip(ar, seeds)]))
            for label, (p, k) in configs.items()}


def label(policy, knobs):
    return policy + "".join(f" {k}={v}" for k, v in knobs.items())


STATIC_CONFIGS = {label(p, k): (p, k) for p, k in STATIC}

# (d) on a load ramp: Poisson arrivals from RAMP[0] to RAMP[1] requests/s over the requests, so
# the load rises from one request in flight past the static optimum's break-even
RAMP, RAMP_REQUESTS, RAMP_STEPS = (0.05, 6.0), 120, 20

CASES = {   # golden summaries: simulate() (the policy and AR), seed 11
    "adaptive-preset": (ADAPTIVE["lr+sd-adaptive"], dict(requests=1)),
    "adaptive-phase": (ADAPTIVE["lr-adaptive"], dict(requests=1, steps=120, phase=True)),
    "adaptive-load": (ADAPTIVE["lr-adaptive"], dict(requests=16, steps=20)),
    # one Estimator for the run, its price checked against the commits (the real backend's)
    "adaptive-load-run": (ADAPTIVE["lr+sd-adaptive"], dict(requests=16, steps=20, scope="run")),
    "adaptive-ramp": (ADAPTIVE["lr+sd-adaptive"], dict(requests=RAMP_REQUESTS, steps=RAMP_STEPS,
                                                       ramp=RAMP)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_summary(name):
    (policy, knobs), kw = CASES[name]
    got = _round(simulate(config(policy, knobs, 11, **kw)))
    path = GOLDEN / f"{name}.json"
    if os.environ.get("LRSIM_UPDATE_GOLDEN"):
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    assert same(got, json.loads(path.read_text()))
    assert got["adaptive"]["decisions"] >= got["steps"] - got["steps_from_draft"]


@pytest.mark.parametrize("preset", [PRESET, "r1-humaneval"])
def test_a_preset_reaches_97_percent_of_the_best_static(preset):
    # below 97% before the plateau rule, depth pooling, dwell and k2 3/5 on offer; r1-humaneval
    # (a short R1 preset, 67 steps) until the depth pool outweighed a depth's memory: its
    # noisy deeper acceptance took the tree to depth 2. Two presets on 16 seeds (bench_adaptive's
    # most): r1-humaneval sits near the threshold here, and seed noise moves it by about 1% (after
    # the Estimator's one cost unit: 0.969 on 8 seeds, 0.968 on 9, 0.981 on 16; before it 0.977 on
    # 8, 0.980 on 16). benchmarks/results/adaptive.md has all 14 and their measured ratios
    seeds = range(16)
    static = speedups(STATIC_CONFIGS, seeds, preset=preset)
    mine = speedups(ADAPTIVE, seeds, preset=preset)
    best = max(static.values())
    assert mine["lr+sd-adaptive"] >= 0.97 * best, (mine, max(static, key=static.get), best)
    best_lr = max(v for k, v in static.items() if k.startswith("lr-async") and "k2" not in k)
    assert mine["lr-adaptive"] >= 0.97 * best_lr, (mine, best_lr)


@pytest.mark.xfail(strict=True, reason="target not met (docs/adaptive.md): lr+sd-adaptive stays "
                   "below the best static lr+sd (benchmarks/results/adaptive.md, (b)). On the "
                   "paper's hardware the asynchronous tree is cheap, so static "
                   "depth 4 is near the best in both phases (0.7 and 0.3): an oracle told where "
                   "the phase changes gains at most 0.1% by one switch there (results (b))"
                   "; and the target's batch slope, fitted from the run, comes "
                   "out low, so k2 = 9 looks nearly as cheap as 3 or 5")
def test_b_phase_change_beats_every_static():
    seeds, kw = range(3), dict(steps=160, phase=True)
    static = speedups(STATIC_CONFIGS, seeds, **kw)
    mine = speedups(ADAPTIVE, seeds, **kw)
    best = max(static, key=static.get)
    assert mine["lr+sd-adaptive"] > static[best], (mine, best, static[best])
    no_sd = max(v for k, v in static.items() if "k2" not in k)
    assert mine["lr-adaptive"] > no_sd, (mine, no_sd)


def test_b_under_load_a_deeper_drop_beats_every_static():
    # benchmarks/results/adaptive.md, "(b) under load": with 16 requests at t = 0 speculation is no
    # longer nearly free, so the best static shape moves with the acceptance; for 0.7 then 0.1,
    # lr+sd-adaptive beats every static configuration and lr-adaptive every one without SD (a
    # smaller instance: 120 steps, 2 seeds; measured 1.460 against lr+sd depth 1, k2 3's 1.421)
    seeds, kw = range(2), dict(steps=120, requests=16, phase=(0.7, 0.1))
    static = speedups(STATIC_CONFIGS, seeds, **kw)
    mine = speedups(ADAPTIVE, seeds, **kw)
    best = max(static, key=static.get)
    assert mine["lr+sd-adaptive"] > 1.01 * static[best], (mine, best, static[best])
    no_sd = max(v for k, v in static.items() if "k2" not in k)
    assert mine["lr-adaptive"] > no_sd, (mine, no_sd)


def test_b_under_load_the_committed_rows():
    # what docs/adaptive.md and the README say of benchmarks/results/adaptive.json's (b) under
    # load: lr+sd-adaptive beats every static at 3 of 4 (preset, phase) pairs (r1-gsm8k 0.7 then
    # 0.1: +3.2%; qwen3-aime24 0.7 then 0.3: +0.7%, then 0.1: +5.5%), not r1-gsm8k 0.7 then 0.3
    # (-0.4%); lr-adaptive beats every static without SD at 3 of 4 (not qwen3-aime24 0.7 then 0.1)
    r = json.loads((Path(__file__).resolve().parents[2] / "benchmarks" / "results"
                    / "adaptive.json").read_text())
    rows = {(row["preset"], row["phase_alpha1"]): row for row in r["phase_load"]}
    assert set(rows) == {(p, a) for p in ("r1-gsm8k", "qwen3-aime24") for a in (0.3, 0.1)}
    assert all(row["requests"] == 16 and row["alpha1"] == 0.7 for row in rows.values())
    gain = {k: row["lr+sd-adaptive"] / row["best_static"]["speedup"] - 1 for k, row in rows.items()}
    assert {k: f"{g:+.1%}" for k, g in gain.items()} == {
        ("r1-gsm8k", 0.3): "-0.4%", ("r1-gsm8k", 0.1): "+3.2%",
        ("qwen3-aime24", 0.3): "+0.7%", ("qwen3-aime24", 0.1): "+5.5%"}
    assert {k for k, row in rows.items() if row["beats_every_static"]} == {
        ("r1-gsm8k", 0.1), ("qwen3-aime24", 0.3), ("qwen3-aime24", 0.1)}
    assert {k for k, row in rows.items() if not row["lr_adaptive_beats_every_static_without_sd"]} == {
        ("qwen3-aime24", 0.1)}


def test_b_the_phase_oracle_is_the_static_run_until_it_switches():
    # benchmarks/bench_adaptive.py's PhaseOracle: lr-async switching its shape once, at the first
    # root past the change. Switched to the shape it already runs it is the static run, latency
    # for latency (its SD stream goes on); switched to another shape it commits the first phase's
    # steps as the static run does (draft or target, step by step) and the second phase otherwise
    from benchmarks import bench_adaptive as bench
    from lrsim.sim.policies import POLICIES
    from lrsim.sim.policies.lr_async import run as lr_async_run

    def record(after=None):
        cfg = config("lr-async", {"depth": 4, "k2": 9}, 0, steps=120, phase=True)
        if after is None:
            return run(cfg)[1].records[0]
        with bench.oracle_policy(after):
            return run(cfg)[1].records[0]
    static, same, other = record(), record((4, 9)), record((1, 1))
    assert POLICIES["lr-async"] is lr_async_run       # the stand-in is undone
    assert same.latency == static.latency and same.steps == static.steps
    change = 60                                       # phase_at 0.5 of 120 steps
    # the first phase's trees are the static run's; the first root past the change is the first
    # at depth 1 without SD, and the second phase then runs slower at acceptance 0.3
    assert other.steps[:change] == static.steps[:change]
    assert other.steps != static.steps and other.latency > static.latency


def test_d_the_load_oracle_runs_the_shape_of_the_nearest_tabulated_load():
    # benchmarks/bench_adaptive.py's LoadOracle: lr-adaptive told, at every root, the shape of
    # the tabulated load nearest (in log) to the requests in flight. With 12 requests at t = 0
    # the nearest of 1 and 16 is 16 (log 12 is nearer log 16 than log 1) until requests finish;
    # with 3, it is 4 (nearer than 2). Every decision is the oracle's, none the Controller's,
    # and a table of one shape is that static shape, step for step
    from benchmarks import bench_adaptive as bench
    from lrsim.sim.policies import POLICIES
    from lrsim.sim.policies.lr_adaptive import run as lr_adaptive_run

    table = [(1, 1, 1), (4, 2, 3), (16, 3, 5)]

    def summary(requests, table=table):
        cfg = config("lr-adaptive", {"depth": 4, "k2": 9}, 0, requests=requests, steps=20)
        with bench.load_oracle_policy(table):
            return simulate(cfg)
    s12, s3 = summary(12), summary(3)
    assert POLICIES["lr-adaptive"] is lr_adaptive_run     # the stand-in is undone
    log = s12["adaptive"]["log"]
    first = log[:s12["adaptive"]["log_half"]]          # the first changes: the requests' first picks
    assert len({d["request"] for d in first}) == len(first) and {(d["depth"], d["k2"]) for d in first} == {(3, 5)}
    assert s12["adaptive"]["by_depth"].get("3", 0) > s12["adaptive"]["decisions"] / 2
    assert set(s3["adaptive"]["by_k2"]) <= {"1", "3"} and s3["adaptive"]["by_k2"]["3"] > 0
    assert all(d["reason"] == "load oracle" for d in s12["adaptive"]["log"] + s3["adaptive"]["log"])
    static = simulate(config("lr-async", {"depth": 2, "k2": 3}, 0, requests=3, steps=20))
    one = summary(3, [(1, 2, 3)])
    assert one["tokens_per_s"] == static["tokens_per_s"] and one["steps"] == static["steps"]


def test_b_the_committed_one_switch_oracle():
    # a check that docs/adaptive.md and the README say what benchmarks/results/adaptive.json
    # holds (the figures, not the code: the test above runs the oracle): its best genuine switch
    # runs -0.3% (r1-gsm8k) and +0.1% (qwen3-aime24) against the best static, its best pair never
    # below the best static (a pair keeps it), and the adaptive policies below the best pair
    results = json.loads((Path(__file__).resolve().parents[2] / "benchmarks" / "results"
                          / "adaptive.json").read_text())
    rows = {r["preset"]: r for r in results["phase"]}
    assert set(rows) == {"r1-gsm8k", "qwen3-aime24"}
    switch = {p: r["oracle"]["best_switch"]["speedup"] / r["best_static"]["speedup"] - 1
              for p, r in rows.items()}
    assert f"{switch['r1-gsm8k']:+.1%}" == "-0.3%" and f"{switch['qwen3-aime24']:+.1%}" == "+0.1%"
    for r in rows.values():
        assert r["oracle"]["speedup"] >= r["best_static"]["speedup"] * (1 - 1e-12)
        assert r["lr+sd-adaptive"] < r["oracle"]["speedup"]


def test_the_committed_figures_the_readme_and_docs_quote():
    # what README.md and docs/adaptive.md say of benchmarks/results/adaptive.json: (a) 0.977-0.998
    # on 14 of 14 presets, lr-adaptive 1.000-1.001 of the best static lr; (c) lowest 1.278x AR (32
    # requests), lr+sd-adaptive at 1 request 2.014x
    # above the best static 1.952x; (d) 64 / 128 requests and the ramp below SD alone (k2 3)
    r = json.loads((Path(__file__).resolve().parents[2] / "benchmarks" / "results"
                    / "adaptive.json").read_text())
    ratios = [p["ratio"] for p in r["presets"]]
    assert len(ratios) == 14 and all(p["met"] for p in r["presets"])
    assert f"{min(ratios):.3f}-{max(ratios):.3f}" == "0.977-0.998"
    lr = [p["ratio_lr"] for p in r["presets"]]
    assert f"{min(lr):.3f}-{max(lr):.3f}" == "1.000-1.001"
    lows = {row["concurrency"]: min(row["lr-adaptive"], row["lr+sd-adaptive"]) for row in r["load"]}
    assert min(lows, key=lows.get) == 32 and f"{lows[32]:.3f}" == "1.278"
    one = r["load"][0]
    assert f"{one['lr+sd-adaptive']:.3f}" == "2.014" and f"{one['best_static']['vs_ar']:.3f}" == "1.952"
    past = {row["concurrency"]: row for row in r["past_break_even"]}
    assert [f"{past[c][k]:.3f}" for c in (64, 128) for k in ("lr-adaptive", "lr+sd-adaptive")] == [
        "1.088", "1.092", "1.012", "1.022"]
    assert all(past[c]["best_static"]["label"] == "sd k2=3" and not past[c]["beats_every_static"]
               for c in (64, 128))
    ramp = r["ramp"]
    assert (ramp["requests"], ramp["rate"], ramp["rate_end"]) == (200, 0.05, 6.0)
    assert [f"{ramp[k]:.3f}" for k in ("lr-adaptive", "lr+sd-adaptive")] == ["1.144", "1.149"]
    assert ramp["best_static"]["label"] == "sd k2=3" and f"{ramp['best_static']['speedup']:.3f}" == "1.210"
    assert ramp["peak_in_flight"]["ar"] == 129 and not ramp["beats_every_static"]
    # the load oracle: (c) and (d)'s best static shape at each load, 1.289 (+6.5%): reachable
    lo = ramp["load_oracle"]
    from benchmarks.bench_adaptive import shape_of
    assert lo["table"] == [[row["concurrency"], *shape_of(row["best_static"]["label"])]
                           for row in r["load"] + r["past_break_even"]]
    assert f"{lo['speedup']:.3f}" == "1.289" and lo["speedup"] > ramp["best_static"]["speedup"]
    assert f"{lo['speedup'] / ramp['best_static']['speedup'] - 1:+.1%}" == "+6.5%"


@pytest.mark.xfail(strict=True, reason="target not met (docs/adaptive.md, benchmarks/results/"
                   "adaptive.md (d)): past the static optimum's break-even (64 and 128 requests) "
                   "SD alone (k2 3) is the best static; at 128 lr+sd-adaptive starts from AR (the "
                   "batch reach) and runs near it (1.022x): with one line in positions an SD "
                   "position is priced as one more sequence, dearer than it is")
def test_d_past_the_break_even_beats_every_static():
    kw = dict(requests=128, steps=20)
    static = {label(p, k): simulate(config(p, k, 3, **kw))["throughput_speedup"]
              for p, k in STATIC if p != "ar"}
    static["ar"] = 1.0
    mine = {name: simulate(config(p, k, 3, **kw))["throughput_speedup"]
            for name, (p, k) in ADAPTIVE.items()}
    best = max(static, key=static.get)
    assert max(mine.values()) > static[best], (mine, best, static[best])


@pytest.mark.xfail(strict=True, reason="target not met (docs/adaptive.md, benchmarks/results/"
                   "adaptive.md (d)): on the ramp SD alone (k2 3) is the best static; at the ramp's "
                   "high load the closed forms price speculation above what it earns and an SD "
                   "position as one more sequence, so lr+sd-adaptive runs below SD alone, where a "
                   "load oracle told each load's best static shape beats it (1.289 vs 1.210)")
def test_d_on_a_load_ramp_beats_every_static():
    kw = dict(requests=RAMP_REQUESTS, steps=RAMP_STEPS, ramp=RAMP)
    static = speedups(STATIC_CONFIGS, range(1), **kw)
    mine = speedups(ADAPTIVE, range(1), **kw)
    best = max(static, key=static.get)
    assert max(mine.values()) > static[best], (mine, best, static[best])


@pytest.mark.parametrize("concurrency", [1, 4, 16, 32])
def test_c_never_below_ar_under_load(concurrency):
    for name, (policy, knobs) in ADAPTIVE.items():
        s = simulate(config(policy, knobs, 3, requests=concurrency, steps=20))
        assert s["throughput_speedup"] >= 0.97, (name, concurrency, s["throughput_speedup"])

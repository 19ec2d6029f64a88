"""lr-adaptive's Estimator per request (the simulator's default) against one for the run, as the
real backend keeps it (Config.adaptive_scope "run": acceptance shared, the price checked against
the commits), past the static optimum's break-even: docs/adaptive.md's target (d).

    .venv/bin/python benchmarks/adaptive_scope.py            # ~3 CPU-minutes

On r1-gsm8k (bench_adaptive.py's load preset and steps): bench_adaptive.py's load ramp (200
requests, Poisson arrivals from 0.05 to 6 requests/s) on RAMP_SEEDS seeds, the smaller ramp of
tests/sim/test_adaptive_golden.py (120 requests of 20 steps) on SMALL_SEEDS, and 64 and 128
requests at t = 0 on bench_adaptive.py's seeds; lr plan's latency speedup on the ramps (mean over
paired seeds of AR's mean latency / the configuration's), tokens/s over AR's at fixed loads.
Each adaptive policy in both scopes beside the best static configuration of bench_adaptive.py's
grid. Writes benchmarks/results/adaptive_scope.{json,md}.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import bench_adaptive as B  # noqa: E402
from benchmarks.write import write_results  # noqa: E402
from lrsim.plan import presets  # noqa: E402
from lrsim.sim.runner import run  # noqa: E402

RAMP_SEEDS = 8              # the big ramp: its speedups move by a few percent from seed to seed
SMALL = dict(requests=120, steps=20, rate=0.05, rate_end=6.0)   # test_adaptive_golden's ramp
SMALL_SEEDS = 4
SCOPES = ("request", "run")
ADAPTIVE = {"lr-adaptive": ("lr-adaptive", {"depth": 4}),
            "lr+sd-adaptive": ("lr-adaptive", {"depth": 4, "k2": B.SD_K2})}


def one(policy, knobs, seed, requests, steps, ramp=None, scope=None):
    cfg = presets.get(B.LOAD_PRESET).to_config(policy, requests=requests, steps=steps, seed=seed, **knobs)
    if ramp is not None:
        cfg.workload = replace(cfg.workload, rate=ramp[0], rate_end=ramp[1])
    if scope is not None:
        cfg.adaptive_scope = scope
    s, world = run(cfg)
    return float(np.mean([r.latency for r in world.records])), s["tokens_per_s"]


def compare(value) -> dict:
    """The best static configuration of bench_adaptive.py's grid (AR: 1) and each adaptive
    policy in both scopes, by `value(policy, knobs, scope)`, a speedup over AR."""
    static = {B.label(p, k): value(p, k, None) for p, k in B.STATIC if p != "ar"}
    static["ar"] = 1.0
    best = max(static, key=static.get)
    mine = {f"{n} {sc}": value(p, k, sc) for n, (p, k) in ADAPTIVE.items() for sc in SCOPES}
    return {"best_static": {"label": best, "speedup": static[best]}, "adaptive": mine}


def ramp_case(requests, steps, rates, seeds) -> dict:
    ar = [one("ar", {}, s, requests, steps, rates)[0] for s in seeds]

    def speed(policy, knobs, scope):
        return float(np.mean([a / one(policy, knobs, s, requests, steps, rates, scope)[0]
                              for a, s in zip(ar, seeds)]))
    return {"requests": requests, "steps": steps, "rate": rates[0], "rate_end": rates[1],
            "seeds": len(seeds), **compare(speed)}


def fixed_case(requests, seeds) -> dict:
    ar = float(np.mean([one("ar", {}, s, requests, B.LOAD_STEPS)[1] for s in seeds]))

    def ratio(policy, knobs, scope):
        return float(np.mean([one(policy, knobs, s, requests, B.LOAD_STEPS, None, scope)[1]
                              for s in seeds])) / ar
    return {"requests": requests, "steps": B.LOAD_STEPS, "seeds": len(seeds), **compare(ratio)}


def render(d: dict) -> str:
    cols = [f"{n} {sc}" for n in ADAPTIVE for sc in SCOPES]
    out = ["lr-adaptive past the static optimum's break-even on r1-gsm8k, its Estimator per request "
           "(the simulator's default) and one for the run (Config.adaptive_scope \"run\", as the real "
           "backend's: acceptance shared, the price checked against the commits), beside the best "
           "static configuration of bench_adaptive.py's grid (benchmarks/adaptive_scope.py; "
           f"{d['elapsed_s']:.0f} s). Ramps: lr plan's latency speedup; fixed loads: tokens/s over AR's.",
           "", "| case | seeds | best static | speedup | " + " | ".join(cols) + " |",
           "|---|---|---|---|" + "---|" * len(cols)]
    for name, c in d["cases"].items():
        out.append(f"| {name} | {c['seeds']} | {c['best_static']['label']} | "
                   f"{c['best_static']['speedup']:.3f} | "
                   + " | ".join(f"{c['adaptive'][k]:.3f}" for k in cols) + " |")
    out += ["", "Beats the best static: " + "; ".join(
        f"{name}: {', '.join(k for k in cols if c['adaptive'][k] > c['best_static']['speedup']) or 'none'}"
        for name, c in d["cases"].items()) + "."]
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "adaptive_scope.json"))
    a = ap.parse_args()
    t0 = time.perf_counter()
    big = (B.RAMP["rate"], B.RAMP["rate_end"])
    cases = {
        f"ramp, {B.RAMP['requests']} requests": ramp_case(B.RAMP["requests"], B.LOAD_STEPS, big,
                                                         range(RAMP_SEEDS)),
        f"ramp, {SMALL['requests']} requests of {SMALL['steps']} steps": ramp_case(
            SMALL["requests"], SMALL["steps"], (SMALL["rate"], SMALL["rate_end"]), range(SMALL_SEEDS)),
    }
    for c in B.PAST_LOADS:
        cases[f"{c} requests at t = 0"] = fixed_case(c, range(B.LOAD_SEEDS))
    d = {"preset": B.LOAD_PRESET, "cases": cases, "elapsed_s": time.perf_counter() - t0}
    write_results(a.out, d, render)
    print(render(d))


if __name__ == "__main__":
    main()

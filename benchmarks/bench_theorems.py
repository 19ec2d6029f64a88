"""Brute-force check of the paper's optimal-split theorems against the exact optimiser.

    .venv/bin/python benchmarks/bench_theorems.py [--jobs N] [--json]
        -> benchmarks/results/theorems.{json,md}

App. B Theorem 3 (sync, conditions (7)/(8)) and Theorem 4 (async) predict whether the best split
of a budget M is hybrid (k1 >= 2 and k2 >= 2) or pure; `lrsim.theory.theorems.check_theorem`
compares each prediction with `lrsim.theory.optimize` (exact, every split). Points:

  sync grid     alpha1, alpha2 in 0.05..0.95 (step 0.05), c1, c2 in SYNC_CS, M in SYNC_BUDGETS
  async grid    alpha1, alpha2 in 0.53..0.79 (step 0.02), c1 in ASYNC_C1S (< 1/3),
                c2 in ASYNC_C2S (< 1/5), M in ASYNC_BUDGETS (even, >= 16): inside Theorem 4
  random        RANDOM_POINTS per mode, seeded: async uniform inside Theorem 4's ranges; sync
                alphas uniform in (0, 1), c uniform in [0, 0.5], M even in 4..64

A counterexample is a point where a theorem applies and the optimiser disagrees. The README's
theorem figures are this file's output (tests/theory/test_theorems.py keeps a smaller grid).
"""
from __future__ import annotations

import argparse
import collections
import itertools
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lrsim.theory import HybridParams, optimize  # noqa: E402
from lrsim.theory.theorems import check_theorem  # noqa: E402

SEED = 0
RANDOM_POINTS = 30_000
SYNC_ALPHAS = np.round(np.arange(0.05, 0.951, 0.05), 2)
SYNC_CS = (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.33, 0.5)
SYNC_BUDGETS = (4, 6, 8, 12, 16, 32, 64)
ASYNC_ALPHAS = np.round(np.arange(0.53, 0.791, 0.02), 2)
ASYNC_C1S = (0.0, 0.05, 0.1, 0.2, 0.3, 0.33)
ASYNC_C2S = (0.0, 0.05, 0.1, 0.15, 0.19)
ASYNC_BUDGETS = (16, 18, 24, 32, 64, 128)


def points(family: str) -> list[tuple]:
    """(mode, a1, c1, a2, c2, M) of one family."""
    if family == "sync grid":
        return [("sync", a1, c1, a2, c2, m) for a1, a2, c1, c2, m in
                itertools.product(SYNC_ALPHAS, SYNC_ALPHAS, SYNC_CS, SYNC_CS, SYNC_BUDGETS)]
    if family == "async grid":
        return [("async", a1, c1, a2, c2, m) for a1, a2, c1, c2, m in
                itertools.product(ASYNC_ALPHAS, ASYNC_ALPHAS, ASYNC_C1S, ASYNC_C2S, ASYNC_BUDGETS)]
    rng = np.random.default_rng(SEED)
    n = RANDOM_POINTS
    if family == "async random":
        a = rng.uniform(0.52, 0.8, (n, 2))
        c1, c2 = rng.uniform(0, 1 / 3, n), rng.uniform(0, 1 / 5, n)
        ms = 2 * rng.integers(8, 65, n)                         # even, 16..128
        return [("async", a[i, 0], c1[i], a[i, 1], c2[i], int(ms[i])) for i in range(n)]
    a = rng.uniform(0, 1, (n, 2))
    c = rng.uniform(0, 0.5, (n, 2))
    ms = 2 * rng.integers(2, 33, n)                             # even, 4..64
    return [("sync", a[i, 0], c[i, 0], a[i, 1], c[i, 1], int(ms[i])) for i in range(n)]


FAMILIES = ("sync grid", "async grid", "sync random", "async random")


def check(chunk: list[tuple]) -> dict:
    out = collections.Counter()
    bad = []
    for mode, a1, c1, a2, c2, m in chunk:
        opt = optimize(HybridParams(float(a1), float(c1), float(a2), float(c2), mode), m)
        th = check_theorem(opt)
        out[f"applies:{th.prediction}" if th.applies else "does not apply"] += 1
        if th.agrees is False:
            bad.append({"mode": mode, "alpha1": a1, "c1": c1, "alpha2": a2, "c2": c2, "M": m,
                        "prediction": th.prediction, "best": list(opt.best)})
    return {"counts": dict(out), "counterexamples": bad}


def run_family(family: str, jobs: int) -> dict:
    pts = points(family)
    size = max(1, len(pts) // (8 * jobs))
    chunks = [pts[i:i + size] for i in range(0, len(pts), size)]
    counts, bad = collections.Counter(), []
    with ProcessPoolExecutor(jobs) as ex:
        for r in ex.map(check, chunks):
            counts.update(r["counts"])
            bad += r["counterexamples"]
    return {"points": len(pts), "counts": dict(sorted(counts.items())), "counterexamples": bad[:20],
            "n_counterexamples": len(bad)}


def render(out: dict) -> str:
    lines = ["| family | points | theorem applies | predicts hybrid | pure SD | pure LR | counterexamples |",
             "|---|---|---|---|---|---|---|"]
    for fam, r in out["families"].items():
        c = r["counts"]
        applies = sum(v for k, v in c.items() if k.startswith("applies"))
        lines.append(f"| {fam} | {r['points']:,} | {applies:,} | {c.get('applies:hybrid', 0):,} | "
                     f"{c.get('applies:pure_sd', 0):,} | {c.get('applies:pure_lr', 0):,} | "
                     f"{r['n_counterexamples']} |")
    total = sum(r["points"] for r in out["families"].values())
    bad = sum(r["n_counterexamples"] for r in out["families"].values())
    lines += ["", f"{total:,} points, {bad} counterexample(s); {out['elapsed_s']:.0f} s wall on "
              f"{out['jobs']} processes (`benchmarks/bench_theorems.py`)"]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "theorems.json"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    t0 = time.perf_counter()
    fams = {f: run_family(f, a.jobs) for f in FAMILIES}
    out = {"families": fams, "jobs": a.jobs, "seed": SEED, "elapsed_s": time.perf_counter() - t0}
    Path(a.out).write_text(json.dumps(out, indent=1, default=float) + "\n")
    md = render(out)
    Path(a.out).with_suffix(".md").write_text(md)
    print(json.dumps(out, indent=1, default=float) if a.json else md)


if __name__ == "__main__":
    main()
